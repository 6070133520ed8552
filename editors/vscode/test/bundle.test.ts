/**
 * The bundle that ships (dist/extension.js, built by `npm test` before the tests run) loads under VS Code's
 * module name, exports activate/deactivate, and wires the controller: commands, the missing-server message.
 */
import './register';
import { strict as assert } from 'node:assert';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

test('the bundle prefers the server bundled in the extension, with no wb-lsp on PATH', { skip: process.platform === 'win32' }, async () => {
  const extension = require(bundle) as Extension;
  const empty = mkdtempSync(join(tmpdir(), 'wb-vscode-path-'));
  const extensionPath = mkdtempSync(join(tmpdir(), 'wb-vscode-extension-'));
  const server = join(extensionPath, 'server', 'wb-lsp');
  mkdirSync(join(extensionPath, 'server'));
  // Not a language server: the test is about which file is chosen, before the client runs it.
  writeFileSync(server, '#!/bin/sh\nexit 3\n');
  chmodSync(server, 0o755);
  const savedPath = process.env.PATH;
  process.env.PATH = empty;
  try {
    stub.reset();
    stub.workspaceFolders = ['/work/repo'];
    stub.files = ['/work/repo/.workbenches/demo/workbench.yml'];
    await extension
      .activate({
        subscriptions: [],
        extensionPath,
        extension: { packageJSON: { version: '0.1.0' } },
      } as unknown as vscode.ExtensionContext)
      .catch(() => undefined); // the stub cannot run vscode-languageclient itself
    const lines = stub.outputs.find((channel) => channel.name === 'Workbench')?.lines ?? [];
    assert.ok(
      lines.includes(`Using the bundled wb-lsp: ${server} (extension 0.1.0; wb-lsp.server.path is empty)`),
      lines.join('\n'),
    );
    assert.ok(!stub.messages.some((message) => /was not found/.test(message.message)));
    await extension.deactivate().catch(() => undefined);
  } finally {
    process.env.PATH = savedPath;
    rmSync(empty, { recursive: true, force: true });
    rmSync(extensionPath, { recursive: true, force: true });
  }
});
