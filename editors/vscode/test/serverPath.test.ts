import './register';
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import {
  describeResolution,
  INSTALL_INSTRUCTIONS,
  missingServerMessage,
  resolveServerPath,
  type ResolveContext,
} from '../src/serverPath';

const SETTING = 'wb-lsp.server.path';

function posix(executables: string[], overrides: Partial<ResolveContext> = {}): ResolveContext {
  const files = new Set(executables);
  return {
    platform: 'linux',
    env: { PATH: '/usr/local/bin:/usr/bin:/home/me/.cargo/bin' },
    homedir: '/home/me',
    workspaceFolders: ['/work/repo'],
    isExecutable: (file) => files.has(file),
    ...overrides,
  };
}

test('an empty setting finds wb-lsp on PATH, first directory first', () => {
  assert.deepEqual(resolveServerPath('', posix(['/home/me/.cargo/bin/wb-lsp'])), {
    kind: 'found',
    path: '/home/me/.cargo/bin/wb-lsp',
    source: 'path', settingName: SETTING,
  });
  assert.deepEqual(resolveServerPath(undefined, posix(['/usr/bin/wb-lsp', '/home/me/.cargo/bin/wb-lsp'])), {
    kind: 'found',
    path: '/usr/bin/wb-lsp',
    source: 'path', settingName: SETTING,
  });
  assert.deepEqual(resolveServerPath('   ', posix(['/usr/bin/wb-lsp'])).kind, 'found');
});

test('wb-lsp missing from PATH is reported with every place tried', () => {
  const resolution = resolveServerPath('', posix([]));
  assert.deepEqual(resolution, {
    kind: 'missing',
    source: 'path', settingName: SETTING,
    tried: ['/usr/local/bin/wb-lsp', '/usr/bin/wb-lsp', '/home/me/.cargo/bin/wb-lsp'],
  });
  const empty = resolveServerPath('', posix([], { env: {} }));
  assert.deepEqual(empty, { kind: 'missing', source: 'path', settingName: SETTING, tried: [] });
});

test('the setting wins over PATH and expands ~, ${userHome} and ${workspaceFolder}', () => {
  const context = posix([
    '/usr/bin/wb-lsp',
    '/opt/wb/wb-lsp',
    '/home/me/bin/wb-lsp',
    '/work/repo/target/debug/wb-lsp',
  ]);
  assert.deepEqual(resolveServerPath('/opt/wb/wb-lsp', context), {
    kind: 'found',
    path: '/opt/wb/wb-lsp',
    source: 'setting', settingName: SETTING,
  });
  assert.deepEqual(resolveServerPath('~/bin/wb-lsp', context), { kind: 'found', path: '/home/me/bin/wb-lsp', source: 'setting', settingName: SETTING });
  assert.deepEqual(resolveServerPath('${userHome}/bin/wb-lsp', context), {
    kind: 'found',
    path: '/home/me/bin/wb-lsp',
    source: 'setting', settingName: SETTING,
  });
  assert.deepEqual(resolveServerPath('${workspaceFolder}/target/debug/wb-lsp', context), {
    kind: 'found',
    path: '/work/repo/target/debug/wb-lsp',
    source: 'setting', settingName: SETTING,
  });
  // Relative with a directory part: from the first workspace folder.
  assert.deepEqual(resolveServerPath('./target/debug/wb-lsp', context), {
    kind: 'found',
    path: '/work/repo/target/debug/wb-lsp',
    source: 'setting', settingName: SETTING,
  });
  assert.deepEqual(resolveServerPath('target/debug/wb-lsp', context), {
    kind: 'found',
    path: '/work/repo/target/debug/wb-lsp',
    source: 'setting', settingName: SETTING,
  });
});

test('a bare name in the setting is looked up on PATH', () => {
  assert.deepEqual(resolveServerPath('wb-lsp-nightly', posix(['/usr/bin/wb-lsp', '/usr/bin/wb-lsp-nightly'])), {
    kind: 'found',
    path: '/usr/bin/wb-lsp-nightly',
    source: 'setting', settingName: SETTING,
  });
  const missing = resolveServerPath('wb-lsp-nightly', posix(['/usr/bin/wb-lsp']));
  assert.equal(missing.kind, 'missing');
  assert.equal(missing.source, 'setting');
});

test('a setting that names nothing executable does not fall back to PATH', () => {
  const resolution = resolveServerPath('/opt/missing/wb-lsp', posix(['/usr/bin/wb-lsp']));
  assert.deepEqual(resolution, {
    kind: 'missing',
    source: 'setting', settingName: SETTING,
    configured: '/opt/missing/wb-lsp',
    tried: ['/opt/missing/wb-lsp'],
  });
});

test('on Windows, PATH is searched with PATHEXT', () => {
  const context: ResolveContext = {
    platform: 'win32',
    env: { Path: 'C:\\Tools;C:\\Users\\me\\.cargo\\bin', PATHEXT: '.COM;.EXE;.BAT' },
    homedir: 'C:\\Users\\me',
    workspaceFolders: ['C:\\work\\repo'],
    isExecutable: (file) => file === 'C:\\Users\\me\\.cargo\\bin\\wb-lsp.exe' || file === 'C:\\work\\repo\\bin\\wb-lsp.exe',
  };
  assert.deepEqual(resolveServerPath('', context), {
    kind: 'found',
    path: 'C:\\Users\\me\\.cargo\\bin\\wb-lsp.exe',
    source: 'path', settingName: SETTING,
  });
  assert.deepEqual(resolveServerPath('bin\\wb-lsp', context), {
    kind: 'found',
    path: 'C:\\work\\repo\\bin\\wb-lsp.exe',
    source: 'setting', settingName: SETTING,
  });
});

