/**
 * The Workbench Runs view and the cost status bar item through the controller, with a fake client standing in
 * for wb-lsp (`workbench.runs`, `workbench.attach`, `workbench.kill`, `workbench.outcome`) and the stub for
 * VS Code: what the view lists and how, the cost item, Attach (replayed events in the run channel, as a run
 * started here), Kill (confirmed first), Open Outcome, and when the list is read again.
 */
import './register';
import { strict as assert } from 'node:assert';
import { beforeEach, test } from 'node:test';
import type * as vscode from 'vscode';
import { WorkbenchController } from '../src/controller';
import type { RunEvent } from '../src/run';
import {
  formatCost,
  formatElapsed,
  parseRuns,
  presentRunningCost,
  runArgumentId,
  runContextValue,
  runDescription,
  type RunRecord,
} from '../src/runs';
import { BUTTON_KILL, FAST_REFRESH_MS, FIRST_REFRESH_MS, SLOW_REFRESH_MS } from '../src/runsView';
import { FakeClient, type Answer, type Behaviour } from './fake-client';
import { stub, type StubOutputChannel, type StubTreeView } from './vscode-stub';

const REPO = '/work/repo';
const MANIFEST = `${REPO}/.workbenches/demo/workbench.yml`;
const RUNNING_ID = 'wb_00112233445566778899aabb';
const DONE_ID = 'wb_ffeeddccbbaa998877665544';
const UNKNOWN_ID = 'wb_0123456789abcdef01234567';
const OUTCOME_ID = 'wbo_0123456789abcdef0123456789abcdef';
/** The tests' clock: 2026-12-04T10:01:05Z. */
const NOW = Date.parse('2026-12-04T10:01:05.000Z');

const running: RunRecord = {
  run_id: RUNNING_ID,
  workbench: 'demo',
  version: '0.1.0',
  runtime: 'local',
  runner: 'opencode',
  started_at: '2026-12-04T10:00:00.000Z',
  status: 'running',
  cost_usd: 0.25,
  activity: 'writing',
  last_sequence: 4,
  state: 'running',
};
const finished: RunRecord = {
  run_id: DONE_ID,
  workbench: 'review',
  version: '0.2.0',
  runtime: 'docker',
  runner: 'claude-code',
  started_at: '2026-12-04T09:00:00.000Z',
  ended_at: '2026-12-04T09:02:03.000Z',
  status: 'cancelled',
  outcome_id: OUTCOME_ID,
  cost_usd: 1.5,
  last_sequence: 9,
  state: 'cancelled',
};
const unknownCost: RunRecord = {
  run_id: UNKNOWN_ID,
  workbench: 'pi-pkg',
  runner: 'pi',
  started_at: '2026-12-04T10:01:00.000Z',
  cost_usd: null,
  state: 'running',
};

let clients: FakeClient[];
let behaviour: Behaviour;
let controller: WorkbenchController;
/** The readings the view scheduled: their delay, and a function that runs one. */
let scheduled: Array<{ milliseconds: number; run: () => void; cancelled: boolean }>;
let runs: RunRecord[];

function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function activate(): Promise<FakeClient> {
  await controller.activate({ subscriptions: [] } as unknown as vscode.ExtensionContext);
  const client = clients[0];
  assert.ok(client, 'the server started');
  assert.equal(scheduled.at(-1)?.milliseconds, FIRST_REFRESH_MS, 'the first reading comes soon after the start');
  assert.deepEqual(requests(client, 'workbench.runs'), []);
  scheduled.at(-1)?.run();
  await settle();
  return client;
}

function view(): StubTreeView {
  const found = stub.treeViews.find((candidate) => candidate.id === 'wb-lsp.runs');
  assert.ok(found, 'the Runs view was created');
  return found;
}

function costItem() {
  const item = stub.statusItems.find((candidate) => candidate.name === 'Workbench Runs Cost');
  assert.ok(item, 'a cost status bar item exists');
  return item;
}

function runChannel(): StubOutputChannel {
  const channel = stub.outputs.find((output) => output.name === 'Workbench Run');
  assert.ok(channel, 'a Workbench Run output channel exists');
  return channel;
}

