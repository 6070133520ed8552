/**
 * The execution commands (Dry Run, Smoke, Run Workbench, Cancel Run) through the controller, with a fake
 * client standing in for wb-lsp and the stub for VS Code: what is asked, what is sent, what is shown, and the
 * cancellation path.
 */
import './register';
import { strict as assert } from 'node:assert';
import { beforeEach, test } from 'node:test';
import type * as vscode from 'vscode';
import { WorkbenchController, type RequestOptions } from '../src/controller';
import { BUTTON_OUTPUT } from '../src/constants';
import { BUTTON_CANCEL_RUN } from '../src/executionCommands';
import type { RunEvent } from '../src/run';
import { FakeClient, type Answer, type Behaviour } from './fake-client';
import { stub, Uri, type StubOutputChannel } from './vscode-stub';

const REPO = '/work/repo';
const MANIFEST = `${REPO}/.workbenches/demo/workbench.yml`;
const URI = 'file:///work/repo/.workbenches/demo/workbench.yml';
const RUN_ID = 'wb_00112233445566778899aabb';

let clients: FakeClient[];
let behaviour: Behaviour;
let controller: WorkbenchController;

function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function activate(): Promise<FakeClient> {
  await controller.activate({ subscriptions: [] } as unknown as vscode.ExtensionContext);
  const client = clients[0];
  assert.ok(client, 'the server started');
  return client;
}

function runChannel(): StubOutputChannel {
  const channel = stub.outputs.find((output) => output.name === 'Workbench Run');
  assert.ok(channel, 'a Workbench Run output channel exists');
  return channel;
}

function runStatusItem() {
  const item = stub.statusItems.find((candidate) => candidate.name === 'Workbench Run');
  assert.ok(item, 'a run status bar item exists');
  return item;
}

const STARTED = `▶ Run ${RUN_ID} started: demo 0.1.0 on local (opencode)`;
let sequence = 0;
/** Sends an event with the lines the server renders for it (`text`, which the extension shows as it is). */
function emit(client: FakeClient, type: string, data: Record<string, unknown> = {}, text: string[] = []): void {
  sequence += 1;
  const event: RunEvent = {
    protocol: 0,
    run_id: RUN_ID,
    sequence,
    timestamp: '2026-11-30T07:12:20.671Z',
    type,
    runner: 'opencode',
    data,
  };
  client.runEvents.fire({ event, text });
}

/** A run that streams a few events and completes, like the server with a fake `opencode`. */
const completingRun: Answer = async (_args, options, client) => {
  await settle();
  const token = options?.workDoneToken ?? '';
  client.reportProgress(token, { kind: 'begin', title: 'Workbench run', message: 'starting' });
  emit(client, 'run.started', { workbench: 'demo', version: '0.1.0', runtime: 'local' }, [STARTED]);
  emit(client, 'run.ready', {}, ['  the runner is ready']);
  client.reportProgress(token, { kind: 'report', message: 'tool bash' });
  emit(client, 'tool.started', { id: 'c1', name: 'bash', title: 'ls' }, ['⚙ bash (ls) started']);
  emit(client, 'tool.completed', { id: 'c1', name: 'bash', title: 'ls', status: 'completed' }, [
    '✓ bash (ls) completed',
  ]);
  emit(client, 'file.changed', { path: 'notes.md', tool: 'write' }, ['✎ notes.md changed (write)']);
  emit(client, 'output.text', { id: 't', text: 'done' }, ['done']);
  emit(client, 'usage.updated', { kind: 'delta', input_tokens: 3, output_tokens: 1 }, [
    '  usage: 3 input, 1 output tokens',
  ]);
  emit(client, 'run.completed', { duration_ms: 12 }, ['■ Run completed in 12 ms']);
  client.reportProgress(token, { kind: 'end', message: 'completed' });
  return { runId: RUN_ID, ending: { status: 'completed' }, finalText: 'done' };
};

