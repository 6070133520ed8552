/**
 * The settings under `wb-lsp.*`, the old `workbench.*` keys read as a fallback (every scope), the one-time
 * notice, and the order the controller finds the server in (setting, bundled, PATH), with its output line.
 */
import './register';
import { strict as assert } from 'node:assert';
import { beforeEach, test } from 'node:test';
import type * as vscode from 'vscode';
import {
  BUTTON_OPEN_SETTINGS,
  chooseSetting,
  legacyUsage,
  MOVED_NOTICE_STATE,
  movedNotice,
  readSetting,
} from '../src/config';
import { WorkbenchController, type MachineContext } from '../src/controller';
import { FakeClient, type Behaviour } from './fake-client';
import { Memento, stub } from './vscode-stub';

const REPO = '/work/repo';
const EXTENSION = '/home/me/.vscode/extensions/wb-lsp.workbench-0.2.0-linux-x64';
const BUNDLED = `${EXTENSION}/server/wb-lsp`;
const NOTICE =
  'Workbench settings moved to wb-lsp.*: workbench.server.path → wb-lsp.server.path. The old keys still work.';

let clients: FakeClient[];
let behaviour: Behaviour;
let executables: Set<string>;
let globalState: Memento;
let controller: WorkbenchController;

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

async function activate(target = controller): Promise<void> {
  await target.activate({
    subscriptions: [],
    globalState,
    extensionPath: EXTENSION,
    extension: { packageJSON: { version: '0.2.0' } },
  } as unknown as vscode.ExtensionContext);
}

function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function output(): string[] {
  return stub.outputs[0]?.lines ?? [];
}

beforeEach(() => {
  stub.reset();
  clients = [];
  behaviour = { answers: {} };
  executables = new Set(['/home/me/.cargo/bin/wb-lsp']);
  globalState = new Memento();
  stub.workspaceFolders = [REPO];
  stub.files = [`${REPO}/.workbenches/demo/workbench.yml`];
  controller = newController();
});

test('chooseSetting: the new key in any scope, else the old key in any scope, else the default', () => {
  assert.deepEqual(chooseSetting('severity', { defaultValue: {} }, undefined), {
    value: {},
    name: 'wb-lsp.severity',
    origin: 'default',
  });
  assert.deepEqual(chooseSetting('severity', { defaultValue: {} }, { workspaceValue: { a: 'off' } }), {
    value: { a: 'off' },
    name: 'workbench.severity',
    origin: 'legacy',
  });
  // The new key in the user settings wins over the old one in a folder.
  assert.deepEqual(
    chooseSetting('severity', { defaultValue: {}, globalValue: { b: 'hint' } }, { workspaceFolderValue: { a: 'off' } }),
    { value: { b: 'hint' }, name: 'wb-lsp.severity', origin: 'setting' },
  );
  // Within one key: folder, then workspace, then user.
  assert.equal(
    chooseSetting('runTimeWarnings', undefined, { globalValue: true, workspaceValue: false, workspaceFolderValue: true })
      .value,
    true,
  );
  assert.equal(chooseSetting('runTimeWarnings', undefined, { globalValue: true, workspaceValue: false }).value, false);
});

test('the server path is read from the user settings only, under the new key and the old one', () => {
  const workspace = { workspaceValue: '/repo/evil', workspaceFolderValue: '/repo/evil' };
  assert.deepEqual(chooseSetting('server.path', { defaultValue: '', ...workspace }, workspace), {
    value: '',
    name: 'wb-lsp.server.path',
    origin: 'default',
  });
  assert.deepEqual(chooseSetting('server.path', { defaultValue: '', ...workspace }, { globalValue: '/opt/wb/wb-lsp' }), {
    value: '/opt/wb/wb-lsp',
    name: 'workbench.server.path',
    origin: 'legacy',
  });
  stub.workspaceConfiguration['wb-lsp.server.path'] = '/repo/evil';
  stub.folderConfiguration['workbench.server.path'] = '/repo/evil';
  assert.deepEqual(readSetting('server.path'), { value: '', name: 'wb-lsp.server.path', origin: 'default' });
  assert.deepEqual(legacyUsage(), { used: [], ignored: [] });
  stub.configuration['wb-lsp.server.path'] = '/opt/wb/wb-lsp';
  assert.equal(readSetting('server.path').value, '/opt/wb/wb-lsp');
});