function requests(client: FakeClient, command: string) {
  return client.requests.filter((request) => request.command === command);
}

beforeEach(() => {
  stub.reset();
  clients = [];
  scheduled = [];
  runs = [running, finished];
  behaviour = { answers: { 'workbench.runs': (() => Promise.resolve(runs)) as Answer } };
  stub.workspaceFolders = [REPO];
  stub.files = [MANIFEST];
  stub.configuration = { 'wb-lsp.server.path': '' };
  controller = new WorkbenchController(
    (setup) => {
      const client = new FakeClient(setup, behaviour);
      clients.push(client);
      return client;
    },
    { platform: 'linux', env: { PATH: '/usr/bin' }, homedir: '/home/me', isExecutable: (f) => f === '/usr/bin/wb-lsp' },
    {
      now: () => NOW,
      schedule: (callback, milliseconds) => {
        const entry = { milliseconds, run: callback, cancelled: false };
        scheduled.push(entry);
        return () => {
          entry.cancelled = true;
        };
      },
    },
  );
});

test('the records of workbench.runs are read, shown and counted as the CLI does', () => {
  assert.deepEqual(parseRuns([running, { run_id: 'nonsense', state: 'running' }, 'x', finished]), [running, finished]);
  assert.deepEqual(parseRuns({ runs: [] }), []);
  assert.equal(formatElapsed(0), '0s');
  assert.equal(formatElapsed(59_999), '59s');
  assert.equal(formatElapsed(65_000), '1m 05s');
  assert.equal(formatElapsed(3_725_000), '1h 02m');
  assert.equal(formatCost(0.25), '$0.2500');
  assert.equal(formatCost(0), '$0.0000', 'a reported zero is a cost');
  assert.equal(formatCost(null), 'cost unknown');
  assert.equal(formatCost(undefined), 'cost unknown');
  assert.equal(runDescription(running, NOW), 'running · 1m 05s · $0.2500 · writing');
  assert.equal(runDescription(finished, NOW), 'cancelled · 2m 03s · $1.5000', 'a finished run: until it ended');
  assert.equal(runDescription(unknownCost, NOW), 'running · 5s · cost unknown');
  assert.equal(runContextValue(running), 'workbenchRun running attachable');
  assert.equal(runContextValue(finished), 'workbenchRun attachable outcome');
  assert.equal(runContextValue({ ...running, state: 'lost' }), 'workbenchRun');
  assert.equal(runArgumentId(RUNNING_ID), RUNNING_ID);
  assert.equal(runArgumentId(finished), DONE_ID);
  assert.equal(runArgumentId({ runId: DONE_ID }), DONE_ID);
  assert.equal(runArgumentId('wb_short'), undefined);
});

test('the cost item totals the running runs, counts unknown costs apart, and is hidden when none runs', () => {
  assert.equal(presentRunningCost([finished], NOW), undefined);
  assert.equal(presentRunningCost([], NOW), undefined);
  assert.equal(presentRunningCost([running, finished], NOW)?.text, '$(pulse) Workbench: 1 running, $0.2500');
  assert.equal(
    presentRunningCost([running, { ...running, run_id: DONE_ID, cost_usd: 0.5 }], NOW)?.text,
    '$(pulse) Workbench: 2 running, $0.7500',
  );
  const mixed = presentRunningCost([running, unknownCost], NOW);
  assert.equal(mixed?.text, '$(pulse) Workbench: 2 running, $0.2500 + 1 cost unknown');
  assert.match(mixed?.tooltip ?? '', /pi-pkg \(wb_0123456789abcdef01234567\): 5s, cost unknown/);
  assert.equal(presentRunningCost([unknownCost], NOW)?.text, '$(pulse) Workbench: 1 running, cost unknown');
});

