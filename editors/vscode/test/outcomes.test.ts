/**
 * The outcome commands through the controller (Show Outcome, Open Outcome Artifact, View Outcome Diff, Apply
 * Outcome, and the summary after Run Workbench), with the fake client answering `workbench.run`,
 * `workbench.outcome` and `workbench.applyOutcome`, and the stub standing in for VS Code.
 */
import './register';
import { strict as assert } from 'node:assert';
import { after, beforeEach, test } from 'node:test';
import type * as vscode from 'vscode';
import { BUTTON_OUTPUT } from '../src/constants';
import { WorkbenchController } from '../src/controller';
import {
  BUTTON_APPLY,
  BUTTON_APPLY_OUTCOME,
  BUTTON_SHOW_OUTCOME,
  BUTTON_VIEW_DIFF,
  ITEM_ENTER_ID,
} from '../src/outcomeCommands';
import type { ReceiptState } from '../src/outcome';
import type { RunEvent } from '../src/run';
import { FakeClient, type Answer, type Behaviour } from './fake-client';
import { DIFF, expectedSummary, OUTCOME_ID, outcomeAnswer, REPORT, RUN_ID, Store } from './outcome-fixture';
import { stub, Uri, type StubOutputChannel } from './vscode-stub';

const REPO = '/work/repo';
const MANIFEST = `${REPO}/.workbenches/demo/workbench.yml`;
const URI = 'file:///work/repo/.workbenches/demo/workbench.yml';
const OTHER_ID = 'wbo_99999999999999999999zz';
const REPORT_URI = `wb-outcome:///${OUTCOME_ID}/artifacts/findings_html/Findings.html`;
const DIFF_URI = `wb-outcome:///${OUTCOME_ID}/changesets/primary.diff`;

const store = new Store();
after(() => store.remove());

let clients: FakeClient[];
let behaviour: Behaviour;
let controller: WorkbenchController;
/** The receipt state `workbench.outcome` answers with. */
let state: ReceiptState;

function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Waits (up to a second) for what a message button started, which reads real files. */
async function until(what: string, condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 200 && !condition(); attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.ok(condition(), `timed out waiting for ${what}`);
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

/** Sends an event with the lines the server renders for it (`text`). */
function emit(
  client: FakeClient,
  sequence: number,
  type: string,
  data: Record<string, unknown>,
  text: string[],
): void {
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

const AVAILABLE = { outcome_id: OUTCOME_ID, changesets: 1, artifacts: 1, links: 1 };

/** A run that commits the fixture outcome and completes, answering with its `outcomeId`. */
const runWithOutcome: Answer = async (_args, _options, client) => {
  await settle();
  emit(client, 1, 'run.started', { workbench: 'demo', version: '0.1.0', runtime: 'local' }, [
    `▶ Run ${RUN_ID} started: demo 0.1.0 on local (opencode)`,
  ]);
  emit(client, 2, 'outcome.available', AVAILABLE, [`  outcome ${OUTCOME_ID} (1 changeset, 1 artifact, 1 link)`]);
  emit(client, 3, 'run.completed', { duration_ms: 12 }, ['■ Run completed in 12 ms']);
  return { runId: RUN_ID, ending: { status: 'completed' }, finalText: 'done', outcomeId: OUTCOME_ID };
};

/** The outcome commands the client was asked for, in order. */
function outcomeRequests(client: FakeClient): Array<{ command: string; args: unknown[] }> {
  return client.sent.filter((request) => request.command !== 'workbench.run');
}

/** Reads a document the extension opened through the registered `wb-outcome` file system. */
async function readOutcomeDocument(uri: unknown): Promise<string> {
  const system = stub.fileSystems.get('wb-outcome');
  assert.ok(system, 'the wb-outcome file system is registered');
  assert.ok(uri instanceof Uri, 'a Uri');
  return Buffer.from(await system.provider.readFile(uri)).toString('utf8');
}

beforeEach(() => {
  stub.reset();
  clients = [];
  state = 'present';
  behaviour = {
    answers: {
      'workbench.run': runWithOutcome,
      'workbench.outcome': ((args: unknown[]) =>
        args[0] === OUTCOME_ID
          ? Promise.resolve(outcomeAnswer(store, state))
          : Promise.reject(new Error(`Outcome not found: ${String(args[0])}`))) satisfies Answer,
    },
  };
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

test("after a run, the outcome's summary goes to the run channel and the ending message offers it", async () => {
  const client = await activate();
  stub.inputs = ['say done'];
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });

  assert.deepEqual(outcomeRequests(client), [{ command: 'workbench.outcome', args: [OUTCOME_ID] }]);
  assert.deepEqual(runChannel().lines, [
    `── ${MANIFEST}: say done`,
    `▶ Run ${RUN_ID} started: demo 0.1.0 on local (opencode)`,
    `  outcome ${OUTCOME_ID} (1 changeset, 1 artifact, 1 link)`,
    '■ Run completed in 12 ms',
    ...expectedSummary('present'),
  ]);
  // A local run's outcome is present: nothing to apply, so no Apply button.
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message: 'Workbench: the run completed. Outcome: 1 added, 1 modified, 1 deleted; 1 artifact; 1 link.',
    items: [BUTTON_SHOW_OUTCOME, BUTTON_VIEW_DIFF, BUTTON_OUTPUT],
  });
  assert.equal(controller.outcomes.currentOutcome, OUTCOME_ID);
});