/** A run that goes on until its request is cancelled; `respond` says how the server answers the cancellation. */
function cancellableRun(respond: 'result' | 'error'): Answer {
  return (_args, options, client) =>
    new Promise((resolve, reject) => {
      emit(client, 'run.started', { workbench: 'demo', version: '0.1.0', runtime: 'local' }, [STARTED]);
      emit(client, 'run.ready', {}, ['  the runner is ready']);
      const token = options?.token;
      assert.ok(token, 'the run request carries a cancellation token');
      token.onCancellationRequested(() => {
        if (respond === 'error') {
          // The server answers `$/cancelRequest` with RequestCancelled; the run's last event follows.
          reject(Object.assign(new Error('request cancelled'), { code: -32800 }));
          setImmediate(() => emit(client, 'run.cancelled', { duration_ms: 40 }, ['■ Run cancelled in 40 ms']));
        } else {
          emit(client, 'run.cancelled', { duration_ms: 40 }, ['■ Run cancelled in 40 ms']);
          resolve({ runId: RUN_ID, ending: { status: 'cancelled' }, finalText: '' });
        }
      });
    });
}

beforeEach(() => {
  stub.reset();
  clients = [];
  sequence = 0;
  behaviour = { answers: {} };
  stub.workspaceFolders = [REPO];
  stub.files = [MANIFEST];
  stub.configuration = { 'wb-lsp.server.path': '' };
  stub.texts.set(MANIFEST, 'spec: 1\nname: demo\nruntimes:\n  local: {}\n');
  controller = new WorkbenchController(
    (setup) => {
      const client = new FakeClient(setup, behaviour);
      clients.push(client);
      return client;
    },
    { platform: 'linux', env: { PATH: '/usr/bin' }, homedir: '/home/me', isExecutable: (f) => f === '/usr/bin/wb-lsp' },
  );
});

test('Dry Run from a code lens asks for the task and shows the translation as JSON', async () => {
  const translation = { workbench: 'demo', runner: 'opencode', command: ['opencode', 'run', 'say done'] };
  behaviour.answers['workbench.dryRun'] = translation;
  const client = await activate();
  stub.inputs = ['say done'];
  await stub.commands.get('wb-lsp.dryRun')?.({ uri: URI });
  assert.equal(stub.inputBoxes.length, 1);
  assert.equal(stub.inputBoxes[0]?.title, 'Workbench: Dry Run');
  assert.equal(stub.quickPicks.length, 0, 'one runtime: none asked for');
  assert.deepEqual(client.sent, [{ command: 'workbench.dryRun', args: [{ uri: URI, task: 'say done' }] }]);
  assert.deepEqual(stub.untitled, [{ language: 'json', content: `${JSON.stringify(translation, null, 2)}\n` }]);
  assert.equal(stub.shown.length, 1);
  assert.deepEqual(stub.shown[0]?.options, { preview: false });
  assert.deepEqual(stub.messages, []);
});

test('Dry Run validates the task, remembers it, and asks for the runtime when there are several', async () => {
  behaviour.answers['workbench.dryRun'] = {};
  const client = await activate();
  stub.texts.set(MANIFEST, 'spec: 1\nruntimes:\n  local: {}\n  docker:\n    image: node:22\n');
  stub.activeDocument = stub.document(MANIFEST);
  stub.inputs = ['fix the bug'];
  stub.picks = ['docker'];
  await stub.commands.get('wb-lsp.dryRun')?.();
  const validate = stub.inputBoxes[0]?.validateInput as (value: string) => string | undefined;
  assert.equal(validate('  '), 'The task cannot be empty.');
  assert.equal(validate('x'), undefined);
  assert.deepEqual(stub.quickPicks[0]?.items, ['local', 'docker']);
  assert.deepEqual(client.sent.at(-1), {
    command: 'workbench.dryRun',
    args: [{ uri: URI, task: 'fix the bug', runtime: 'docker' }],
  });

  // Dismissing the runtime (or the task) sends nothing; the last task is offered again.
  stub.inputs = ['again'];
  stub.picks = [undefined];
  await stub.commands.get('wb-lsp.dryRun')?.();
  assert.equal(stub.inputBoxes[1]?.value, 'fix the bug');
  stub.inputs = [undefined];
  await stub.commands.get('wb-lsp.dryRun')?.();
  assert.equal(client.sent.length, 1);
});