test('the Runs view lists the runs of workbench.runs with state, elapsed time and cost', async () => {
  const client = await activate();
  assert.deepEqual(requests(client, 'workbench.runs')[0]?.args, [{ all: true }]);
  const items = view().items();
  assert.deepEqual(
    items.map((item) => [item.label, item.description, item.contextValue, item.iconPath?.id]),
    [
      ['demo', 'running · 1m 05s · $0.2500 · writing', 'workbenchRun running attachable', 'sync~spin'],
      ['review', 'cancelled · 2m 03s · $1.5000', 'workbenchRun attachable outcome', 'circle-slash'],
    ],
  );
  assert.match(items[1]?.tooltip ?? '', new RegExp(`Run ${DONE_ID}: review 0.2.0 on docker \\(claude-code\\)`));
  assert.match(items[1]?.tooltip ?? '', new RegExp(`Outcome: ${OUTCOME_ID}`));
  assert.equal(view().message, undefined);
  assert.equal(costItem().visible, true);
  assert.equal(costItem().text, '$(pulse) Workbench: 1 running, $0.2500');
  assert.equal(costItem().command, 'wb-lsp.runs.focus');

  // The run ends (the next reading says so): the cost item goes.
  runs = [{ ...running, state: 'completed', ended_at: '2026-12-04T10:01:00.000Z' }, finished];
  await stub.commands.get('wb-lsp.refreshRuns')?.();
  assert.equal(view().items()[0]?.description, 'completed · 1m 00s · $0.2500');
  assert.equal(costItem().visible, false);

  runs = [];
  await stub.commands.get('wb-lsp.refreshRuns')?.();
  assert.deepEqual(view().items(), []);
  assert.equal(view().message, 'No Workbench runs yet.');
});

test('the list is read every 2 s while the view is visible or a run runs, every 15 s otherwise', async () => {
  const client = await activate();
  // A run is running: fast.
  assert.equal(scheduled.at(-1)?.milliseconds, FAST_REFRESH_MS);
  runs = [finished];
  scheduled.at(-1)?.run();
  await settle();
  assert.equal(requests(client, 'workbench.runs').length, 2);
  assert.equal(scheduled.at(-1)?.milliseconds, SLOW_REFRESH_MS, 'nothing runs and the view is hidden: slow');
  view().setVisible(true);
  await settle();
  assert.equal(requests(client, 'workbench.runs').length, 3, 'opening the view reads at once');
  assert.equal(scheduled.at(-1)?.milliseconds, FAST_REFRESH_MS);
  assert.ok(scheduled.slice(0, -1).every((entry) => entry.cancelled), 'one reading is pending at a time');

  // The server stopped: the timer does not start it again.
  client.crash();
  scheduled.at(-1)?.run();
  await settle();
  assert.equal(clients.length, 1);
  assert.equal(requests(client, 'workbench.runs').length, 3);

  await controller.dispose();
  assert.ok(scheduled.every((entry) => entry.cancelled), 'no reading after the extension went away');
  assert.equal(costItem().disposed, true);
});

/** The server's answer to `workbench.attach`: the run's events from its first (replayed), then its end. */
const attachedRun: Answer = async (args, options, client) => {
  assert.deepEqual(args, [{ runId: RUNNING_ID }]);
  await settle();
  const token = options?.workDoneToken ?? '';
  client.reportProgress(token, { kind: 'begin', title: 'Workbench run', message: 'attached' });
  const events: Array<[string, Record<string, unknown>, string[]]> = [
    ['run.started', { workbench: 'demo', version: '0.1.0', runtime: 'local' }, [`▶ Run ${RUNNING_ID} started: demo 0.1.0 on local (opencode)`]],
    ['output.text', { text: 'working', id: 't1' }, ['working']],
    ['outcome.available', { outcome_id: OUTCOME_ID }, [`  outcome ${OUTCOME_ID} (0 changesets, 0 artifacts, 0 links)`]],
    ['run.completed', { duration_ms: 1200 }, ['■ Run completed in 1.2 s']],
  ];
  events.forEach(([type, data, text], index) => {
    const event: RunEvent = { protocol: 0, run_id: RUNNING_ID, sequence: index + 1, timestamp: '2026-12-04T10:00:00.000Z', type, runner: 'opencode', data };
    client.runEvents.fire({ event, text });
  });
  client.reportProgress(token, { kind: 'end', message: 'completed' });
  return { runId: RUNNING_ID, ending: { status: 'completed' }, finalText: 'done', outcomeId: OUTCOME_ID };
};