test('the missing-server message says how to install wb-lsp', () => {
  const fromPath = missingServerMessage({ kind: 'missing', source: 'path', settingName: SETTING, tried: ['/usr/bin/wb-lsp'] });
  assert.match(fromPath.message, /wb-lsp was not found on PATH/);
  assert.match(fromPath.message, /cargo install --path crates\/wb-lsp/);
  assert.match(fromPath.message, /releases/);
  assert.match(fromPath.message, /wb-lsp\.server\.path/);
  assert.match(INSTALL_INSTRUCTIONS, /set wb-lsp\.server\.path/);
  assert.match(fromPath.details, /Tried:\n {2}\/usr\/bin\/wb-lsp/);
  assert.ok(fromPath.details.endsWith(INSTALL_INSTRUCTIONS));
  assert.match(INSTALL_INSTRUCTIONS, /cargo install --path crates\/wb-lsp/);
  assert.match(INSTALL_INSTRUCTIONS, /cargo install --git https:\/\/github\.com\/wb-lsp\/wb-lsp --locked wb-lsp/);
  assert.match(INSTALL_INSTRUCTIONS, /releases/);

  const fromSetting = missingServerMessage({
    kind: 'missing',
    source: 'setting', settingName: SETTING,
    configured: '~/wb',
    tried: ['/home/me/wb'],
  });
  assert.match(fromSetting.message, /wb-lsp\.server\.path is "~\/wb"/);
  assert.match(fromSetting.details, /\/home\/me\/wb/);
  // Read from the old key: the message names the key the value came from.
  const fromOldSetting = missingServerMessage({
    kind: 'missing',
    source: 'setting',
    settingName: 'workbench.server.path',
    configured: '~/wb',
    tried: ['/home/me/wb'],
  });
  assert.match(fromOldSetting.message, /^Workbench: workbench\.server\.path is "~\/wb", but no executable wb-lsp is there/);
});

const BUNDLED = '/ext/wb-lsp.workbench-0.1.0-linux-x64/server/wb-lsp';

test('the order is: the setting, then the bundled server, then PATH', () => {
  const all = posix([BUNDLED, '/usr/bin/wb-lsp', '/opt/wb/wb-lsp'], { bundled: BUNDLED });
  assert.deepEqual(resolveServerPath({ value: '/opt/wb/wb-lsp', name: SETTING }, all), {
    kind: 'found',
    path: '/opt/wb/wb-lsp',
    source: 'setting',
    settingName: SETTING,
  });
  assert.deepEqual(resolveServerPath({ value: '', name: SETTING }, all), {
    kind: 'found',
    path: BUNDLED,
    source: 'bundled',
    settingName: SETTING,
  });
  // A plain package has no server/ directory: PATH, and the line says why.
  const plain = posix(['/usr/bin/wb-lsp'], { bundled: BUNDLED });
  assert.deepEqual(resolveServerPath(undefined, plain), {
    kind: 'found',
    path: '/usr/bin/wb-lsp',
    source: 'path',
    settingName: SETTING,
    bundled: BUNDLED,
  });
  // Nothing anywhere: the bundled file is the first place tried.
  assert.deepEqual(resolveServerPath('', posix([], { bundled: BUNDLED })), {
    kind: 'missing',
    source: 'path',
    settingName: SETTING,
    tried: [BUNDLED, '/usr/local/bin/wb-lsp', '/usr/bin/wb-lsp', '/home/me/.cargo/bin/wb-lsp'],
  });
  // A setting that names nothing is an error, not a reason to take the bundled server.
  assert.equal(resolveServerPath('/opt/missing/wb-lsp', all).kind, 'missing');
});

test('the output line says which server is used and why', () => {
  const all = posix([BUNDLED, '/usr/bin/wb-lsp', '/opt/wb/wb-lsp'], { bundled: BUNDLED });
  const line = (setting: { value: string; name: string }, context = all, version?: string): string => {
    const resolution = resolveServerPath(setting, context);
    assert.equal(resolution.kind, 'found');
    return describeResolution(resolution, version);
  };
  assert.equal(
    line({ value: '/opt/wb/wb-lsp', name: SETTING }),
    'Using wb-lsp from the setting wb-lsp.server.path: /opt/wb/wb-lsp',
  );
  assert.equal(
    line({ value: '/opt/wb/wb-lsp', name: 'workbench.server.path' }),
    'Using wb-lsp from the setting workbench.server.path (the old name of wb-lsp.server.path): /opt/wb/wb-lsp',
  );
  assert.equal(
    line({ value: '', name: SETTING }, all, '0.1.0'),
    `Using the bundled wb-lsp: ${BUNDLED} (extension 0.1.0; wb-lsp.server.path is empty)`,
  );
  assert.equal(
    line({ value: '', name: SETTING }, posix(['/usr/bin/wb-lsp'], { bundled: BUNDLED })),
    `Using wb-lsp from PATH: /usr/bin/wb-lsp (wb-lsp.server.path is empty and there is no bundled server at ${BUNDLED})`,
  );
  assert.equal(
    line({ value: '', name: SETTING }, posix(['/usr/bin/wb-lsp'])),
    'Using wb-lsp from PATH: /usr/bin/wb-lsp (wb-lsp.server.path is empty and there is no bundled server)',
  );
});