test('the new keys are read, in every scope', () => {
  assert.deepEqual(readSetting('severity'), { value: {}, name: 'wb-lsp.severity', origin: 'default' });
  stub.configuration['wb-lsp.severity'] = { 'unknown-model': 'hint' };
  assert.deepEqual(readSetting('severity').value, { 'unknown-model': 'hint' });
  stub.workspaceConfiguration['wb-lsp.severity'] = { 'unknown-model': 'off' };
  assert.deepEqual(readSetting('severity').value, { 'unknown-model': 'off' });
  stub.folderConfiguration['wb-lsp.severity'] = { 'unknown-model': 'error' };
  assert.deepEqual(readSetting('severity'), {
    value: { 'unknown-model': 'error' },
    name: 'wb-lsp.severity',
    origin: 'setting',
  });
  // Read for the first workspace folder, so folder settings count.
  assert.ok(stub.configurationReads.some((read) => read.section === 'wb-lsp' && read.scope === REPO));
});

for (const scope of ['user', 'workspace', 'folder'] as const) {
  test(`an old key in the ${scope} settings is read when the new key is not set`, async () => {
    stub.changeConfiguration({ 'workbench.modelCatalog': 'ci/models.json', 'workbench.runTimeWarnings': false }, scope);
    assert.deepEqual(readSetting('modelCatalog'), {
      value: 'ci/models.json',
      name: 'workbench.modelCatalog',
      origin: 'legacy',
    });
    assert.deepEqual(legacyUsage(), { used: ['modelCatalog', 'runTimeWarnings'], ignored: [] });
    await activate();
    assert.deepEqual(clients[0]?.setup.settings(), {
      modelCatalog: '/work/repo/ci/models.json',
      severity: {},
      runTimeWarnings: false,
      inlayHints: { context: true, route: true, env: true },
      format: { fieldOrder: false },
    });
    // The new key, once set (in any scope), wins.
    stub.changeConfiguration({ 'wb-lsp.runTimeWarnings': true }, scope === 'user' ? 'folder' : 'user');
    assert.equal(clients[0]?.setup.settings().runTimeWarnings, true);
    assert.deepEqual(legacyUsage(), { used: ['modelCatalog'], ignored: ['runTimeWarnings'] });
  });
}

test('the old workbench.server.path still picks the server, and the output says it is the old name', async () => {
  executables.add('/opt/wb/wb-lsp');
  stub.configuration['workbench.server.path'] = '/opt/wb/wb-lsp';
  await activate();
  assert.equal(clients[0]?.setup.serverPath, '/opt/wb/wb-lsp');
  assert.ok(
    output().includes(
      'The old setting workbench.server.path is in use: rename it to wb-lsp.server.path (the old key still works).',
    ),
    output().join('\n'),
  );
  assert.ok(
    output().includes(
      'Using wb-lsp from the setting workbench.server.path (the old name of wb-lsp.server.path): /opt/wb/wb-lsp',
    ),
  );
});

test('the notice about the moved settings is shown once, and its button opens the extension\'s settings', async () => {
  executables.add('/opt/wb/wb-lsp');
  stub.configuration['workbench.server.path'] = '/opt/wb/wb-lsp';
  stub.answer = BUTTON_OPEN_SETTINGS;
  await activate();
  await settle();
  assert.deepEqual(stub.messages, [{ level: 'information', message: NOTICE, items: [BUTTON_OPEN_SETTINGS] }]);
  assert.equal(movedNotice(['server.path']), NOTICE);
  assert.deepEqual(
    stub.executed.filter((call) => call.command === 'workbench.action.openSettings'),
    [{ command: 'workbench.action.openSettings', args: ['@ext:wb-lsp.workbench'] }],
  );
  assert.equal(globalState.get(MOVED_NOTICE_STATE), true);

  // Another old key in this session, a restart: no second notice; the output says it at every start.
  stub.changeConfiguration({ 'workbench.severity': { 'unknown-model': 'off' } });
  await stub.commands.get('wb-lsp.restartServer')?.();
  await settle();
  assert.equal(stub.messages.length, 1);
  assert.equal(
    output().filter((line) => line.startsWith('The old setting workbench.server.path is in use')).length,
    2,
  );

  // The next window on this machine: globalState remembers.
  await controller.dispose();
  stub.reset();
  stub.workspaceFolders = [REPO];
  stub.files = [`${REPO}/.workbenches/demo/workbench.yml`];
  stub.configuration['workbench.server.path'] = '/opt/wb/wb-lsp';
  controller = newController();
  await activate();
  await settle();
  assert.deepEqual(stub.messages, []);
  assert.equal(clients.at(-1)?.setup.serverPath, '/opt/wb/wb-lsp');
});

