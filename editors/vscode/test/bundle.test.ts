/**
 * The bundle that ships (dist/extension.js, built by `npm test` before the tests run) loads under VS Code's
 * module name, exports activate/deactivate, and wires the controller: commands, the missing-server message.
 */
import './register';
import { strict as assert } from 'node:assert';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type * as vscode from 'vscode';
import { stub } from './vscode-stub';

const bundle = join(__dirname, '..', '..', 'dist', 'extension.js');

interface Extension {
  activate(context: vscode.ExtensionContext): Promise<void>;
  deactivate(): Promise<void>;
}

test('the bundle activates, registers the commands and reports a missing wb-lsp', async () => {
  assert.ok(existsSync(bundle), `${bundle} is missing: run \`npm run build\` (npm test does)`);
  const extension = require(bundle) as Extension;
  assert.equal(typeof extension.activate, 'function');
  assert.equal(typeof extension.deactivate, 'function');

  const empty = mkdtempSync(join(tmpdir(), 'wb-vscode-path-'));
  const savedPath = process.env.PATH;
  process.env.PATH = empty; // no wb-lsp anywhere
  try {
    stub.reset();
    stub.workspaceFolders = ['/work/repo'];
    stub.files = ['/work/repo/.workbenches/demo/workbench.yml'];
    stub.configuration = { 'wb-lsp.server.path': '' };
    const subscriptions: unknown[] = [];
    await extension.activate({ subscriptions } as unknown as vscode.ExtensionContext);
    assert.deepEqual([...stub.commands.keys()].sort(), [
      'wb-lsp.applyOutcome',
      'wb-lsp.cancelRun',
      'wb-lsp.checkWorkspace',
      'wb-lsp.dryRun',
      'wb-lsp.migrate',
      'wb-lsp.openArtifact',
      'wb-lsp.restartServer',
      'wb-lsp.run',
      'wb-lsp.showOutcome',
      'wb-lsp.showOutput',
      'wb-lsp.showRunOutput',
      'wb-lsp.smoke',
      'wb-lsp.viewOutcomeDiff',
    ]);
    assert.deepEqual([...stub.fileSystems.keys()], ['wb-outcome'], 'the read-only outcome documents');
    assert.match(stub.messages[0]?.message ?? '', /wb-lsp was not found on PATH/);
    assert.equal(stub.statusItems[0]?.text, '$(error) Workbench');
    assert.equal(subscriptions.length, 1);
    await extension.deactivate();
    assert.equal(stub.commands.size, 0);
    assert.equal(stub.fileSystems.size, 0);
  } finally {
    process.env.PATH = savedPath;
    rmSync(empty, { recursive: true, force: true });
  }
});