test('Attach replays then follows the run into the run channel, as a run started here', async () => {
  behaviour.answers['workbench.attach'] = attachedRun;
  behaviour.answers['workbench.outcome'] = new Error(`Outcome not found: ${OUTCOME_ID}`);
  const client = await activate();
  const before = requests(client, 'workbench.runs').length;
  await stub.commands.get('wb-lsp.attachRun')?.(running);
  const attach = client.requests.findIndex((request) => request.command === 'workbench.attach');
  assert.ok(attach >= 0, 'workbench.attach was sent');
  assert.equal(client.requestOptions[attach]?.workDoneToken, 'wb-lsp-run-1', 'with a work-done token');
  assert.ok(client.requestOptions[attach]?.token, 'cancellable');
  assert.deepEqual(runChannel().lines.slice(0, 5), [
    `── attached to ${RUNNING_ID}: demo`,
    `▶ Run ${RUNNING_ID} started: demo 0.1.0 on local (opencode)`,
    'working',
    `  outcome ${OUTCOME_ID} (0 changesets, 0 artifacts, 0 links)`,
    '■ Run completed in 1.2 s',
  ]);
  assert.equal(stub.progress[0]?.options.title, `Workbench run ${RUNNING_ID}`);
  assert.deepEqual(stub.progress[0]?.reports, [{ message: 'attached' }]);
  // The outcome is looked up as after a run started here.
  assert.deepEqual(requests(client, 'workbench.outcome')[0]?.args, [OUTCOME_ID]);
  assert.equal(stub.messages.at(-1)?.message, 'Workbench: the run completed.');
  assert.ok(requests(client, 'workbench.runs').length > before, 'the view was read again after the attach');
  assert.equal(controller.running, false);
});

test('Attach from the palette asks which run (not a lost one)', async () => {
  behaviour.answers['workbench.attach'] = attachedRun;
  runs = [running, { ...finished, state: 'lost' }];
  const client = await activate();
  stub.picks = ['demo'];
  await stub.commands.get('wb-lsp.attachRun')?.();
  assert.deepEqual(stub.quickPicks[0]?.items, ['demo']);
  assert.deepEqual(requests(client, 'workbench.attach')[0]?.args, [{ runId: RUNNING_ID }]);
  stub.picks = [undefined];
  await stub.commands.get('wb-lsp.attachRun')?.();
  assert.equal(requests(client, 'workbench.attach').length, 1, 'dismissed: nothing sent');
});

test('Kill asks first, then sends workbench.kill and reads the list again', async () => {
  behaviour.answers['workbench.kill'] = { runId: RUNNING_ID, asked: true };
  const client = await activate();
  stub.answer = undefined;
  await stub.commands.get('wb-lsp.killRun')?.(running);
  assert.deepEqual(requests(client, 'workbench.kill'), [], 'declined: nothing sent');
  assert.equal(stub.messages.at(-1)?.message, `Kill run demo (${RUNNING_ID})?`);
  assert.deepEqual(stub.messageOptions.at(-1), {
    modal: true,
    detail: 'The runner stops and the partial outcome is collected, as on a cancel.',
  });

  stub.answer = BUTTON_KILL;
  const before = requests(client, 'workbench.runs').length;
  await stub.commands.get('wb-lsp.killRun')?.(running);
  assert.deepEqual(requests(client, 'workbench.kill'), [{ command: 'workbench.kill', args: [{ runId: RUNNING_ID }] }]);
  assert.equal(stub.messages.at(-1)?.message, `Workbench: asked run demo (${RUNNING_ID}) to stop.`);
  assert.equal(requests(client, 'workbench.runs').length, before + 1);

  behaviour.answers['workbench.kill'] = new Error(`Run ${RUNNING_ID} is not running (cancelled)`);
  await stub.commands.get('wb-lsp.killRun')?.(running);
  assert.deepEqual(stub.messages.at(-1), {
    level: 'error',
    message: `Workbench: cannot kill run ${RUNNING_ID}: Run ${RUNNING_ID} is not running (cancelled)`,
    items: [],
  });
});

