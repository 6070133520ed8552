import './register';
import { strict as assert } from 'node:assert';
import { beforeEach, test } from 'node:test';
import type * as vscode from 'vscode';
import { BUTTON_OUTPUT } from '../src/constants';
import { BUTTON_INSTALL, BUTTON_SETTINGS, WorkbenchController, type MachineContext } from '../src/controller';
import { FakeClient, type Behaviour } from './fake-client';
import { Disposable, stub, Uri } from './vscode-stub';

const REPO = '/work/repo';
const MANIFEST = `${REPO}/.workbenches/legacy/workbench.yml`;

let clients: FakeClient[];
let behaviour: Behaviour;
let executables: Set<string>;
let controller: WorkbenchController;
let subscriptions: Array<{ dispose(): unknown }>;

function machine(): MachineContext {
  return {
    platform: 'linux',
    env: { PATH: '/usr/local/bin:/home/me/.cargo/bin' },
    homedir: '/home/me',
    isExecutable: (file) => executables.has(file),
  };
}

function newController(): WorkbenchController {
  return new WorkbenchController((setup) => {
    const client = new FakeClient(setup, behaviour);
    clients.push(client);
    return client;
  }, machine());
}

async function activate(): Promise<void> {
  await controller.activate({ subscriptions } as unknown as vscode.ExtensionContext);
}

