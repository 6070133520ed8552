import './register';
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { INSTALL_INSTRUCTIONS, missingServerMessage, resolveServerPath, type ResolveContext } from '../src/serverPath';

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
    source: 'path',
  });
  assert.deepEqual(resolveServerPath(undefined, posix(['/usr/bin/wb-lsp', '/home/me/.cargo/bin/wb-lsp'])), {
    kind: 'found',
    path: '/usr/bin/wb-lsp',
    source: 'path',
  });
  assert.deepEqual(resolveServerPath('   ', posix(['/usr/bin/wb-lsp'])).kind, 'found');
});

test('wb-lsp missing from PATH is reported with every place tried', () => {
  const resolution = resolveServerPath('', posix([]));
  assert.deepEqual(resolution, {
    kind: 'missing',
    source: 'path',
    tried: ['/usr/local/bin/wb-lsp', '/usr/bin/wb-lsp', '/home/me/.cargo/bin/wb-lsp'],
  });
  const empty = resolveServerPath('', posix([], { env: {} }));
  assert.deepEqual(empty, { kind: 'missing', source: 'path', tried: [] });
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
    source: 'setting',
  });
  assert.deepEqual(resolveServerPath('~/bin/wb-lsp', context), { kind: 'found', path: '/home/me/bin/wb-lsp', source: 'setting' });
  assert.deepEqual(resolveServerPath('${userHome}/bin/wb-lsp', context), {
    kind: 'found',
    path: '/home/me/bin/wb-lsp',
    source: 'setting',
  });
  assert.deepEqual(resolveServerPath('${workspaceFolder}/target/debug/wb-lsp', context), {
    kind: 'found',
    path: '/work/repo/target/debug/wb-lsp',
    source: 'setting',
  });
  // Relative with a directory part: from the first workspace folder.
  assert.deepEqual(resolveServerPath('./target/debug/wb-lsp', context), {
    kind: 'found',
    path: '/work/repo/target/debug/wb-lsp',
    source: 'setting',
  });
  assert.deepEqual(resolveServerPath('target/debug/wb-lsp', context), {
    kind: 'found',
    path: '/work/repo/target/debug/wb-lsp',
    source: 'setting',
  });
});

test('a bare name in the setting is looked up on PATH', () => {
  assert.deepEqual(resolveServerPath('wb-lsp-nightly', posix(['/usr/bin/wb-lsp', '/usr/bin/wb-lsp-nightly'])), {
    kind: 'found',
    path: '/usr/bin/wb-lsp-nightly',
    source: 'setting',
  });
  const missing = resolveServerPath('wb-lsp-nightly', posix(['/usr/bin/wb-lsp']));
  assert.equal(missing.kind, 'missing');
  assert.equal(missing.source, 'setting');
});

test('a setting that names nothing executable does not fall back to PATH', () => {
  const resolution = resolveServerPath('/opt/missing/wb-lsp', posix(['/usr/bin/wb-lsp']));
  assert.deepEqual(resolution, {
    kind: 'missing',
    source: 'setting',
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
    source: 'path',
  });
  assert.deepEqual(resolveServerPath('bin\\wb-lsp', context), {
    kind: 'found',
    path: 'C:\\work\\repo\\bin\\wb-lsp.exe',
    source: 'setting',
  });
});

test('the missing-server message says how to install wb-lsp', () => {
  const fromPath = missingServerMessage({ kind: 'missing', source: 'path', tried: ['/usr/bin/wb-lsp'] });
  assert.match(fromPath.message, /wb-lsp was not found on PATH/);
  assert.match(fromPath.message, /cargo install --path crates\/wb-lsp/);
  assert.match(fromPath.message, /releases/);
  assert.match(fromPath.message, /workbench\.server\.path/);
  assert.match(fromPath.details, /Tried:\n {2}\/usr\/bin\/wb-lsp/);
  assert.ok(fromPath.details.endsWith(INSTALL_INSTRUCTIONS));
  assert.match(INSTALL_INSTRUCTIONS, /cargo install --path crates\/wb-lsp/);
  assert.match(INSTALL_INSTRUCTIONS, /cargo install --git https:\/\/github\.com\/wb-lsp\/wb-lsp --locked wb-lsp/);
  assert.match(INSTALL_INSTRUCTIONS, /releases/);

  const fromSetting = missingServerMessage({
    kind: 'missing',
    source: 'setting',
    configured: '~/wb',
    tried: ['/home/me/wb'],
  });
  assert.match(fromSetting.message, /workbench\.server\.path is "~\/wb"/);
  assert.match(fromSetting.details, /\/home\/me\/wb/);
});