test("Open Outcome shows the run's outcome with the outcome commands", async () => {
  behaviour.answers['workbench.outcome'] = new Error(`Outcome not found: ${OUTCOME_ID}`);
  const client = await activate();
  await stub.commands.get('wb-lsp.openRunOutcome')?.(finished);
  assert.deepEqual(requests(client, 'workbench.outcome'), [{ command: 'workbench.outcome', args: [OUTCOME_ID] }]);
  await stub.commands.get('wb-lsp.openRunOutcome')?.(running);
  assert.equal(stub.messages.at(-1)?.message, `Workbench: run ${RUNNING_ID} has no outcome yet.`);
  assert.equal(requests(client, 'workbench.outcome').length, 1);
});

test('closing the window lets go of a followed run instead of cancelling it', async () => {
  let answer: (value: unknown) => void = () => undefined;
  behaviour.answers['workbench.attach'] = (() => new Promise((resolve) => (answer = resolve))) as Answer;
  const client = await activate();
  const following = stub.commands.get('wb-lsp.attachRun')?.(running) as Promise<void>;
  await settle();
  assert.equal(controller.running, true);
  await controller.dispose();
  assert.deepEqual(client.cancelledProgress, [], 'no window/workDoneProgress/cancel');
  const attach = client.requests.findIndex((request) => request.command === 'workbench.attach');
  assert.equal(client.requestOptions[attach]?.token?.isCancellationRequested, false, 'no $/cancelRequest');
  answer({ runId: RUNNING_ID, ending: { status: 'completed' }, finalText: '' });
  await following;
});

test('a server that stops during an attach: the run goes on, and Attach follows it again', async () => {
  const ended = Object.assign(
    new Error(`The session ended while run ${RUNNING_ID} goes on: attach to it again (wb-lsp attach ${RUNNING_ID})`),
    { code: -32803 },
  );
  let calls = 0;
  behaviour.answers['workbench.attach'] = (async (args, options, fake) => {
    calls += 1;
    if (calls === 1) {
      throw ended;
    }
    return attachedRun(args, options, fake);
  }) as Answer;
  const client = await activate();
  stub.answer = 'Attach';
  await stub.commands.get('wb-lsp.attachRun')?.(running);
  assert.deepEqual(stub.messages[0], {
    level: 'warning',
    message: `Workbench: the server stopped; run ${RUNNING_ID} goes on without this window.`,
    items: ['Attach', 'Show Output'],
  });
  assert.equal(runChannel().lines[1], `■ ${ended.message}`);
  await settle();
  await settle();
  assert.equal(requests(client, 'workbench.attach').length, 2, 'the Attach button attached again');
});

const IDLE_ID = 'wb_abcdefabcdefabcdefabcdef';
const idleSession: RunRecord = {
  run_id: IDLE_ID,
  workbench: 'notes',
  runner: 'opencode',
  started_at: '2026-12-04T10:00:05.000Z',
  cost_usd: 0.5,
  session: true,
  turns: 1,
  state: 'idle',
};

const sentTurn: Answer = async (args, options, client) => {
  assert.deepEqual(args, [{ runId: IDLE_ID, task: 'Now the second part' }]);
  await settle();
  const token = options?.workDoneToken ?? '';
  client.reportProgress(token, { kind: 'begin', title: 'Workbench turn', message: 'queued' });
  const events: Array<[string, Record<string, unknown>, string[]]> = [
    ['turn.started', { turn_index: 2, input_id: 'in_0011223344' }, ['▶ Turn 2']],
    ['output.text', { text: 'second part written', id: 't2' }, ['second part written']],
    ['outcome.available', { outcome_id: OUTCOME_ID, turn_index: 2 }, [`  outcome ${OUTCOME_ID} (0 changesets, 1 artifacts, 0 links)`]],
    ['turn.completed', { turn_index: 2, status: 'completed', duration_ms: 900 }, ['■ Turn 2 completed in 0.9 s']],
  ];
  events.forEach(([type, data, text], index) => {
    const event: RunEvent = { protocol: 0, run_id: IDLE_ID, sequence: index + 10, timestamp: '2026-12-04T10:01:00.000Z', type, runner: 'opencode', data };
    client.runEvents.fire({ event, text });
  });
  client.reportProgress(token, { kind: 'end', message: 'completed' });
  return { runId: IDLE_ID, turnIndex: 2, status: 'completed', finalText: 'second part written', snapshotId: OUTCOME_ID };
};