test('the notice lists every old key in use, and none is shown without old keys', async () => {
  await activate();
  await settle();
  assert.deepEqual(stub.messages, []);
  assert.equal(globalState.get(MOVED_NOTICE_STATE), undefined);
  // An old key written later (a settings sync, a pulled .vscode/settings.json) brings the notice.
  stub.changeConfiguration({ 'workbench.trace.server': 'verbose', 'workbench.severity': {} }, 'workspace');
  await settle();
  assert.deepEqual((stub.messages as Array<{ message: string }>).map((message) => message.message), [
    'Workbench settings moved to wb-lsp.*: workbench.trace.server → wb-lsp.trace.server, ' +
      'workbench.severity → wb-lsp.severity. The old keys still work.',
  ]);
  // vscode-languageclient reads wb-lsp.trace.server itself; the old key is handed to the client.
  assert.equal(clients[0]?.setup.legacyTrace(), 'verbose');
  stub.changeConfiguration({ 'wb-lsp.trace.server': 'off' });
  assert.equal(clients[0]?.setup.legacyTrace(), undefined);
});

test('an old key whose new key is set too gives no notice, only an output line', async () => {
  stub.configuration['workbench.severity'] = { 'unknown-model': 'off' };
  stub.configuration['wb-lsp.severity'] = { 'unknown-model': 'hint' };
  await activate();
  await settle();
  assert.deepEqual(stub.messages, []);
  assert.ok(output().includes('The old setting workbench.severity is ignored: wb-lsp.severity is set, and wins.'));
  assert.deepEqual(clients[0]?.setup.settings().severity, { 'unknown-model': 'hint' });
});

test('changing the old or the new server path restarts the server', async () => {
  executables.add('/opt/a/wb-lsp');
  executables.add('/opt/b/wb-lsp');
  await activate();
  stub.changeConfiguration({ 'workbench.server.path': '/opt/a/wb-lsp' });
  await settle();
  await settle();
  assert.equal(clients.length, 2);
  assert.equal(clients[1]?.setup.serverPath, '/opt/a/wb-lsp');
  assert.ok(output().includes('workbench.server.path changed: restarting the server.'));
  stub.changeConfiguration({ 'wb-lsp.server.path': '/opt/b/wb-lsp' });
  await settle();
  await settle();
  assert.equal(clients.length, 3);
  assert.equal(clients[2]?.setup.serverPath, '/opt/b/wb-lsp');
  assert.ok(output().includes('wb-lsp.server.path changed: restarting the server.'));
});

test('the server is found in the setting, then bundled in the extension, then on PATH', async () => {
  executables.add(BUNDLED);
  executables.add('/opt/wb/wb-lsp');

  // Bundled beats PATH.
  await activate();
  assert.equal(clients[0]?.setup.serverPath, BUNDLED);
  assert.ok(
    output().includes(`Using the bundled wb-lsp: ${BUNDLED} (extension 0.2.0; wb-lsp.server.path is empty)`),
    output().join('\n'),
  );

  // The setting beats the bundled server.
  stub.changeConfiguration({ 'wb-lsp.server.path': '/opt/wb/wb-lsp' });
  await settle();
  await settle();
  assert.equal(clients[1]?.setup.serverPath, '/opt/wb/wb-lsp');
  assert.equal(output().at(-1), 'Using wb-lsp from the setting wb-lsp.server.path: /opt/wb/wb-lsp');

  // No bundled server (the plain package): PATH.
  executables.delete(BUNDLED);
  stub.changeConfiguration({ 'wb-lsp.server.path': undefined });
  await settle();
  await settle();
  assert.equal(clients[2]?.setup.serverPath, '/home/me/.cargo/bin/wb-lsp');
  assert.equal(
    output().at(-1),
    `Using wb-lsp from PATH: /home/me/.cargo/bin/wb-lsp (wb-lsp.server.path is empty and there is no bundled server at ${BUNDLED})`,
  );
});

test('with nothing found, the bundled path is the first place tried', async () => {
  executables.clear();
  await activate();
  await settle();
  assert.equal(clients.length, 0);
  assert.match(stub.messages[0]?.message ?? '', /wb-lsp was not found on PATH \(and this extension bundles none\)/);
  assert.match(output().join('\n'), new RegExp(`Tried:\\n {2}${BUNDLED.replace(/[.]/g, '\\.')}\\n {2}/usr/local/bin/wb-lsp`));
});