test('View Diff on the ending message opens the stored review diff as a read-only diff document', async () => {
  await activate();
  stub.inputs = ['say done'];
  stub.answer = BUTTON_VIEW_DIFF;
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });
  await until('the diff document to be shown', () => stub.shown.length > 0);
  assert.deepEqual(stub.opened, [URI, DIFF_URI], 'the manifest (for its runtimes), then the diff');
  assert.deepEqual(stub.languageChanges, [{ uri: DIFF_URI, languageId: 'diff' }]);
  const shown = stub.shown.at(-1);
  assert.ok(shown, 'a document is shown');
  assert.equal(shown.document.languageId, 'diff');
  assert.equal(shown.document.getText?.(), DIFF);
  assert.deepEqual(shown.options, { preview: false });
  const system = stub.fileSystems.get('wb-outcome');
  assert.deepEqual(system?.options, { isCaseSensitive: true, isReadonly: true });
});

test('Show Outcome lists the changes, artifacts and links; picking the artifact opens it read-only', async () => {
  const client = await activate();
  stub.picks = ['$(file) Findings.html'];
  await stub.commands.get('wb-lsp.showOutcome')?.(OUTCOME_ID);
  assert.deepEqual(outcomeRequests(client), [{ command: 'workbench.outcome', args: [OUTCOME_ID] }]);
  const pick = stub.quickPicks[0];
  assert.ok(pick);
  assert.deepEqual(pick.items, [
    'Changes',
    '$(diff) primary',
    '$(diff-modified) README.md',
    '$(diff-added) notes/hello.txt',
    '$(diff-removed) obsolete.txt',
    'Artifacts',
    '$(file) Findings.html',
    'Links',
    '$(link-external) Implementation PR',
  ]);
  assert.equal(pick.options.title, `Outcome ${OUTCOME_ID}: complete, present`);
  assert.equal(pick.options.placeHolder, 'Prepared a findings report');
  const open = stub.executed.find((call) => call.command === 'vscode.open');
  assert.ok(open, 'the artifact is opened with vscode.open');
  assert.equal(String(open.args[0]), REPORT_URI);
  assert.deepEqual(open.args[1], { preview: false });
  assert.equal(await readOutcomeDocument(open.args[0]), REPORT);

  // Picking a change opens the review diff; picking the link opens it in the browser.
  stub.picks = ['$(diff-added) notes/hello.txt'];
  await stub.commands.get('wb-lsp.showOutcome')?.({ id: OUTCOME_ID });
  assert.equal(stub.shown.at(-1)?.document.getText?.(), DIFF);
  stub.picks = ['$(link-external) Implementation PR'];
  await stub.commands.get('wb-lsp.showOutcome')?.(OUTCOME_ID);
  assert.deepEqual(stub.external, ['https://github.com/example/project/pull/42']);
});

