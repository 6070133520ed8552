import './register';
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { expandPath, toServerSettings, type PathContext } from '../src/settings';

const context: PathContext = { homedir: '/home/me', workspaceFolder: '/work/repo', platform: 'linux' };

test('the defaults are what the server assumes when nothing is set', () => {
  assert.deepEqual(toServerSettings({}, context), { modelCatalog: null, severity: {}, runTimeWarnings: true, inlayHints: { context: true, route: true, env: true }, format: { fieldOrder: false } });
  assert.deepEqual(toServerSettings(undefined, context), { modelCatalog: null, severity: {}, runTimeWarnings: true, inlayHints: { context: true, route: true, env: true }, format: { fieldOrder: false } });
  assert.deepEqual(toServerSettings(null, context), { modelCatalog: null, severity: {}, runTimeWarnings: true, inlayHints: { context: true, route: true, env: true }, format: { fieldOrder: false } });
  assert.deepEqual(toServerSettings({ modelCatalog: '  ' }, context).modelCatalog, null);
});

test('only the server settings are sent, not VS Code\'s own workbench.* settings or the client\'s', () => {
  const raw = {
    colorTheme: 'Default Dark+',
    editor: { showTabs: 'multiple' },
    server: { path: '/opt/wb-lsp' },
    trace: { server: 'verbose' },
    modelCatalog: '/etc/models.json',
    severity: { 'unknown-model': 'hint', 'spec-0-manifest': 'off' },
    runTimeWarnings: false,
    inlayHints: { context: false, route: 'yes' },
  };
  assert.deepEqual(toServerSettings(raw, context), {
    modelCatalog: '/etc/models.json',
    severity: { 'unknown-model': 'hint', 'spec-0-manifest': 'off' },
    runTimeWarnings: false,
    // A kind switched off stays off; a value that is not a boolean, or a kind not set, is on.
    inlayHints: { context: false, route: true, env: true },
    format: { fieldOrder: false },
  });
});

test('the model catalog path is expanded and made absolute', () => {
  assert.equal(toServerSettings({ modelCatalog: '~/models.json' }, context).modelCatalog, '/home/me/models.json');
  assert.equal(
    toServerSettings({ modelCatalog: '${workspaceFolder}/ci/models.json' }, context).modelCatalog,
    '/work/repo/ci/models.json',
  );
  assert.equal(toServerSettings({ modelCatalog: 'models.json' }, context).modelCatalog, '/work/repo/models.json');
  assert.equal(toServerSettings({ modelCatalog: './ci/models.json' }, context).modelCatalog, '/work/repo/ci/models.json');
  // No workspace folder: left as written (the server reports a catalog it cannot read).
  assert.equal(
    toServerSettings({ modelCatalog: 'models.json' }, { ...context, workspaceFolder: undefined }).modelCatalog,
    'models.json',
  );
});

test('values of the wrong type fall back to the defaults; unknown levels reach the server', () => {
  assert.deepEqual(
    toServerSettings({ modelCatalog: 42, severity: ['unknown-model'], runTimeWarnings: 'no' }, context),
    { modelCatalog: null, severity: {}, runTimeWarnings: true, inlayHints: { context: true, route: true, env: true }, format: { fieldOrder: false } },
  );
  assert.deepEqual(toServerSettings({ severity: { 'unknown-model': 3, 'no-such-code': 'loud' } }, context).severity, {
    'no-such-code': 'loud',
  });
});

test('expandPath', () => {
  assert.equal(expandPath('~', context), '/home/me');
  assert.equal(expandPath('~/x', context), '/home/me/x');
  assert.equal(expandPath('${userHome}/x', context), '/home/me/x');
  assert.equal(expandPath('${workspaceFolder}/x', context), '/work/repo/x');
  assert.equal(expandPath('a/b', context), '/work/repo/a/b');
  assert.equal(expandPath('wb-lsp', context), 'wb-lsp');
  assert.equal(expandPath('/abs/x', context), '/abs/x');
  assert.equal(
    expandPath('~\\bin\\wb-lsp.exe', { homedir: 'C:\\Users\\me', workspaceFolder: 'C:\\r', platform: 'win32' }),
    'C:\\Users\\me\\bin\\wb-lsp.exe',
  );
});

test('the standard field order is sent only when switched on with a boolean', () => {
  assert.deepEqual(toServerSettings({ format: { fieldOrder: true } }, context).format, { fieldOrder: true });
  assert.deepEqual(toServerSettings({ format: { fieldOrder: 'yes' } }, context).format, { fieldOrder: false });
  assert.deepEqual(toServerSettings({ format: true }, context).format, { fieldOrder: false });
});