test("a failing dry run shows the server's reason", async () => {
  behaviour.answers['workbench.dryRun'] = new Error('Runner executable not found: opencode');
  await activate();
  stub.inputs = ['x'];
  await stub.commands.get('wb-lsp.dryRun')?.(Uri.file(MANIFEST));
  assert.deepEqual(stub.messages.at(-1), {
    level: 'error',
    message: 'Workbench: dry run failed: Runner executable not found: opencode',
    items: [],
  });
});

test('the execution commands need a manifest', async () => {
  const client = await activate();
  stub.activeDocument = stub.document(`${REPO}/README.md`, 'markdown');
  await stub.commands.get('wb-lsp.dryRun')?.();
  await stub.commands.get('wb-lsp.smoke')?.();
  await stub.commands.get('wb-lsp.run')?.({ uri: 'file:///work/repo/config.yml' });
  assert.deepEqual(client.sent, []);
  assert.deepEqual(
    stub.messages.map((m) => `${m.level}: ${m.message}`),
    [
      'warning: Workbench: open a manifest (.workbenches/<name>/workbench.yml) to dry-run it.',
      'warning: Workbench: open a manifest (.workbenches/<name>/workbench.yml) to smoke it.',
      'warning: Workbench: open a manifest (.workbenches/<name>/workbench.yml) to run it.',
    ],
  );
});

test('Smoke writes the reports to the run channel and shows the status', async () => {
  const ready = ['demo is ready', 'demo: runner /bin/opencode', 'demo: no required tools', 'demo: auth ready (openai)'];
  behaviour.answers['workbench.smoke'] = [
    {
      status: 'ready',
      workbench: 'demo',
      version: '0.1.0',
      runtime: 'local',
      runner: { name: 'opencode', path: '/bin/opencode' },
      tools: [],
      warnings: [],
      text: ready,
    },
  ];
  const client = await activate();
  stub.answer = BUTTON_OUTPUT;
  await stub.commands.get('wb-lsp.smoke')?.({ uri: URI });
  assert.deepEqual(client.sent, [{ command: 'workbench.smoke', args: [{ uri: URI }] }]);
  assert.equal(stub.inputBoxes.length, 0, 'smoke needs no task');
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message: 'Workbench: demo is ready.',
    items: [BUTTON_OUTPUT],
  });
  assert.deepEqual(runChannel().lines, ready, "the server's text of the report");
  await settle();
  assert.equal(runChannel().shown, 1, 'Show Output opened the run channel');

  behaviour.answers['workbench.smoke'] = [
    { status: 'needs-auth', workbench: 'demo', runtime: 'local', text: ['demo needs a connection', '  auth required'] },
  ];
  await stub.commands.get('wb-lsp.smoke')?.({ uri: URI });
  assert.equal(stub.messages.at(-1)?.level, 'warning');
  assert.equal(stub.messages.at(-1)?.message, 'Workbench: demo needs a connection.');
  behaviour.answers['workbench.smoke'] = new Error('not a Workbench manifest');
  await stub.commands.get('wb-lsp.smoke')?.({ uri: URI });
  assert.deepEqual(stub.messages.at(-1)?.message, 'Workbench: smoke failed: not a Workbench manifest');
  assert.equal(stub.messages.at(-1)?.level, 'error');
});