test("Show Outcome without an argument asks: an id typed in, then this window's outcomes first", async () => {
  const client = await activate();
  stub.inputs = [OUTCOME_ID];
  stub.picks = [undefined];
  await stub.commands.get('wb-lsp.showOutcome')?.();
  const validate = stub.inputBoxes[0]?.validateInput as (value: string) => string | undefined;
  assert.equal(
    validate('wb_00112233445566778899aabb'),
    'An outcome id is wbo_ followed by 20 to 64 lowercase letters and digits.',
  );
  assert.equal(validate(` ${OUTCOME_ID} `), undefined);
  assert.deepEqual(outcomeRequests(client).at(-1), { command: 'workbench.outcome', args: [OUTCOME_ID] });

  // Now the window knows an outcome: it is offered first, with a way to type another.
  stub.picks = [ITEM_ENTER_ID];
  stub.inputs = [OTHER_ID];
  await stub.commands.get('wb-lsp.showOutcome')?.();
  assert.deepEqual(stub.quickPicks.at(-1)?.items, [OUTCOME_ID, ITEM_ENTER_ID]);
  assert.deepEqual(stub.messages.at(-1), {
    level: 'error',
    message: `Workbench: cannot read outcome ${OTHER_ID}: Outcome not found: ${OTHER_ID}`,
    items: [],
  });
  // Dismissing the choice sends nothing.
  const before = client.sent.length;
  stub.picks = [undefined];
  await stub.commands.get('wb-lsp.showOutcome')?.();
  assert.equal(client.sent.length, before);
});

test("Open Outcome Artifact and View Outcome Diff default to the last run's outcome", async () => {
  const client = await activate();
  stub.inputs = ['say done'];
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });
  await stub.commands.get('wb-lsp.openArtifact')?.();
  assert.equal(stub.quickPicks.length, 0, 'one artifact: no choice to make');
  const open = stub.executed.filter((call) => call.command === 'vscode.open');
  assert.equal(open.length, 1);
  assert.equal(await readOutcomeDocument(open[0]?.args[0]), REPORT);
  await stub.commands.get('wb-lsp.viewOutcomeDiff')?.();
  assert.equal(stub.shown.at(-1)?.document.getText?.(), DIFF);
  assert.deepEqual(
    outcomeRequests(client).map((request) => request.args[0]),
    [OUTCOME_ID, OUTCOME_ID, OUTCOME_ID],
    'each command reads the outcome again (its receipt may have changed)',
  );
});

test('several artifacts are picked from; an outcome without any says so', async () => {
  await activate();
  const answer = outcomeAnswer(store);
  const second = store.put('a,b\n1,2\n', 'text/csv');
  answer.outcome.artifacts.push({ id: 'table_csv', name: 'table.csv', content: second.content });
  answer.files.artifacts.push({ id: 'table_csv', name: 'table.csv', file: second.file });
  behaviour.answers['workbench.outcome'] = answer;
  stub.picks = ['$(file) table.csv'];
  await stub.commands.get('wb-lsp.openArtifact')?.(OUTCOME_ID);
  assert.deepEqual(stub.quickPicks[0]?.items, ['$(file) Findings.html', '$(file) table.csv']);
  const open = stub.executed.find((call) => call.command === 'vscode.open');
  assert.equal(String(open?.args[0]), `wb-outcome:///${OUTCOME_ID}/artifacts/table_csv/table.csv`);
  assert.equal(await readOutcomeDocument(open?.args[0]), 'a,b\n1,2\n');

  const bare = outcomeAnswer(store);
  bare.outcome.artifacts = [];
  bare.outcome.changesets = [];
  bare.files = { artifacts: [], reviews: [] };
  behaviour.answers['workbench.outcome'] = bare;
  await stub.commands.get('wb-lsp.openArtifact')?.(OUTCOME_ID);
  assert.equal(stub.messages.at(-1)?.message, `Workbench: outcome ${OUTCOME_ID} has no artifacts.`);
  await stub.commands.get('wb-lsp.viewOutcomeDiff')?.(OUTCOME_ID);
  assert.equal(stub.messages.at(-1)?.message, `Workbench: outcome ${OUTCOME_ID} has no changes.`);
});