test('an idle session is listed with its turns, and Send Turn asks the task and follows the turn', async () => {
  runs = [idleSession, running, finished];
  behaviour.answers['workbench.send'] = sentTurn;
  behaviour.answers['workbench.outcome'] = new Error(`Outcome not found: ${OUTCOME_ID}`);
  const client = await activate();
  const items = view().items();
  assert.deepEqual(
    [items[0]?.label, items[0]?.description, items[0]?.contextValue, items[0]?.iconPath?.id],
    ['notes', 'idle · 1m 00s · $0.5000 · session, 1 turn', 'workbenchRun running idle attachable', 'comment-discussion'],
  );
  // A dismissed task sends nothing.
  stub.inputs = [undefined];
  await stub.commands.get('wb-lsp.sendTurn')?.(idleSession);
  assert.deepEqual(requests(client, 'workbench.send'), []);
  stub.inputs = ['Now the second part'];
  await stub.commands.get('wb-lsp.sendTurn')?.(idleSession);
  assert.equal(stub.inputBoxes.at(-1)?.title, 'Workbench: the next turn of notes');
  const send = client.requests.findIndex((request) => request.command === 'workbench.send');
  assert.equal(client.requestOptions[send]?.workDoneToken, 'wb-lsp-run-1', 'with a work-done token');
  assert.deepEqual(runChannel().lines.slice(0, 5), [
    `── ${IDLE_ID} (notes): Now the second part`,
    '▶ Turn 2',
    'second part written',
    `  outcome ${OUTCOME_ID} (0 changesets, 1 artifacts, 0 links)`,
    '■ Turn 2 completed in 0.9 s',
  ]);
  assert.equal(stub.progress[0]?.options.title, `Workbench session ${IDLE_ID}`);
  // The turn's snapshot is looked up as a run's outcome is.
  assert.deepEqual(requests(client, 'workbench.outcome')[0]?.args, [OUTCOME_ID]);
  assert.equal(stub.messages.at(-1)?.message, `Workbench: turn 2 of session ${IDLE_ID} completed.`);
  // From the palette, only idle sessions are offered.
  stub.picks = ['notes'];
  stub.inputs = ['Now the second part'];
  await stub.commands.get('wb-lsp.sendTurn')?.();
  assert.deepEqual(stub.quickPicks.at(-1)?.items, ['notes']);
  assert.equal(requests(client, 'workbench.send').length, 2);
});

