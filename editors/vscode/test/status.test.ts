import './register';
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { COMMAND_RESTART_SERVER, COMMAND_SHOW_OUTPUT } from '../src/constants';
import { presentStatus, statusFromClientState } from '../src/status';

test('each state has its own look and click action', () => {
  assert.deepEqual(presentStatus({ state: 'starting' }), {
    text: '$(sync~spin) Workbench',
    tooltip: 'wb-lsp is starting',
    backgroundColor: undefined,
    command: COMMAND_SHOW_OUTPUT,
  });
  const running = presentStatus({ state: 'running', version: '0.1.0' });
  assert.equal(running.text, '$(check) Workbench');
  assert.match(running.tooltip, /wb-lsp 0\.1\.0 is running/);
  assert.equal(running.command, COMMAND_SHOW_OUTPUT);
  assert.match(presentStatus({ state: 'running' }).tooltip, /^wb-lsp is running/);
  const stopped = presentStatus({ state: 'stopped' });
  assert.equal(stopped.text, '$(circle-slash) Workbench');
  assert.equal(stopped.command, COMMAND_RESTART_SERVER);
  const error = presentStatus({ state: 'error', message: 'wb-lsp was not found' });
  assert.equal(error.text, '$(error) Workbench');
  assert.equal(error.backgroundColor, 'statusBarItem.errorBackground');
  assert.match(error.tooltip, /wb-lsp was not found/);
  assert.equal(error.command, COMMAND_SHOW_OUTPUT);
});

test('the language client states map to statuses', () => {
  // The numbers as vscode-languageclient declares them.
  const declarations = readFileSync(
    join(__dirname, '..', '..', 'node_modules', 'vscode-languageclient', 'lib', 'common', 'client.d.ts'),
    'utf8',
  );
  const match = /export declare enum State \{([^}]*)\}/.exec(declarations);
  assert.ok(match, 'vscode-languageclient declares enum State');
  const values = Object.fromEntries(
    [...(match[1] ?? '').matchAll(/(\w+)\s*=\s*(\d+)/g)].map((m) => [m[1] ?? '', Number(m[2])]),
  );
  assert.deepEqual(values, { Stopped: 1, Starting: 3, Running: 2 });

  assert.deepEqual(statusFromClientState(values.Starting ?? -1), { state: 'starting' });
  assert.deepEqual(statusFromClientState(values.Running ?? -1, '0.1.0'), { state: 'running', version: '0.1.0' });
  assert.deepEqual(statusFromClientState(values.Stopped ?? -1), { state: 'stopped' });
});