test('Apply Outcome refuses a present outcome without asking the server to apply it', async () => {
  const client = await activate();
  await stub.commands.get('wb-lsp.applyOutcome')?.(OUTCOME_ID);
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message: `Workbench: outcome ${OUTCOME_ID} is present: the run already made its changes in the workspace. Nothing to apply.`,
    items: [],
  });
  assert.ok(!client.sent.some((request) => request.command === 'workbench.applyOutcome'));
  assert.deepEqual(stub.executed.filter((call) => call.command === 'setContext').at(-1), {
    command: 'setContext',
    args: ['wb-lsp.outcomePending', false],
  });
});

test('a pending outcome is applied after a confirmation, and the receipt is read again', async () => {
  state = 'pending';
  const applied: unknown[][] = [];
  behaviour.answers['workbench.applyOutcome'] = ((args: unknown[]) => {
    applied.push(args);
    state = 'applied';
    return Promise.resolve({ outcomeId: OUTCOME_ID, applied: 3, unchanged: 0, text: '3 applied, 0 unchanged' });
  }) satisfies Answer;
  const client = await activate();
  stub.inputs = ['say done'];
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message:
      'Workbench: the run completed. Outcome (pending: not applied yet): 1 added, 1 modified, 1 deleted; 1 artifact; 1 link.',
    items: [BUTTON_SHOW_OUTCOME, BUTTON_VIEW_DIFF, BUTTON_APPLY_OUTCOME, BUTTON_OUTPUT],
  });
  assert.deepEqual(
    stub.executed.filter((call) => call.command === 'setContext' && call.args[0] === 'wb-lsp.outcomePending'),
    [{ command: 'setContext', args: ['wb-lsp.outcomePending', true] }],
    'Apply Outcome shows in the palette while the current outcome is pending',
  );

  // Declining the confirmation applies nothing.
  stub.answer = undefined;
  await stub.commands.get('wb-lsp.applyOutcome')?.();
  assert.deepEqual(stub.messages.at(-1), {
    level: 'warning',
    message: `Apply outcome ${OUTCOME_ID} to its workspace?`,
    items: [BUTTON_APPLY],
  });
  assert.deepEqual(stub.messageOptions.at(-1), {
    modal: true,
    detail:
      'primary workspace: 1 added, 1 modified, 1 deleted\nAll or nothing: if a file changed since the run, nothing is written.',
  });
  assert.deepEqual(applied, []);

  stub.answer = BUTTON_APPLY;
  await stub.commands.get('wb-lsp.applyOutcome')?.();
  assert.deepEqual(applied, [[{ id: OUTCOME_ID }]]);
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message: `Workbench: applied outcome ${OUTCOME_ID}: 3 applied, 0 unchanged.`,
    items: [],
  });
  assert.equal(runChannel().lines.at(-1), `Applied outcome ${OUTCOME_ID}: 3 applied, 0 unchanged`);
  assert.deepEqual(outcomeRequests(client).slice(-2), [
    { command: 'workbench.applyOutcome', args: [{ id: OUTCOME_ID }] },
    { command: 'workbench.outcome', args: [OUTCOME_ID] },
  ]);
  assert.deepEqual(
    stub.executed.filter((call) => call.command === 'setContext').at(-1),
    { command: 'setContext', args: ['wb-lsp.outcomePending', false] },
    'applied: no longer offered',
  );

  // Once applied, it is not applied again.
  await stub.commands.get('wb-lsp.applyOutcome')?.();
  assert.equal(applied.length, 1);
  assert.equal(
    stub.messages.at(-1)?.message,
    `Workbench: outcome ${OUTCOME_ID} is applied: it was already applied. Nothing to apply.`,
  );
});