test("a finished run's outcome lists its files: each opens in the diff editor, and Apply This File takes one", async () => {
  const entries = [
    { label: 'README.md', changeset: 'primary', workspace: null, path: 'README.md', kind: 'modified', additions: 3, deletions: 1, binary: false, taken: false },
    { label: 'docs:guide.md', changeset: 'workspace_docs', workspace: 'docs', path: 'guide.md', kind: 'added', additions: 2, deletions: 0, binary: false, taken: true },
    { label: 'logo.png', changeset: 'primary', workspace: null, path: 'logo.png', kind: 'modified', additions: 0, deletions: 0, binary: true, taken: false },
  ];
  let state = 'pending';
  behaviour.answers['workbench.outcome'] = (() =>
    Promise.resolve({
      outcome: {
        id: OUTCOME_ID,
        run_id: DONE_ID,
        created_at: '2026-12-04T09:02:03.000Z',
        completeness: 'partial',
        changesets: [],
        artifacts: [{ id: 'report_html', name: 'Report.html', content: { digest: `sha256:${'a'.repeat(64)}`, media_type: 'text/html', size_bytes: 18 } }],
        links: [{ id: 'pr', label: 'Implementation PR', uri: 'https://github.com/example/project/pull/42', kind: 'pull_request' }],
        warnings: [],
      },
      receipt: { outcome_id: OUTCOME_ID, state, updated_at: '2026-12-04T09:02:03.000Z' },
      files: { artifacts: [{ id: 'report_html', name: 'Report.html', file: '/store/blob' }], reviews: [] },
      lines: [],
      brief: '',
      changesets: [],
      receiptText: '',
      entries,
    })) as Answer;
  behaviour.answers['workbench.outcomeFile'] = ((args: unknown[]) => {
    const { side } = args[0] as { side: string };
    return Promise.resolve(side === 'before' ? { kind: 'text', text: 'old\n', mode: 0o644 } : { kind: 'binary', size_bytes: 9, mode: 0o644 });
  }) as Answer;
  behaviour.answers['workbench.applyOutcome'] = (() =>
    Promise.resolve({ outcomeId: OUTCOME_ID, applied: 1, unchanged: 0, text: '1 applied, 0 unchanged', applicationState: 'pending' })) as Answer;
  const client = await activate();
  const [runningItem, doneItem] = view().items();
  assert.equal(runningItem?.collapsibleState, 0, 'a running run has no files yet');
  assert.equal(doneItem?.collapsibleState, 1, 'a finished run with an outcome expands');
  const files = await view().children(finished);
  assert.deepEqual(
    files.map(({ item }) => [item.label, item.description, (item.iconPath as { id: string }).id, item.contextValue]),
    [
      ['README.md', 'M +3 \u22121', 'diff-modified', 'outcomeFile applicable'],
      ['guide.md', 'docs: A +2 \u00b7 taken', 'diff-added', 'outcomeFile'],
      ['logo.png', 'M binary', 'diff-modified', 'outcomeFile applicable'],
      ['Report.html', 'artifact \u00b7 text/html, 18 bytes', 'file-media', 'outcomeArtifact'],
      ['Implementation PR', 'link \u00b7 pull_request', 'link-external', 'outcomeLink'],
    ],
  );
  // The artifact opens read-only through Open Artifact; the link in the browser.
  assert.deepEqual(files[3]?.item.command?.arguments, [{ id: OUTCOME_ID, artifact: 'report_html' }]);
  assert.equal(files[3]?.item.command?.command, 'wb-lsp.openArtifact');
  assert.equal(files[4]?.item.command?.command, 'vscode.open');
  // Clicking a file opens VS Code's diff editor on the two read-only sides, named like the file.
  const open = files[0]?.item.command;
  assert.equal(open?.command, 'wb-lsp.openOutcomeFile');
  await stub.commands.get(open?.command ?? '')?.(...(open?.arguments ?? []));
  const diff = stub.executed.find((entry) => entry.command === 'vscode.diff');
  assert.ok(diff, 'vscode.diff was opened');
  const [left, right, title] = diff.args as [vscode.Uri, vscode.Uri, string];
  assert.deepEqual([left.scheme, left.path], ["wb-outcome", `/${OUTCOME_ID}/files/before/README.md`]);
  assert.deepEqual([right.scheme, right.path], ["wb-outcome", `/${OUTCOME_ID}/files/after/README.md`]);
  assert.equal(title, `README.md (outcome ${OUTCOME_ID})`);
  const system = stub.fileSystems.get('wb-outcome')?.provider;
  assert.ok(system);
  assert.equal(Buffer.from(await system.readFile(left)).toString(), 'old\n');
  assert.equal(Buffer.from(await system.readFile(right)).toString(), '(binary file, 9 bytes)\n');
  assert.deepEqual(requests(client, 'workbench.outcomeFile').map((r) => r.args[0]), [
    { id: OUTCOME_ID, path: 'README.md', side: 'before' },
    { id: OUTCOME_ID, path: 'README.md', side: 'after' },
  ]);
  // Apply This File takes only that path; the view reads the files again.
  await stub.commands.get('wb-lsp.applyOutcomeFile')?.(files[0]?.node);
  assert.deepEqual(requests(client, 'workbench.applyOutcome').map((r) => r.args[0]), [
    { id: OUTCOME_ID, only: ['README.md'] },
  ]);
  assert.equal(stub.messages.at(-1)?.message, 'Workbench: applied README.md.');
  // Once every file is taken the receipt is applied: no file can be taken any more.
  state = 'applied';
  const after = await view().children(finished);
  assert.deepEqual(
    after.map(({ item }) => item.contextValue),
    ['outcomeFile', 'outcomeFile', 'outcomeFile', 'outcomeArtifact', 'outcomeLink'],
  );
});