test('Run streams the events into the run channel under a cancellable notification', async () => {
  behaviour.answers['workbench.run'] = completingRun;
  const client = await activate();
  stub.inputs = ['say done'];
  const visibleDuringRun: boolean[] = [];
  client.runEvents.event(() => visibleDuringRun.push(runStatusItem().visible));
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });

  assert.deepEqual(client.sent, [{ command: 'workbench.run', args: [{ uri: URI, task: 'say done' }] }]);
  const options = client.requestOptions[0] as RequestOptions;
  assert.equal(options.workDoneToken, 'wb-lsp-run-1');
  assert.ok(options.token, 'the request carries a cancellation token');
  assert.deepEqual(stub.progress[0]?.options, {
    location: 15, // Notification
    title: 'Workbench run',
    cancellable: true,
  });
  assert.deepEqual(stub.progress[0]?.reports, [{ message: 'starting' }, { message: 'tool bash' }]);
  assert.deepEqual(runChannel().lines, [
    `── ${MANIFEST}: say done`,
    `▶ Run ${RUN_ID} started: demo 0.1.0 on local (opencode)`,
    '  the runner is ready',
    '⚙ bash (ls) started',
    '✓ bash (ls) completed',
    '✎ notes.md changed (write)',
    'done',
    '  usage: 3 input, 1 output tokens',
    '■ Run completed in 12 ms',
  ]);
  assert.ok(runChannel().shown >= 1, 'the run channel is shown');
  assert.ok(visibleDuringRun.length > 0 && visibleDuringRun.every(Boolean), 'the status bar shows the run');
  assert.equal(runStatusItem().text, '$(sync~spin) Workbench: running');
  assert.equal(runStatusItem().command, 'wb-lsp.showRunOutput');
  assert.equal(runStatusItem().visible, false, 'hidden once the run ended');
  assert.deepEqual(
    stub.executed.filter((call) => call.command === 'setContext'),
    [
      { command: 'setContext', args: ['wb-lsp.running', true] },
      { command: 'setContext', args: ['wb-lsp.running', false] },
    ],
  );
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message: 'Workbench: the run completed.',
    items: [BUTTON_OUTPUT],
  });
  assert.equal(controller.running, false);
  assert.deepEqual(client.cancelledProgress, []);
});

test('cancelling the notification cancels the request and the progress token; the run ends cancelled', async () => {
  behaviour.answers['workbench.run'] = cancellableRun('result');
  const client = await activate();
  stub.inputs = ['take your time'];
  const running = stub.commands.get('wb-lsp.run')?.({ uri: URI }) as Promise<void>;
  await settle();
  assert.equal(controller.running, true);
  assert.equal(runStatusItem().visible, true);
  const token = client.requestOptions[0]?.token;
  assert.ok(token);
  assert.equal(token.isCancellationRequested, false);

  stub.progress[0]?.cancel(); // the notification's Cancel button
  await running;
  assert.equal(token.isCancellationRequested, true, '$/cancelRequest is sent through the request token');
  assert.deepEqual(client.cancelledProgress, ['wb-lsp-run-1'], 'window/workDoneProgress/cancel on the token');
  assert.deepEqual(runChannel().lines.slice(-2), ['  cancelling…', '■ Run cancelled in 40 ms']);
  assert.deepEqual(stub.messages.at(-1), {
    level: 'warning',
    message: 'Workbench: the run was cancelled.',
    items: [BUTTON_OUTPUT],
  });
  assert.equal(controller.running, false);
  assert.equal(runStatusItem().visible, false);
});

test('Cancel Run works too, also when the server answers the cancellation with RequestCancelled', async () => {
  behaviour.answers['workbench.run'] = cancellableRun('error');
  const client = await activate();
  stub.inputs = ['take your time'];
  const running = stub.commands.get('wb-lsp.run')?.({ uri: URI }) as Promise<void>;
  await settle();
  await stub.commands.get('wb-lsp.cancelRun')?.();
  await stub.commands.get('wb-lsp.cancelRun')?.(); // a second click sends nothing more
  await running;
  await settle();
  assert.deepEqual(client.cancelledProgress, ['wb-lsp-run-1']);
  assert.equal(stub.messages.at(-1)?.message, 'Workbench: the run was cancelled.');
  const lines = runChannel().lines;
  assert.ok(!lines.some((line) => line.includes('could not start')), lines.join('\n'));
  assert.equal(lines.at(-1), '■ Run cancelled in 40 ms', 'the run.cancelled event still reaches the channel');

  await stub.commands.get('wb-lsp.cancelRun')?.();
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message: 'Workbench: no run is in progress.',
    items: [],
  });
});