/** Lets queued promise callbacks run. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function statusItem() {
  const item = stub.statusItems[0];
  assert.ok(item, 'a status bar item was created');
  return item;
}

beforeEach(() => {
  stub.reset();
  clients = [];
  behaviour = {
    answers: {
      'workbench.checkWorkspace': { packages: 4 },
      'workbench.migrate': { migrated: true },
    },
  };
  executables = new Set(['/home/me/.cargo/bin/wb-lsp']);
  subscriptions = [];
  stub.workspaceFolders = [REPO];
  stub.files = [MANIFEST];
  // Nothing set: the contributed defaults (the stub reads them from package.json).
  stub.configuration = {};
  controller = newController();
});

test('in a workspace with a package, the server starts from PATH and the commands are registered', async () => {
  await activate();
  assert.deepEqual([...stub.commands.keys()].sort(), [
    'wb-lsp.answerRun',
    'wb-lsp.applyOutcome',
    'wb-lsp.applyOutcomeFile',
    'wb-lsp.attachRun',
    'wb-lsp.cancelRun',
    'wb-lsp.checkWorkspace',
    'wb-lsp.dryRun',
    'wb-lsp.killRun',
    'wb-lsp.migrate',
    'wb-lsp.openArtifact',
    'wb-lsp.openOutcomeFile',
    'wb-lsp.openRunOutcome',
    'wb-lsp.openTrialReport',
    'wb-lsp.refreshRuns',
    'wb-lsp.restartServer',
    'wb-lsp.run',
    'wb-lsp.runSession',
    'wb-lsp.runTrials',
    'wb-lsp.sendTurn',
    'wb-lsp.showOutcome',
    'wb-lsp.showOutput',
    'wb-lsp.showRunOutput',
    'wb-lsp.smoke',
    'wb-lsp.viewOutcomeDiff',
  ]);
  assert.equal(clients.length, 1);
  const client = clients[0];
  assert.ok(client);
  assert.equal(client.setup.serverPath, '/home/me/.cargo/bin/wb-lsp');
  assert.equal(client.started, 1);
  assert.deepEqual(controller.status, { state: 'running', version: '0.1.0' });
  assert.equal(statusItem().visible, true);
  assert.equal(statusItem().text, '$(check) Workbench');
  assert.equal(statusItem().command, 'wb-lsp.showOutput');
  assert.deepEqual(stub.messages, []);
  assert.ok(subscriptions.includes(controller), 'the controller is disposed with the extension');
  assert.equal(stub.outputs[0]?.name, 'Workbench');
  assert.ok(
    stub.outputs[0]?.lines.includes(
      'Using wb-lsp from PATH: /home/me/.cargo/bin/wb-lsp (wb-lsp.server.path is empty and there is no bundled server)',
    ),
    stub.outputs[0]?.lines.join('\n'),
  );
});

test('the server gets the mapped settings, read afresh each time', async () => {
  await activate();
  const setup = clients[0]?.setup;
  assert.ok(setup);
  assert.deepEqual(setup.settings(), { modelCatalog: null, severity: {}, runTimeWarnings: true, inlayHints: { context: true, route: true, env: true }, format: { fieldOrder: false } });
  stub.configuration['wb-lsp.modelCatalog'] = 'ci/models.json';
  stub.configuration['wb-lsp.severity'] = { 'unknown-model': 'hint' };
  stub.configuration['wb-lsp.runTimeWarnings'] = false;
  assert.deepEqual(setup.settings(), {
    modelCatalog: '/work/repo/ci/models.json',
    severity: { 'unknown-model': 'hint' },
    runTimeWarnings: false,
    inlayHints: { context: true, route: true, env: true },
    format: { fieldOrder: false },
  });
});

test('without a package, the server waits until a manifest or skill file is opened', async () => {
  stub.files = [];
  await activate();
  assert.equal(clients.length, 0);
  stub.onDidOpenTextDocument.fire(stub.document(`${REPO}/.github/workflows/ci.yml`));
  await settle();
  assert.equal(clients.length, 0);
  stub.onDidOpenTextDocument.fire(stub.document(`${REPO}/.workbenches/new/skills/lint/SKILL.md`, 'markdown'));
  await settle();
  assert.equal(clients.length, 1);
  stub.onDidOpenTextDocument.fire(stub.document(MANIFEST));
  await settle();
  assert.equal(clients.length, 1, 'one server only');
});

test('an open manifest outside any folder starts the server', async () => {
  stub.workspaceFolders = [];
  stub.files = [];
  stub.documents = [stub.document('/tmp/x/.workbenches/demo/workbench.yml')];
  await activate();
  assert.equal(clients.length, 1);
});

test('a missing wb-lsp is reported with install instructions, and the buttons work', async () => {
  executables.clear();
  stub.answer = BUTTON_INSTALL;
  await activate();
  await settle();
  assert.equal(clients.length, 0);
  assert.deepEqual(controller.status, { state: 'error', message: 'wb-lsp was not found' });
  assert.equal(statusItem().text, '$(error) Workbench');
  assert.equal(statusItem().backgroundColor?.id, 'statusBarItem.errorBackground');
  const shown = stub.messages[0];
  assert.ok(shown);
  assert.equal(shown.level, 'error');
  assert.match(shown.message, /wb-lsp was not found on PATH/);
  assert.match(shown.message, /cargo install --path crates\/wb-lsp/);
  assert.deepEqual(shown.items, [BUTTON_INSTALL, BUTTON_SETTINGS]);
  assert.deepEqual(stub.external, ['https://github.com/wb-lsp/wb-lsp#install']);
  const output = stub.outputs[0]?.lines.join('\n') ?? '';
  assert.match(output, /Tried:\n {2}\/usr\/local\/bin\/wb-lsp\n {2}\/home\/me\/\.cargo\/bin\/wb-lsp/);
  assert.match(output, /cargo install --git https:\/\/github\.com\/wb-lsp\/wb-lsp --locked wb-lsp/);

  stub.answer = BUTTON_SETTINGS;
  await stub.commands.get('wb-lsp.restartServer')?.();
  await settle();
  assert.deepEqual(
    stub.executed.find((call) => call.command === 'workbench.action.openSettings'),
    { command: 'workbench.action.openSettings', args: ['wb-lsp.server.path'] },
  );
});

test('a wrong wb-lsp.server.path is reported, and fixing it starts the server', async () => {
  stub.configuration['wb-lsp.server.path'] = '~/bin/wb-lsp';
  await activate();
  await settle();
  assert.equal(clients.length, 0);
  assert.match(stub.messages[0]?.message ?? '', /wb-lsp\.server\.path is "~\/bin\/wb-lsp", but no executable wb-lsp/);

  executables.add('/opt/wb-lsp/bin/wb-lsp');
  stub.changeConfiguration({ 'wb-lsp.server.path': '/opt/wb-lsp/bin/wb-lsp' });
  await settle();
  await settle();
  assert.equal(clients.length, 1);
  assert.equal(clients[0]?.setup.serverPath, '/opt/wb-lsp/bin/wb-lsp');
  assert.equal(controller.status.state, 'running');
});

test('changing the server path restarts the server; other settings do not', async () => {
  executables.add('/opt/other/wb-lsp');
  await activate();
  stub.changeConfiguration({ 'wb-lsp.severity': { 'unknown-model': 'off' } });
  stub.changeConfiguration({ 'wb-lsp.trace.server': 'verbose' });
  await settle();
  assert.equal(clients.length, 1);
  stub.changeConfiguration({ 'wb-lsp.server.path': '/opt/other/wb-lsp' });
  await settle();
  await settle();
  assert.equal(clients.length, 2);
  assert.equal(clients[0]?.stopped, 1);
  assert.equal(clients[0]?.disposed, 1);
  assert.equal(clients[1]?.setup.serverPath, '/opt/other/wb-lsp');
  assert.equal(controller.status.state, 'running');
});

test('Check Workspace runs workbench.checkWorkspace and shows the Problems view', async () => {
  await activate();
  await stub.commands.get('wb-lsp.checkWorkspace')?.();
  assert.deepEqual(clients[0]?.requests, [{ command: 'workbench.checkWorkspace', args: [] }]);
  assert.ok(stub.executed.some((call) => call.command === 'workbench.actions.view.problems'));
  assert.deepEqual(stub.messages.at(-1), {
    level: 'information',
    message: 'Workbench: checked 4 packages; the problems are in the Problems view.',
    items: [],
  });
});

test('Check Workspace starts the server when it is not running yet', async () => {
  stub.files = [];
  await activate();
  assert.equal(clients.length, 0);
  await stub.commands.get('wb-lsp.checkWorkspace')?.();
  assert.equal(clients.length, 1);
  assert.deepEqual(clients[0]?.requests, [{ command: 'workbench.checkWorkspace', args: [] }]);
});

test('a failing server command is shown as an error', async () => {
  behaviour.answers['workbench.checkWorkspace'] = new Error('the worker pool stopped');
  await activate();
  await stub.commands.get('wb-lsp.checkWorkspace')?.();
  assert.deepEqual(stub.messages.at(-1), {
    level: 'error',
    message: 'Workbench: checking the workspace failed: the worker pool stopped',
    items: [],
  });
});

test('Migrate to Spec 1 sends the active manifest URI to workbench.migrate', async () => {
  await activate();
  stub.activeDocument = stub.document(MANIFEST);
  await stub.commands.get('wb-lsp.migrate')?.();
  assert.deepEqual(clients[0]?.requests, [
    { command: 'workbench.migrate', args: ['file:///work/repo/.workbenches/legacy/workbench.yml'] },
  ]);
  assert.deepEqual(stub.opened, ['file:///work/repo/.workbenches/legacy/workbench.yml']);
  assert.match(stub.messages.at(-1)?.message ?? '', /migrated to spec 1/);

  behaviour.answers['workbench.migrate'] = { migrated: false };
  await stub.commands.get('wb-lsp.migrate')?.();
  assert.match(stub.messages.at(-1)?.message ?? '', /nothing to migrate/);
});

test('a migration the editor did not apply says so, with the reason', async () => {
  behaviour.answers['workbench.migrate'] = { migrated: false, applied: false, failureReason: 'document changed' };
  await activate();
  stub.activeDocument = stub.document(MANIFEST);
  await stub.commands.get('wb-lsp.migrate')?.();
  assert.deepEqual(stub.messages.at(-1), {
    level: 'warning',
    message: 'Workbench: the migration was not applied: document changed',
    items: [],
  });
});

test('Migrate to Spec 1 from the explorer uses the clicked manifest', async () => {
  await activate();
  stub.activeDocument = stub.document(`${REPO}/README.md`, 'markdown');
  await stub.commands.get('wb-lsp.migrate')?.(Uri.file(`${REPO}/.workbenches/other/workbench.yml`));
  assert.deepEqual(clients[0]?.requests, [
    { command: 'workbench.migrate', args: ['file:///work/repo/.workbenches/other/workbench.yml'] },
  ]);
});

test('Migrate to Spec 1 needs a manifest', async () => {
  await activate();
  stub.activeDocument = stub.document(`${REPO}/config.yml`);
  await stub.commands.get('wb-lsp.migrate')?.();
  stub.activeDocument = undefined;
  await stub.commands.get('wb-lsp.migrate')?.();
  assert.deepEqual(clients[0]?.requests, []);
  assert.equal(stub.messages.length, 2);
  for (const message of stub.messages) {
    assert.equal(message.level, 'warning');
    assert.match(message.message, /open a manifest \(\.workbenches\/<name>\/workbench\.yml\)/);
  }
});

test('a refused migration is shown with the server\'s reason', async () => {
  behaviour.answers['workbench.migrate'] = new Error('the migrated manifest would not check cleanly');
  await activate();
  stub.activeDocument = stub.document(MANIFEST);
  await stub.commands.get('wb-lsp.migrate')?.();
  assert.deepEqual(stub.messages.at(-1), {
    level: 'error',
    message: 'Workbench: migration failed: the migrated manifest would not check cleanly',
    items: [],
  });
});

test('Restart Server stops the client and starts a new one; the status follows', async () => {
  await activate();
  const seen: string[] = [];
  const item = statusItem();
  const original = item.show.bind(item);
  item.show = () => {
    seen.push(item.text);
    original();
  };
  await stub.commands.get('wb-lsp.restartServer')?.();
  assert.equal(clients.length, 2);
  assert.equal(clients[0]?.stopped, 1);
  assert.equal(clients[1]?.started, 1);
  assert.deepEqual(seen, [
    '$(circle-slash) Workbench', // the old client stopping
    '$(circle-slash) Workbench', // stopped
    '$(sync~spin) Workbench', // starting
    '$(sync~spin) Workbench', // the new client reports starting
    '$(check) Workbench', // running
  ]);
});

test('a server that stopped (crashed) shows as stopped and the next command restarts it', async () => {
  await activate();
  clients[0]?.crash();
  assert.deepEqual(controller.status, { state: 'stopped' });
  assert.equal(statusItem().command, 'wb-lsp.restartServer');
  await stub.commands.get('wb-lsp.checkWorkspace')?.();
  assert.equal(clients.length, 2);
  assert.deepEqual(clients[1]?.requests, [{ command: 'workbench.checkWorkspace', args: [] }]);
});

test('a server that fails to start shows an error with its reason', async () => {
  behaviour.startError = new Error('spawn EACCES');
  stub.answer = BUTTON_OUTPUT;
  await activate();
  await settle();
  assert.deepEqual(controller.status, { state: 'error', message: 'wb-lsp failed to start: spawn EACCES' });
  assert.deepEqual(stub.messages[0], {
    level: 'error',
    message: 'Workbench: wb-lsp failed to start: spawn EACCES',
    items: [BUTTON_OUTPUT],
  });
  assert.equal(stub.outputs[0]?.shown, 1, 'Show Output opened the channel');
  assert.equal(clients[0]?.disposed, 1);
});

test('Show Output shows the channel', async () => {
  await activate();
  await stub.commands.get('wb-lsp.showOutput')?.();
  assert.equal(stub.outputs[0]?.shown, 1);
});

test('disposing stops the server and removes the commands, the item and the channel', async () => {
  await activate();
  await controller.dispose();
  assert.equal(clients[0]?.stopped, 1);
  assert.equal(stub.commands.size, 0);
  assert.equal(statusItem().disposed, true);
  assert.equal(stub.outputs[0]?.disposed, true);
  assert.equal(stub.onDidChangeConfiguration.listenerCount, 0);
  assert.equal(stub.onDidOpenTextDocument.listenerCount, 0);
  assert.ok(new Disposable(() => undefined));
});