test("a refused application shows the engine's reason", async () => {
  state = 'pending';
  behaviour.answers['workbench.applyOutcome'] = new Error(
    'Outcome conflicts with current workspace content: README.md',
  );
  await activate();
  stub.answer = BUTTON_APPLY;
  await stub.commands.get('wb-lsp.applyOutcome')?.(OUTCOME_ID);
  assert.deepEqual(stub.messages.at(-1), {
    level: 'error',
    message: `Workbench: outcome ${OUTCOME_ID} was not applied: Outcome conflicts with current workspace content: README.md`,
    items: [],
  });
  assert.equal(
    runChannel().lines.at(-1),
    `outcome ${OUTCOME_ID} was not applied: Outcome conflicts with current workspace content: README.md`,
  );
});

test('Show Outcome offers Apply for a pending outcome', async () => {
  state = 'pending';
  behaviour.answers['workbench.applyOutcome'] = {
    outcomeId: OUTCOME_ID,
    applied: 3,
    unchanged: 0,
    text: '3 applied, 0 unchanged',
  };
  const client = await activate();
  stub.picks = [`$(check) ${BUTTON_APPLY_OUTCOME}…`];
  stub.answer = BUTTON_APPLY;
  await stub.commands.get('wb-lsp.showOutcome')?.(OUTCOME_ID);
  assert.deepEqual(stub.quickPicks[0]?.items.slice(-2), ['Pending', `$(check) ${BUTTON_APPLY_OUTCOME}…`]);
  assert.ok(client.sent.some((request) => request.command === 'workbench.applyOutcome'));
});

test('a cancelled run still reports the outcome its outcome.available event named', async () => {
  behaviour.answers['workbench.run'] = ((_args, _options, client) => {
    emit(client, 1, 'run.started', { workbench: 'demo', version: '0.1.0', runtime: 'local' }, [
    `▶ Run ${RUN_ID} started: demo 0.1.0 on local (opencode)`,
  ]);
    emit(client, 2, 'outcome.available', AVAILABLE, [`  outcome ${OUTCOME_ID} (1 changeset, 1 artifact, 1 link)`]);
    emit(client, 3, 'run.cancelled', { duration_ms: 40 }, ['■ Run cancelled in 40 ms']);
    return Promise.reject(Object.assign(new Error('request cancelled'), { code: -32800 }));
  }) satisfies Answer;
  const client = await activate();
  stub.inputs = ['x'];
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });
  assert.deepEqual(outcomeRequests(client), [{ command: 'workbench.outcome', args: [OUTCOME_ID] }]);
  assert.deepEqual(stub.messages.at(-1), {
    level: 'warning',
    message: 'Workbench: the run was cancelled. Outcome: 1 added, 1 modified, 1 deleted; 1 artifact; 1 link.',
    items: [BUTTON_SHOW_OUTCOME, BUTTON_VIEW_DIFF, BUTTON_OUTPUT],
  });
});

test('an outcome that cannot be read is said in the channel; the run ends as usual', async () => {
  behaviour.answers['workbench.outcome'] = new Error('Outcome not found: ' + OUTCOME_ID);
  await activate();
  stub.inputs = ['x'];
  await stub.commands.get('wb-lsp.run')?.({ uri: URI });
  assert.equal(
    runChannel().lines.at(-1),
    `  outcome ${OUTCOME_ID} could not be read: Outcome not found: ${OUTCOME_ID}`,
  );
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message: 'Workbench: the run completed.',
    items: [BUTTON_OUTPUT],
  });
});