test('a run refused before it starts is reported in the channel and as an error', async () => {
  behaviour.answers['workbench.run'] = new Error('No authenticated route is available for openai/gpt-5.6-terra.');
  await activate();
  stub.inputs = ['x'];
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });
  assert.equal(
    runChannel().lines.at(-1),
    '■ the run could not start: No authenticated route is available for openai/gpt-5.6-terra.',
  );
  assert.deepEqual(stub.messages.at(-1)?.level, 'error');
  assert.equal(controller.running, false);
});

test('a run whose connection is lost after it started says it stopped', async () => {
  const interrupted: Answer = async (_args, _options, client) => {
    emit(client, 'run.started', { workbench: 'demo', version: '0.1.0', runtime: 'local' }, [STARTED]);
    await settle();
    throw new Error('Connection got disposed.');
  };
  behaviour.answers['workbench.run'] = interrupted;
  await activate();
  stub.inputs = ['x'];
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });
  assert.equal(runChannel().lines.at(-1), '■ the run stopped: Connection got disposed.');
  assert.equal(stub.messages.at(-1)?.message, 'Workbench: the run stopped: Connection got disposed.');
});

test('a second run while one is in progress is refused, with a button to cancel the first', async () => {
  behaviour.answers['workbench.run'] = cancellableRun('result');
  const client = await activate();
  stub.inputs = ['first'];
  const running = stub.commands.get('wb-lsp.run')?.({ uri: URI }) as Promise<void>;
  await settle();
  stub.answer = BUTTON_CANCEL_RUN;
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });
  assert.deepEqual(stub.messages[0], {
    level: 'warning',
    message: 'Workbench: a run is already in progress.',
    items: [BUTTON_CANCEL_RUN, BUTTON_OUTPUT],
  });
  await running;
  assert.equal(client.sent.length, 1);
  assert.deepEqual(client.cancelledProgress, ['wb-lsp-run-1']);
});

test('events from the server reach the run channel even outside a command (a run started elsewhere)', async () => {
  const client = await activate();
  emit(client, 'output.text', { text: 'hello' }, ['hello']);
  emit(client, 'runner.event', { native_type: 'step_start' });
  assert.deepEqual(runChannel().lines, ['hello']);
  await controller.dispose();
  assert.equal(runChannel().disposed, true);
  assert.equal(runStatusItem().disposed, true);
});

test('Run Workbench as Session asks the task, runs it as a session and reports its first turn', async () => {
  const sessionRun: Answer = async (args, options, client) => {
    await settle();
    client.reportProgress(options?.workDoneToken ?? '', { kind: 'begin', title: 'Workbench run', message: 'starting' });
    emit(client, 'run.started', { workbench: 'demo', version: '0.1.0', runtime: 'local' }, [STARTED]);
    emit(client, 'turn.started', { turn_index: 1 }, ['▶ Turn 1']);
    emit(client, 'output.text', { text: 'first part', id: 't1' }, ['first part']);
    emit(client, 'turn.completed', { turn_index: 1, status: 'completed', duration_ms: 5 }, ['■ Turn 1 completed']);
    client.reportProgress(options?.workDoneToken ?? '', { kind: 'end', message: 'completed' });
    assert.deepEqual(args, [{ uri: URI, task: 'draft the notes', session: true }]);
    return { runId: RUN_ID, turnIndex: 1, status: 'completed', finalText: 'first part', snapshotId: null };
  };
  behaviour.answers['workbench.run'] = sessionRun;
  const client = await activate();
  stub.inputs = ['draft the notes'];
  await stub.commands.get('wb-lsp.runSession')?.({ uri: URI });
  assert.deepEqual(client.sent, [
    { command: 'workbench.run', args: [{ uri: URI, task: 'draft the notes', session: true }] },
  ]);
  assert.equal(stub.progress[0]?.options.title, 'Workbench session');
  assert.deepEqual(runChannel().lines.slice(0, 2), [`── ${MANIFEST} (session): draft the notes`, STARTED]);
  assert.ok(runChannel().lines.includes('first part'));
  assert.equal(stub.messages.at(-1)?.message, `Workbench: turn 1 of session ${RUN_ID} completed.`);
  assert.equal(controller.running, false);
});
