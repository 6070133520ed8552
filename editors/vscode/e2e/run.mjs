#!/usr/bin/env node
// The extension in a real VS Code: code-server (VS Code in the browser) with the packaged .vsix installed, a
// scratch repository with Workbench packages, headless Chromium driven with Playwright. Every scenario asserts
// what a person sees on the page (squiggles, the Problems view, the suggest widget, hovers, code lenses,
// notifications, the output panel, editors) and saves a screenshot.
//
// Run by crates/wb-lsp/tests/vscode_e2e.rs (cargo test -p wb-lsp --test vscode_e2e), with the setup of
// scripts/install-vscode-e2e.sh. The environment:
//   WB_LSP_BIN              the wb-lsp binary under test (required)
//   WB_VSCODE_CODE_SERVER   code-server's executable            } printed by scripts/install-vscode-e2e.sh,
//   WB_VSCODE_CHROMIUM      Chromium (default /usr/bin/chromium) } or read from $WB_VSCODE_E2E_DIR/env
//   WB_VSCODE_NODE_PATH     the node_modules holding playwright-core
//   WB_VSCODE_E2E_DIR       the cache (the extension's npm dependencies are kept there too)
//   WB_VSCODE_VSIX          a .vsix to install instead of building one from editors/vscode
//   WB_VSCODE_ARTIFACTS     where screenshots and logs go (default: target/vscode-e2e in the repository)
//   WB_VSCODE_ONLY          a comma-separated list of scenario names to run (for working on the test)
//   WB_VSCODE_TIMEOUT_MS    the longest wait for one thing on the page (default 30000)
// Exits 0 when every scenario passed, 1 otherwise (each scenario prints PASS or FAIL with what it saw).

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..', '..');
const TIMEOUT = Number(process.env.WB_VSCODE_TIMEOUT_MS ?? 30000);
const started = Date.now();

function log(message) {
  const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`[${seconds}s] ${message}\n`);
}

class Failure extends Error {}
function check(condition, message) {
  if (!condition) {
    throw new Failure(message);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------------------

function readEnvFile() {
  const dir = process.env.WB_VSCODE_E2E_DIR ?? path.join(os.homedir(), '.cache', 'wb-lsp', 'vscode-e2e');
  const file = path.join(dir, 'env');
  const values = {};
  if (fs.existsSync(file)) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const match = /^([A-Z0-9_]+)=(.*)$/.exec(line);
      if (match) {
        values[match[1]] = match[2];
      }
    }
  }
  return { dir, values };
}

const envFile = readEnvFile();
function setting(name, fallback) {
  const value = process.env[name] ?? envFile.values[name] ?? fallback;
  if (value === undefined || value === '') {
    console.error(`FAIL: ${name} is not set (run scripts/install-vscode-e2e.sh; it writes ${envFile.dir}/env)`);
    process.exit(2);
  }
  return value;
}

const WB_LSP_BIN = setting('WB_LSP_BIN');
const CODE_SERVER = setting('WB_VSCODE_CODE_SERVER');
const CHROMIUM = setting('WB_VSCODE_CHROMIUM', '/usr/bin/chromium');
const NODE_PATH = setting('WB_VSCODE_NODE_PATH');
const CACHE = setting('WB_VSCODE_E2E_DIR', envFile.dir);
const ARTIFACTS = path.resolve(process.env.WB_VSCODE_ARTIFACTS ?? path.join(REPO, 'target', 'vscode-e2e'));
const ONLY = (process.env.WB_VSCODE_ONLY ?? '').split(',').filter((name) => name.length > 0);
const { chromium } = createRequire(path.join(NODE_PATH, 'noop.js'))('playwright-core');

// The Node that runs this script (Node 24 from the cache) also builds the .vsix and runs code-server.
const NODE_BIN_DIR = path.dirname(process.execPath);

// ---------------------------------------------------------------------------------------------------------
// Processes: everything started here is killed by process group at the end, also on failure.
// ---------------------------------------------------------------------------------------------------------

const children = new Set();
function killAll() {
  for (const child of children) {
    try {
      process.kill(-child.pid, 'SIGKILL'); // the whole group: code-server, its file watcher, extension host, wb-lsp
    } catch {
      // already gone
    }
  }
  children.clear();
}
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    killAll();
    process.exit(130);
  });
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status ?? result.signal}):\n${result.stdout ?? ''}\n${result.stderr ?? ''}`,
    );
  }
  return result.stdout;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// The .vsix: given, or built from editors/vscode in a scratch copy whose node_modules is cached per lock file.
// ---------------------------------------------------------------------------------------------------------

function copyTree(from, to, skip) {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (skip.includes(entry.name)) {
      continue;
    }
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) {
      copyTree(source, target, []);
    } else if (entry.isFile()) {
      fs.copyFileSync(source, target);
    }
  }
}

/** The scratch copy the plain package was built in (the platform package is built there too). */
let lastBuild;

/** The linux-x64 package bundling `server` (scripts/package-platform.mjs, which verifies it). */
function buildPlatformVsix(work, server) {
  if (process.env.WB_VSCODE_PLATFORM_VSIX) {
    return path.resolve(process.env.WB_VSCODE_PLATFORM_VSIX);
  }
  check(lastBuild !== undefined, 'the plain package was not built here (WB_VSCODE_VSIX): set WB_VSCODE_PLATFORM_VSIX too');
  const out = path.join(work, 'workbench-linux-x64.vsix');
  log('packaging the linux-x64 extension with the server bundled (scripts/package-platform.mjs)');
  run(process.execPath, [path.join(lastBuild.copy, 'scripts', 'package-platform.mjs'), '--target', 'linux-x64', '--server', server, '--out', out], {
    cwd: lastBuild.copy,
    env: lastBuild.env,
  });
  return out;
}

function buildVsix(work) {
  if (process.env.WB_VSCODE_VSIX) {
    const given = path.resolve(process.env.WB_VSCODE_VSIX);
    check(fs.existsSync(given), `WB_VSCODE_VSIX=${given} does not exist`);
    log(`using the .vsix ${given}`);
    return given;
  }
  const source = path.join(REPO, 'editors', 'vscode');
  const lock = fs.readFileSync(path.join(source, 'package-lock.json'));
  const digest = createHash('sha256').update(lock).digest('hex').slice(0, 16);
  const deps = path.join(CACHE, 'extension-deps', digest);
  const env = { ...process.env, PATH: `${NODE_BIN_DIR}:${process.env.PATH}` };
  if (!fs.existsSync(path.join(deps, '.complete'))) {
    log(`installing the extension's npm dependencies into ${deps} (once per package-lock.json)`);
    fs.rmSync(deps, { recursive: true, force: true });
    fs.mkdirSync(deps, { recursive: true });
    fs.copyFileSync(path.join(source, 'package.json'), path.join(deps, 'package.json'));
    fs.copyFileSync(path.join(source, 'package-lock.json'), path.join(deps, 'package-lock.json'));
    run('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--ignore-scripts'], { cwd: deps, env });
    fs.writeFileSync(path.join(deps, '.complete'), '');
  }
  // build.mjs copies ../../schemas/v1/workbench.schema.json and ../../LICENSE: the copy keeps that layout.
  const root = path.join(work, 'extension-build');
  const copy = path.join(root, 'editors', 'vscode');
  copyTree(source, copy, ['node_modules', 'dist', 'out', 'e2e', 'schemas', 'LICENSE']);
  fs.mkdirSync(path.join(root, 'schemas', 'v1'), { recursive: true });
  fs.copyFileSync(path.join(REPO, 'schemas', 'v1', 'workbench.schema.json'), path.join(root, 'schemas', 'v1', 'workbench.schema.json'));
  fs.copyFileSync(path.join(REPO, 'LICENSE'), path.join(root, 'LICENSE'));
  fs.symlinkSync(path.join(deps, 'node_modules'), path.join(copy, 'node_modules'));
  // The name `npm run package` gives it (scripts/verify-vsix.mjs reads that name).
  const { name, version } = JSON.parse(fs.readFileSync(path.join(copy, 'package.json'), 'utf8'));
  const vsix = path.join(copy, `${name}-${version}.vsix`);
  log('packaging the extension (vsce package --no-dependencies, then scripts/verify-vsix.mjs)');
  // vsce runs `vscode:prepublish` (the production bundle) first.
  run(process.execPath, [path.join(copy, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--no-dependencies'], {
    cwd: copy,
    env,
  });
  if (fs.existsSync(path.join(copy, 'scripts', 'verify-vsix.mjs'))) {
    run(process.execPath, [path.join(copy, 'scripts', 'verify-vsix.mjs')], { cwd: copy, env });
  }
  lastBuild = { copy, env };
  return vsix;
}

// ---------------------------------------------------------------------------------------------------------
// The scratch repository
// ---------------------------------------------------------------------------------------------------------

/** The fake OpenCode (on code-server's PATH, so the server's runs start it): JSON events, a workspace edit,
 * an outbox with an artifact and the declaration. Each step waits a little, so the progress can be seen. A task
 * saying "until killed" gives a run that reports a cost and then waits to be killed (the Runs view scenario). */
const FAKE_OPENCODE = `#!/bin/sh
set -e
for last; do :; done
case "$last" in
*"session turn"*)
  # The session scenario: one answer in one conversation, and the task kept in the outbox (a snapshot per turn).
  printf '{"type":"text","sessionID":"ses_e2e","part":{"id":"t1","text":"Session answer: %s"}}\\n' "$last"
  printf '%s\\n' "$last" > "$WORKBENCH_OUTPUT_DIR/turn.md"
  exit 0
  ;;
*"until killed"*)
  # The Runs view's run: a text, a cost, then it goes on until it is killed.
  echo '{"type":"text","part":{"id":"t1","text":"Waiting to be killed"}}'
  echo '{"type":"step_finish","part":{"tokens":{"input":10,"output":5},"cost":0.125}}'
  exec sleep 600
  ;;
esac
echo '{"type":"text","part":{"id":"t1","text":"Reading the repository"}}'
sleep 2
echo '{"type":"tool_use","part":{"callID":"c1","tool":"bash","state":{"status":"completed","title":"ls","input":{"command":"ls"},"output":"README.md"}}}'
printf '# New title\\n\\nThe ledger service.\\n' > README.md
mkdir -p notes
printf 'hello from the fake runner\\n' > notes/hello.txt
rm -f obsolete.txt
mkdir -p "$WORKBENCH_OUTPUT_DIR/reports"
printf '<h1>Findings</h1>\\n' > "$WORKBENCH_OUTPUT_DIR/reports/findings.html"
cat > "$WORKBENCH_OUTPUT_DIR/outcome.json" <<'JSON'
{"version": 1, "summary": "Prepared a findings report",
 "artifacts": [{"path": "reports/findings.html", "name": "Findings.html", "description": "The collected findings", "media_type": "text/html"}],
 "links": [{"label": "Implementation PR", "uri": "https://github.com/example/project/pull/42", "kind": "pull_request"}]}
JSON
sleep 2
echo '{"type":"text","part":{"id":"t2","text":"Wrote the findings report"}}'
echo '{"type":"step_finish","part":{"tokens":{"input":3,"output":1}}}'
`;

const MANIFESTS = {
  // The runnable package: the code lenses, dry run, smoke and run.
  demo: `spec: 1
version: 0.1.0
name: demo
description: Collects findings about the ledger service.
runner: opencode
model:
  id: openai/gpt-5.6-terra
instructions: ./instructions.md
runtimes:
  local: {}
`,
  // A misspelled key on line 4: the diagnostic, typing, the quick fix.
  typo: `spec: 1
version: 0.1.0
name: typo
descripton: Keep the documentation accurate.
runner: opencode
model:
  id: openai/gpt-5.6-terra
instructions: ./instructions.md
runtimes:
  local: {}
`,
  // No runner and no description yet: completion of a value and of a key, hover.
  draft: `spec: 1
version: 0.1.0
name: draft
model:
  id: openai/gpt-5.6-terra
instructions: ./instructions.md
runtimes:
  local: {}
`,
  // Spec 0: the migration.
  legacy: `spec: 0
version: 0.2.1
name: legacy
description: Cut a release.
runner: opencode
model:
  id: openai/gpt-5.6-terra
instructions: ./instructions.md
runtime: local
`,
};
MANIFESTS['legacy-fix'] = MANIFESTS.legacy.replace('name: legacy', 'name: legacy-fix');
// Its instructions run `jq`, which `tools` lacks: the prose check and its quick fix.
MANIFESTS.prose = `spec: 1
version: 0.1.0
name: prose
description: Prose checks.
runner: opencode
model:
  id: openai/gpt-5.6-terra
instructions: ./instructions.md
tools:
  - git
runtimes:
  local: {}
`;
const PROSE_INSTRUCTIONS = '# prose\n\nRun `jq .` on the data, then `git status`.\n';
// A package with a trial task: the trial lenses, Run Trials, the report in a webview and in Chromium.
MANIFESTS.trialled = MANIFESTS.demo.replace('name: demo', 'name: trialled');
const TRIAL_TASK = `{"version": 1, "id": "hello", "title": "Say hello", "fixture": {"kind": "dir", "path": "fixture"},
 "gates": [{"id": "notes", "title": "The notes exist", "run": "test -f notes/hello.txt"}]}
`;
// Valid, but written loosely: Format Document.
MANIFESTS.loose = `spec: 1
version: 0.1.0
name:    "loose"
description: Formatting.
runner: 'opencode'
model:
    # the model
    id: openai/gpt-5.6-terra
instructions: ./instructions.md
runtimes:
    local: {}
`;

function writeFile(file, text, mode) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  if (mode !== undefined) {
    fs.chmodSync(file, mode);
  }
}

function makeRepository(work) {
  const repo = path.join(work, 'repo');
  for (const [name, manifest] of Object.entries(MANIFESTS)) {
    writeFile(path.join(repo, '.workbenches', name, 'workbench.yml'), manifest);
    writeFile(path.join(repo, '.workbenches', name, 'instructions.md'), `# ${name}\n\nWork on the repository.\n`);
  }
  writeFile(path.join(repo, '.workbenches', 'prose', 'instructions.md'), PROSE_INSTRUCTIONS);
  const task = path.join(repo, '.workbenches', 'trialled', 'trials', 'hello');
  writeFile(path.join(task, 'task.json'), TRIAL_TASK);
  writeFile(path.join(task, 'prompt.md'), 'Write the notes.\n');
  writeFile(path.join(task, 'fixture', 'README.md'), '# Old title\n\nThe ledger service.\n');
  writeFile(path.join(repo, 'README.md'), '# Old title\n\nThe ledger service.\n');
  writeFile(path.join(repo, 'obsolete.txt'), 'remove me\n');
  run('git', ['init', '-q', repo]);
  run('git', ['-C', repo, 'add', '-A']);
  run('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'initial']);
  writeFile(path.join(work, 'bin', 'opencode'), FAKE_OPENCODE, 0o755);
  return repo;
}

/** A private profile for one code-server: user data, extensions, HOME, the settings. */
function makeProfile(work, name, serverPath, extraPath = [], oldSettings = {}) {
  const profile = path.join(work, name);
  const home = path.join(profile, 'home');
  for (const dir of ['.config', '.local/share', '.local/state', '.cache']) {
    fs.mkdirSync(path.join(home, dir), { recursive: true });
  }
  const settings = {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
    'editor.minimap.enabled': false,
    'editor.quickSuggestions': { other: false, comments: false, strings: false },
    'editor.suggestOnTriggerCharacters': false,
    'editor.hover.delay': 300,
    'editor.codeLens': true,
    'files.autoSave': 'off',
    'window.restoreWindows': 'none',
    'workbench.editor.enablePreview': false,
    'chat.disableAIFeatures': true,
    // Inlay hints are text in the editor's lines: shown only while Ctrl+Alt is held (scenario 20 holds it), so
    // the other scenarios read the document's own text.
    'editor.inlayHints.enabled': 'offUnlessPressed',
    ...(serverPath === undefined ? {} : { 'wb-lsp.server.path': serverPath }),
    // Settings under their old names (the moved-settings notice).
    ...oldSettings,
  };
  // VS Code's server takes its environment from a login shell, whose /etc/profile resets PATH: the shell profile
  // puts the extra directories back, as a person's ~/.profile does.
  if (extraPath.length > 0) {
    writeFile(path.join(home, '.profile'), `export PATH="${extraPath.join(':')}:$PATH"\n`);
  }
  writeFile(path.join(profile, 'user-data', 'User', 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
  // code-server is a remote window: machine-scoped settings (the server path) are read from the remote's
  // settings, not the user's.
  const machine = serverPath === undefined ? {} : { 'wb-lsp.server.path': serverPath };
  writeFile(path.join(profile, 'user-data', 'Machine', 'settings.json'), `${JSON.stringify(machine, null, 2)}\n`);
  return { dir: profile, home, userData: path.join(profile, 'user-data'), extensions: path.join(profile, 'extensions') };
}

function profileEnv(profile, extra) {
  const env = {
    PATH: extra.PATH,
    HOME: profile.home,
    XDG_CONFIG_HOME: path.join(profile.home, '.config'),
    XDG_DATA_HOME: path.join(profile.home, '.local/share'),
    XDG_STATE_HOME: path.join(profile.home, '.local/state'),
    XDG_CACHE_HOME: path.join(profile.home, '.cache'),
    LANG: 'C.UTF-8',
    ...extra,
  };
  return env;
}

function installExtension(profile, vsix, env) {
  run(
    CODE_SERVER,
    ['--user-data-dir', profile.userData, '--extensions-dir', profile.extensions, '--install-extension', vsix, '--force'],
    { env },
  );
  const installed = run(CODE_SERVER, ['--user-data-dir', profile.userData, '--extensions-dir', profile.extensions, '--list-extensions', '--show-versions'], { env });
  check(/wb-lsp\.workbench@/.test(installed), `the extension is not installed: ${installed}`);
  return installed.trim();
}

async function startCodeServer(profile, folder, env, name) {
  const port = await freePort();
  const logFile = path.join(ARTIFACTS, `code-server-${name}.log`);
  const out = fs.openSync(logFile, 'w');
  const child = spawn(
    CODE_SERVER,
    [
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--user-data-dir', profile.userData,
      '--extensions-dir', profile.extensions,
      folder,
    ],
    { env, detached: true, stdio: ['ignore', out, out] },
  );
  children.add(child);
  const url = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 60000;
  for (;;) {
    check(child.exitCode === null, `code-server exited (${child.exitCode}); see ${logFile}`);
    try {
      const response = await fetch(`${url}healthz`);
      if (response.ok) {
        break;
      }
    } catch {
      // not listening yet
    }
    check(Date.now() < deadline, `code-server did not answer on ${url} within 60 s; see ${logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { child, url: `${url}?folder=${encodeURIComponent(folder)}`, logFile };
}

function stopCodeServer(server) {
  try {
    process.kill(-server.child.pid, 'SIGKILL');
  } catch {
    // gone
  }
  children.delete(server.child);
}

// ---------------------------------------------------------------------------------------------------------
// The page: what a person sees
// ---------------------------------------------------------------------------------------------------------

const clean = (text) => (text ?? '').replace(/\u00a0/g, ' ');

/** Polls `probe` (page-side reading, returns a value or undefined/false) until it returns something. */
async function waitFor(what, probe, timeout = TIMEOUT) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await probe();
    } catch (error) {
      last = undefined;
      if (!(error instanceof Error) || /Target closed|has been closed/.test(error.message)) {
        throw error;
      }
    }
    if (last !== undefined && last !== false && last !== null) {
      return last;
    }
    if (Date.now() > deadline) {
      throw new Failure(`timed out after ${timeout} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

class Window {
  constructor(page) {
    this.page = page;
  }

  async open(url) {
    await this.page.goto(url);
    await this.page.waitForSelector('.monaco-workbench', { timeout: 90000 });
    // The explorer's tree shows the folder once the workbench has loaded it.
    await this.page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 90000 });
  }

  async screenshot(name) {
    const file = path.join(ARTIFACTS, `${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /** The text of every notification toast on screen. */
  async toasts() {
    return (await this.page.locator('.notifications-toasts .notification-toast').evaluateAll((toasts) =>
      toasts.map((toast) => {
        const icon = toast.querySelector('.notification-list-item-icon')?.className ?? '';
        const level = /codicon-error/.test(icon) ? 'error' : /codicon-warning/.test(icon) ? 'warning' : /codicon-info/.test(icon) ? 'info' : '';
        return `${level ? `[${level}] ` : ''}${toast.innerText}`;
      }),
    )).map((text) => clean(text).replace(/\s*\n\s*/g, ' '));
  }

  async waitForToast(what, pattern, timeout) {
    return waitFor(
      `a notification ${what} (${pattern})`,
      async () => (await this.toasts()).find((text) => pattern.test(text)),
      timeout,
    );
  }

  /** Clicks the button `label` of the (last) notification whose text matches `pattern`: its toast, or in the
   * notification center once the toast has gone. */
  async clickToastButton(pattern, label) {
    const toast = this.page.locator('.notifications-toasts .notification-toast').filter({ hasText: pattern }).last();
    if (await toast.isVisible().catch(() => false)) {
      await toast.hover();
      await toast.locator('.monaco-button', { hasText: label }).first().click();
      return;
    }
    await this.command('Notifications: Show Notifications');
    const item = this.page.locator('.notifications-center .notification-list-item').filter({ hasText: pattern }).last();
    await item.waitFor({ state: 'visible', timeout: TIMEOUT });
    await item.hover();
    await item.locator('.monaco-button', { hasText: label }).first().click();
  }

  async clearNotifications() {
    await this.command('Notifications: Clear All Notifications');
    await waitFor('no notification toasts', async () => (await this.toasts()).length === 0 || undefined, 5000).catch(() => undefined);
  }

  async quickInputVisible() {
    return this.page.locator('.quick-input-widget').isVisible();
  }

  async waitForQuickInput() {
    await this.page.locator('.quick-input-widget').waitFor({ state: 'visible', timeout: TIMEOUT });
    return this.page.locator('.quick-input-widget input.input').first();
  }

  /** Runs a command from the command palette by its title. */
  async command(title) {
    await this.page.keyboard.press('Escape');
    await this.page.keyboard.press('F1');
    const input = await this.waitForQuickInput();
    await input.fill(`>${title}`);
    const row = this.page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    await waitFor(`the palette to offer "${title}"`, async () => {
      const labels = (await this.page.locator('.quick-input-list .monaco-list-row .label-name').allTextContents()).map(clean);
      return labels.some((label) => label === title) || undefined;
    });
    const exact = this.page.locator('.quick-input-list .monaco-list-row').filter({
      has: this.page.locator('.label-name', { hasText: new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }),
    });
    await (await exact.count() > 0 ? exact.first() : row).click();
  }

  /** Quick Open: a file by its path relative to the folder. */
  async openFile(relative) {
    await this.page.keyboard.press('Escape');
    await this.page.keyboard.press('Control+P');
    const input = await this.waitForQuickInput();
    await input.fill(relative);
    const base = path.basename(relative);
    const dir = path.dirname(relative);
    await waitFor(`Quick Open to offer ${relative}`, async () => {
      const rows = await this.page.locator('.quick-input-list .monaco-list-row').allTextContents();
      return rows.some((text) => clean(text).includes(base) && clean(text).includes(dir)) || undefined;
    });
    await this.page.locator('.quick-input-list .monaco-list-row', { hasText: dir }).first().click();
    await waitFor(`the editor of ${relative}`, async () => (await this.activeEditorPath()).endsWith(relative) || undefined)
      .catch(async (error) => {
        throw new Failure(`${error.message} (the active editor is "${await this.activeEditorPath()}")`);
      });
    await this.page.locator('.editor-group-container.active .monaco-editor .view-lines').first().waitFor();
  }

  /** The active editor's resource, as its tab's label says (a path, `Untitled-1`, ...). */
  async activeEditorPath() {
    const label = await this.page
      .locator('.editor-group-container.active .tabs-container .tab.active .monaco-icon-label')
      .first()
      .getAttribute('aria-label', { timeout: 2000 })
      .catch(() => '');
    return clean(label).split(' • ')[0];
  }

  /** The active editor's lines as shown (the visible ones, in order). */
  async editorLines() {
    return this.page.evaluate(() => {
      const editor = document.querySelector('.editor-group-container.active .monaco-editor .view-lines');
      if (!editor) {
        return [];
      }
      return [...editor.querySelectorAll('.view-line')]
        .map((line) => ({ top: parseFloat(line.style.top || '0'), text: line.textContent ?? '' }))
        .sort((a, b) => a.top - b.top)
        .map((line) => line.text.replace(/\u00a0/g, ' '));
    });
  }

  async waitForEditorLines(what, predicate, timeout) {
    return waitFor(what, async () => {
      const lines = await this.editorLines();
      return predicate(lines) ? lines : undefined;
    }, timeout).catch(async (error) => {
      throw new Failure(`${error.message}; the editor shows:\n    ${(await this.editorLines()).join('\n    ')}`);
    });
  }

  async focusEditor() {
    await this.command('View: Focus Active Editor Group');
    await waitFor('the editor to have focus', async () =>
      (await this.page.evaluate(() => Boolean(document.activeElement?.closest('.editor-group-container.active .monaco-editor')))) || undefined,
    );
  }

  /** `Ctrl+.` at the cursor: the quick fix menu. Pressed again (as a person would) when the keystroke went
   * nowhere, e.g. while the code actions were still being computed. */
  async openQuickFix() {
    const menu = this.page.locator('.action-widget').first();
    await this.page.mouse.move(5, 500); // no hover over a tab or the editor
    for (let attempt = 1; ; attempt += 1) {
      await this.page.keyboard.press('Control+.');
      try {
        await menu.waitFor({ state: 'visible', timeout: 5000 });
        return menu;
      } catch (error) {
        if (attempt >= 4) {
          throw new Failure(`Ctrl+. opened no quick fix menu (${attempt} tries)`);
        }
        log(`  Ctrl+. showed no menu within 5 s, pressing it again`);
      }
    }
  }

  async gotoLine(line, column = 1) {
    await this.page.keyboard.press('Control+G');
    const input = await this.waitForQuickInput();
    await input.fill(`:${line}:${column}`);
    await this.page.keyboard.press('Enter');
    await this.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: TIMEOUT });
  }

  async squiggles() {
    return this.page.locator('.editor-group-container.active .monaco-editor .squiggly-error').count();
  }

  /** The status bar's problem counts, as its text shows them: [errors, warnings]. */
  async problemCounts() {
    const text = clean(await this.page.locator('#status\\.problems').first().innerText({ timeout: 2000 }).catch(() => ''));
    const numbers = text.match(/\d+/g) ?? [];
    return numbers.length >= 2 ? { errors: Number(numbers[0]), warnings: Number(numbers[1]), text: text.replace(/\s+/g, ' ') } : undefined;
  }

  async openProblems() {
    await this.command('View: Focus Problems (Errors, Warnings, Infos)');
    await this.page.locator('.markers-panel').waitFor({ state: 'visible', timeout: TIMEOUT });
  }

  /** The Problems view's rows (aria labels: the message, source and code, position). */
  async problems() {
    return (await this.page.locator('.markers-panel .monaco-list-row').evaluateAll((rows) =>
      rows.map((row) => `${row.getAttribute('aria-label') ?? ''} || ${row.textContent ?? ''}`),
    )).map(clean);
  }

  /** The visible text of the output panel's editor (its channel's lines). */
  async outputLines() {
    return this.page.evaluate(() => {
      const view = document.querySelector('.output-view .monaco-editor .view-lines')
        ?? document.querySelector('[id="workbench.panel.output"] .monaco-editor .view-lines');
      if (!view) {
        return [];
      }
      return [...view.querySelectorAll('.view-line')]
        .map((line) => ({ top: parseFloat(line.style.top || '0'), text: line.textContent ?? '' }))
        .sort((a, b) => a.top - b.top)
        .map((line) => line.text.replace(/\u00a0/g, ' '));
    });
  }

  async waitForOutput(what, predicate, timeout) {
    return waitFor(what, async () => {
      const lines = await this.outputLines();
      return predicate(lines) ? lines : undefined;
    }, timeout).catch(async (error) => {
      throw new Failure(`${error.message}; the output panel shows:\n    ${(await this.outputLines()).join('\n    ')}`);
    });
  }

  /** The code lenses above the active editor's lines. */
  async codeLenses() {
    return (await this.page.locator('.editor-group-container.active .monaco-editor .codelens-decoration a').allTextContents()).map((text) => clean(text).replace(/^[^A-Za-z]+/, ''));
  }

  async clickCodeLens(label) {
    await this.page.locator('.editor-group-container.active .monaco-editor .codelens-decoration a', { hasText: new RegExp(`(^|\\W)${label}$`) }).first().click();
  }

  async closeAllEditors() {
    await this.command('View: Close All Editors');
    // A dirty editor asks; its changes are not wanted.
    const dontSave = this.page.locator('.monaco-dialog-box .monaco-button', { hasText: "Don't Save" });
    if (await dontSave.isVisible().catch(() => false)) {
      await dontSave.click();
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------------------

const results = [];

async function scenario(window, name, body) {
  if (ONLY.length > 0 && !ONLY.includes(name)) {
    return;
  }
  const begin = Date.now();
  log(`scenario ${name}`);
  const seen = [];
  const see = (message) => {
    seen.push(message);
    log(`  saw: ${message}`);
  };
  let error;
  try {
    await body(see);
  } catch (caught) {
    error = caught;
  }
  let shot;
  try {
    shot = await window.screenshot(name);
  } catch (caught) {
    shot = `no screenshot: ${caught.message}`;
  }
  const seconds = ((Date.now() - begin) / 1000).toFixed(1);
  if (error === undefined) {
    results.push({ name, ok: true, seconds, seen, shot });
    log(`PASS ${name} (${seconds} s; ${shot})`);
  } else {
    const message = error instanceof Failure ? error.message : (error.stack ?? String(error));
    results.push({ name, ok: false, seconds, seen, shot, message });
    log(`FAIL ${name} (${seconds} s; ${shot}): ${message}`);
  }
  // The next scenario starts from a quiet window.
  await window.page.keyboard.press('Escape').catch(() => undefined);
  await window.page.keyboard.press('Escape').catch(() => undefined);
}

const MANIFEST = (name) => `.workbenches/${name}/workbench.yml`;

async function diagnosticsScenarios(window) {
  await scenario(window, '01-diagnostics-on-open', async (see) => {
    await window.openFile(MANIFEST('typo'));
    await waitFor('a squiggle in the manifest', async () => (await window.squiggles()) > 0 || undefined, 60000);
    see(`${await window.squiggles()} error squiggle(s) in ${MANIFEST('typo')}`);
    const squiggled = await window.page.evaluate(() => {
      // The squiggle's decoration sits on the same line (top) as the misspelled key.
      const editor = document.querySelector('.editor-group-container.active .monaco-editor');
      const squiggle = editor?.querySelector('.squiggly-error');
      if (!squiggle) {
        return undefined;
      }
      const top = squiggle.closest('[style*="top"]')?.style.top ?? squiggle.parentElement?.style.top;
      const line = [...editor.querySelectorAll('.view-line')].find((candidate) => candidate.style.top === top);
      return line?.textContent?.replace(/\u00a0/g, ' ');
    });
    see(`the squiggle is on the line "${squiggled}"`);
    check(squiggled?.startsWith('descripton:'), `the squiggle is not on the misspelled key's line: ${squiggled}`);
    const status = await waitFor('the status bar to count errors', async () => {
      const counts = await window.problemCounts();
      return counts !== undefined && counts.errors > 0 ? counts : undefined;
    });
    see(`status bar problems (the workspace's): "${status.text}"`);
    await window.openProblems();
    const row = await waitFor('the Problems entry', async () =>
      (await window.problems()).find((text) => text.includes('Unknown manifest field: descripton')),
    );
    see(`Problems: "${row}"`);
    see(`all Problems rows: ${(await window.problems()).join(' ## ')}`);
    check(row.includes('wb-lsp') && row.includes('unknown-field'), `the entry lacks source and code: ${row}`);
    check(/\[Ln 4, Col 1\]/.test(row) || /line 4.*column 1|4:1/i.test(row), `the entry is not at Ln 4, Col 1: ${row}`);
  });

  await scenario(window, '02-diagnostics-update-on-typing', async (see) => {
    await window.openProblems();
    await window.openFile(MANIFEST('typo'));
    const before = await waitFor('the problem counts', () => window.problemCounts());
    await window.focusEditor();
    await window.gotoLine(10, 12); // the end of `  local: {}`
    await window.page.keyboard.press('End');
    await window.page.keyboard.press('Enter');
    await window.page.keyboard.press('Home');
    await window.page.keyboard.press('Shift+Home');
    await window.page.keyboard.type('timeout: 30m');
    const row = await waitFor('a Problems entry for the typed key', async () =>
      (await window.problems()).find((text) => text.includes('Unknown manifest field: timeout')),
    );
    see(`after typing "timeout: 30m" on line 11: "${row}"`);
    check(/\[Ln 11, Col 1\]/.test(row), `the new entry is not at Ln 11, Col 1: ${row}`);
    const status = await waitFor('the status bar to count one error more', async () => {
      const counts = await window.problemCounts();
      return counts !== undefined && counts.errors === before.errors + 1 ? counts : undefined;
    });
    see(`status bar problems: "${before.text}" before, "${status.text}" after typing`);
    await window.page.keyboard.press('Control+Shift+K'); // delete the line again
    await waitFor('the typed problem to go with its line', async () =>
      (await window.problems()).every((text) => !text.includes('Unknown manifest field: timeout')) || undefined,
    );
    const after = await waitFor('the status bar to count as before', async () => {
      const counts = await window.problemCounts();
      return counts !== undefined && counts.errors === before.errors ? counts : undefined;
    });
    see(`after deleting the line the timeout entry is gone; status bar "${after.text}"`);
  });

  await scenario(window, '03-quick-fix', async (see) => {
    await window.openFile(MANIFEST('typo'));
    await window.focusEditor();
    await window.gotoLine(4, 3);
    const menu = await window.openQuickFix();
    const items = (await menu.locator('.monaco-list-row').allTextContents()).map(clean);
    see(`the quick fix menu offers: ${items.join(' | ')}`);
    const fix = menu.locator('.monaco-list-row', { hasText: 'Change to' }).first();
    check(await fix.count() > 0, `no "Change to \`description\`" fix: ${items.join(' | ')}`);
    check(items.some((item) => item.includes('description')), `the fix does not name description: ${items.join(' | ')}`);
    await fix.click();
    const lines = await window.waitForEditorLines('line 4 to read description:', (shown) =>
      shown[3] === 'description: Keep the documentation accurate.',
    );
    see(`line 4 is now "${lines[3]}"`);
    await waitFor('the squiggle to go', async () => (await window.squiggles()) === 0 || undefined);
    await waitFor('the Problems entry to go', async () =>
      (await window.problems()).every((text) => !text.includes('descripton')) || undefined,
    );
    see('no squiggle and no Problems entry for descripton');
    await window.page.keyboard.press('Control+S');
  });
}

/** Accepts the suggestion labelled `label` from the open suggest widget. */
async function acceptSuggestion(window, label, see) {
  const widget = window.page.locator('.editor-widget.suggest-widget');
  await waitFor('the suggest widget', async () => (await widget.isVisible()) || undefined);
  const labels = async () =>
    (await widget.locator('.monaco-list-row .label-name').allTextContents()).map(clean);
  const offered = await waitFor(`the suggestion ${label}`, async () => {
    const shown = await labels();
    return shown.includes(label) ? shown : undefined;
  });
  see(`the suggest widget offers: ${offered.join(', ')}`);
  // Down until the wanted suggestion is the focused one, as a person would.
  const focused = async () => clean(await widget.locator('.monaco-list-row.focused .label-name').first().textContent({ timeout: 2000 }).catch(() => ''));
  for (let step = 0; step < offered.length && (await focused()) !== label; step += 1) {
    await window.page.keyboard.press('ArrowDown');
  }
  check((await focused()) === label, `could not focus the suggestion ${label} (focused: ${await focused()})`);
  await window.page.keyboard.press('Enter');
  await widget.waitFor({ state: 'hidden', timeout: TIMEOUT });
}

async function editingScenarios(window) {
  await scenario(window, '04-completion', async (see) => {
    await window.openFile(MANIFEST('draft'));
    await window.focusEditor();
    await window.gotoLine(3, 12); // after `name: draft`
    await window.page.keyboard.press('End');
    await window.page.keyboard.press('Enter');
    await window.page.keyboard.press('Shift+Home');
    await window.page.keyboard.type('runner: ');
    await window.page.keyboard.press('Control+Space');
    await acceptSuggestion(window, 'claude-code', see);
    // The typed `runner: ` is there before the accepted text is: wait for more than it, or time out showing what is.
    let lines = await window.waitForEditorLines('line 4 to read runner: claude-code', (shown) => shown[3] !== undefined && shown[3].startsWith('runner: ') && shown[3] !== 'runner: ');
    see(`after accepting: line 4 is "${lines[3]}"`);
    check(lines[3] === 'runner: claude-code', `completion after "runner: " inserted "${lines[3]}", not "runner: claude-code"`);
    // A key: `desc` on a new line, completed to the field.
    await window.page.keyboard.press('End');
    await window.page.keyboard.press('Enter');
    await window.page.keyboard.press('Shift+Home');
    await window.page.keyboard.type('desc');
    await window.page.keyboard.press('Control+Space');
    await acceptSuggestion(window, 'description', see);
    lines = await window.waitForEditorLines('line 5 to be completed', (shown) => shown[4] !== undefined && shown[4] !== 'desc');
    see(`after accepting: line 5 is "${lines[4]}"`);
    check(lines[4] === 'description: ', `completion of "desc" inserted "${lines[4]}", not "description: "`);
    check(lines.length >= 10 && lines[5] === 'model:', `the lines after the completion changed: ${lines.join(' / ')}`);
  });

  await scenario(window, '05-hover', async (see) => {
    await window.openFile(MANIFEST('draft'));
    await window.focusEditor();
    await window.gotoLine(4, 3); // on `runner`
    await window.command('Show or Focus Hover');
    const hover = await waitFor('the hover', async () => {
      const text = clean(await window.page.locator('.monaco-hover:visible').first().textContent({ timeout: 1000 }).catch(() => ''));
      return text.length > 0 ? text : undefined;
    });
    see(`hover on runner: "${hover.slice(0, 300)}"`);
    check(/runner/i.test(hover) && /opencode/.test(hover) && /claude-code/.test(hover), `the hover is not the runner field's docs: ${hover}`);
  });

  // What `wb-lsp migrate` makes of MANIFESTS.legacy (and of legacy-fix, the same but for its name).
  const migrated = (name) => [
    'spec: 1', 'version: 0.2.1', `name: ${name}`, 'description: Cut a release.', 'runner: opencode', 'model:',
    '  id: openai/gpt-5.6-terra', 'instructions: ./instructions.md', 'runtimes:', '  local: {}',
  ];
  const spec0Hint = async () =>
    window.page.locator('.editor-group-container.active .monaco-editor :is(.squiggly-hint, .squiggly-inline-deprecated, .squiggly-info)').count();

  await scenario(window, '06-migrate-spec-0-palette', async (see) => {
    await window.openFile(MANIFEST('legacy'));
    await waitFor('the spec 0 hint (the 0 struck through)', async () => (await spec0Hint()) > 0 || undefined, 60000);
    see(`${await spec0Hint()} hint decoration(s) on the spec 0 manifest`);
    await window.focusEditor();
    await window.command('Workbench: Migrate to Spec 1');
    const toast = await window.waitForToast('about the migration', /migrated to spec 1/);
    see(`notification: "${toast}"`);
    check(/Workbench: migrated to spec 1\. Review the changes and save the file\./.test(toast), `not the documented message: ${toast}`);
    const lines = await window.waitForEditorLines('the manifest to be on spec 1', (shown) => shown[0] === 'spec: 1');
    see(`the migrated manifest: ${lines.join(' / ')}`);
    check(JSON.stringify(lines.slice(0, 10)) === JSON.stringify(migrated('legacy')), `not what wb-lsp migrate writes: ${lines.join(' / ')}`);
    await window.page.keyboard.press('Control+S');
    await waitFor('the hint to go', async () => (await spec0Hint()) === 0 || undefined);
    see('no spec 0 hint after the migration');
  });

  await scenario(window, '07-migrate-spec-0-quick-fix', async (see) => {
    await window.openFile(MANIFEST('legacy-fix'));
    await waitFor('the spec 0 hint', async () => (await spec0Hint()) > 0 || undefined, 60000);
    await window.focusEditor();
    await window.gotoLine(1, 7);
    const menu = await window.openQuickFix();
    const items = (await menu.locator('.monaco-list-row').allTextContents()).map(clean);
    see(`the quick fix menu offers: ${items.join(' | ')}`);
    const fix = menu.locator('.monaco-list-row', { hasText: 'Migrate to spec 1' }).first();
    check(await fix.count() > 0, `no "Migrate to spec 1" fix: ${items.join(' | ')}`);
    await fix.click();
    const lines = await window.waitForEditorLines('the manifest to be on spec 1', (shown) => shown[0] === 'spec: 1');
    see(`the migrated manifest: ${lines.join(' / ')}`);
    check(JSON.stringify(lines.slice(0, 10)) === JSON.stringify(migrated('legacy-fix')), `not what wb-lsp migrate writes: ${lines.join(' / ')}`);
    await window.page.keyboard.press('Control+S');
  });
}

function readOutcomeIdFrom(lines) {
  for (const line of lines) {
    const match = /\b(wbo_[0-9a-z]+)\b/.exec(line);
    if (match) {
      return match[1];
    }
  }
  return undefined;
}

async function executionScenarios(window, repo, workbenchHome) {
  let outcomeId;
  await scenario(window, '08-code-lenses-dry-run', async (see) => {
    await window.closeAllEditors();
    await window.openFile(MANIFEST('demo'));
    const lenses = await waitFor('the code lenses Dry run | Smoke | Run', async () => {
      const shown = await window.codeLenses();
      return ['Dry run', 'Smoke', 'Run'].every((label) => shown.includes(label)) ? shown : undefined;
    }, 60000);
    see(`code lenses above line 1: ${lenses.join(' | ')}`);
    await window.clickCodeLens('Dry run');
    const input = await window.waitForQuickInput();
    await input.fill('List the findings');
    await window.page.keyboard.press('Enter');
    const title = await waitFor('an untitled editor with the dry run', async () => {
      const name = await window.activeEditorPath();
      return name.startsWith('Untitled') ? name : undefined;
    });
    const lines = await window.waitForEditorLines('the dry run translation', (shown) => shown[0] === '{' && shown.length > 3);
    see(`the dry run opened "${title}": ${lines.slice(0, 12).join(' ')}`);
    check(lines[0] === '{', `the dry run is not JSON: ${lines[0]}`);
    check(lines.includes('  "workbench": "demo",') && lines.includes('  "runner": "opencode",'), `the translation is not demo's on opencode: ${lines.join(' ')}`);
  });

  await scenario(window, '09-smoke-palette-and-lens', async (see) => {
    await window.clearNotifications();
    await window.openFile(MANIFEST('demo'));
    await window.command('Workbench: Smoke');
    const toast = await window.waitForToast('with the smoke status', /Workbench: /, 60000);
    see(`palette Smoke: notification "${toast}"`);
    check(/^\[info\]/.test(toast) && /ready/.test(toast), `the smoke is not ready: ${toast}`);
    await window.clickToastButton(/Workbench: /, 'Show Output');
    const lines = await window.waitForOutput('the smoke report in the output', (shown) => shown.some((line) => /opencode/.test(line)));
    see(`Workbench Run output: ${lines.join(' / ')}`);
    await window.clearNotifications();
    await window.openFile(MANIFEST('demo'));
    await waitFor('the code lenses', async () => (await window.codeLenses()).includes('Smoke') || undefined);
    await window.clickCodeLens('Smoke');
    const again = await window.waitForToast('with the smoke status (lens)', /Workbench: /, 60000);
    check(/^\[info\]/.test(again) && /ready/.test(again), `the smoke is not ready: ${again}`);
    see(`code lens Smoke: notification "${again}"`);
  });

  await scenario(window, '10-run-from-lens', async (see) => {
    await window.clearNotifications();
    await window.openFile(MANIFEST('demo'));
    await waitFor('the code lenses', async () => (await window.codeLenses()).includes('Run') || undefined);
    await window.clickCodeLens('Run');
    const input = await window.waitForQuickInput();
    await input.fill('Write the findings report');
    await window.page.keyboard.press('Enter');
    const progress = await window.waitForToast('with the run in progress', /Workbench run/, 30000);
    see(`progress notification: "${progress}"`);
    const running = await waitFor('the running status bar item', async () => {
      const texts = (await window.page.locator('.statusbar-item').allTextContents()).map(clean);
      return texts.find((text) => /Workbench: running/.test(text));
    }, 10000).catch(() => undefined);
    see(`status bar: "${running ?? '(gone already)'}"`);
    const ending = await window.waitForToast('with the run ending', /Outcome: /, 90000);
    see(`ending notification: "${ending}" (${await window.screenshot('10-run-from-lens-ending')})`);
    check(/1 added, 1 modified, 1 deleted; 1 artifact; 1 link/.test(ending), `the ending lacks the outcome brief: ${ending}`);
    for (const button of ['Show Outcome', 'View Diff', 'Show Output']) {
      check(ending.includes(button), `the ending has no ${button} button: ${ending}`);
    }
    // View Diff first: a person clicks the notification's button while it is there.
    await window.clickToastButton(/Outcome: /, 'View Diff');
    const diff = await window.waitForEditorLines('the review diff', (shown) => shown.some((line) => line === '+# New title'));
    see(`View Diff opened "${await window.activeEditorPath()}": ${diff.filter((line) => /^[+-]/.test(line)).join(' / ')}`);
    await window.command('Workbench: Show Run Output');
    await window.command('View: Toggle Maximized Panel');
    const lines = await window.waitForOutput('the run events and the outcome summary', (shown) =>
      shown.some((line) => line.includes('Wrote the findings report')) && shown.some((line) => /^Outcome wbo_/.test(line)),
    );
    see(`Workbench Run output:\n    ${lines.join('\n    ')}`);
    check(lines.some((line) => /▶ Run wb_\w+ started: demo 0\.1\.0 on local \(opencode\)/.test(line)), 'no "▶ Run … started" line');
    check(lines.some((line) => line.includes('Reading the repository')), 'the first text event is not in the output');
    check(lines.some((line) => line.includes('✓ bash (ls) completed')), 'the tool event is not in the output');
    check(lines.some((line) => /■ Run completed/.test(line)), 'no "■ Run completed" line');
    check(lines.some((line) => /M README\.md/.test(line)) && lines.some((line) => /A notes\/hello\.txt/.test(line)) && lines.some((line) => /D obsolete\.txt/.test(line)), 'the changeset is not in the summary');
    check(lines.some((line) => /Findings\.html \(reports\/findings\.html\): text\/html, 18 bytes/.test(line)), 'the artifact is not in the summary');
    outcomeId = readOutcomeIdFrom(lines.filter((line) => /^Outcome wbo_/.test(line)));
    check(outcomeId !== undefined, 'no outcome id in the output');
    await window.command('View: Toggle Maximized Panel');
    check(diff.includes('-# Old title'), 'the diff lacks -# Old title');
  });

  await scenario(window, '11-open-artifact', async (see) => {
    check(outcomeId !== undefined, 'no outcome from the run scenario');
    await window.command('Workbench: Open Outcome Artifact');
    const lines = await window.waitForEditorLines('the artifact', (shown) => shown.includes('<h1>Findings</h1>'));
    const title = await window.activeEditorPath();
    see(`artifact editor "${title}": ${lines.join(' / ')}`);
    check(/Findings\.html/.test(title ?? ''), `the artifact's editor is titled ${title}`);
  });

  await scenario(window, '12-apply-outcome', async (see) => {
    check(outcomeId !== undefined, 'no outcome from the run scenario');
    // As an isolated runtime leaves it: the receipt pending and the workspace as before the run.
    const receipt = path.join(workbenchHome, 'outcomes', outcomeId, 'application.json');
    check(JSON.parse(fs.readFileSync(receipt, 'utf8')).state === 'present', 'the local run\'s receipt is not present');
    fs.writeFileSync(receipt, JSON.stringify({ version: 1, outcome_id: outcomeId, state: 'pending', updated_at: '2026-01-01T00:00:00Z' }));
    fs.writeFileSync(path.join(repo, 'README.md'), '# Old title\n\nThe ledger service.\n');
    fs.rmSync(path.join(repo, 'notes'), { recursive: true, force: true });
    fs.writeFileSync(path.join(repo, 'obsolete.txt'), 'remove me\n');
    await window.clearNotifications();
    await window.command('Workbench: Show Outcome');
    await window.waitForQuickInput();
    // Which outcome: this window's, the latest first.
    await window.page.locator('.quick-input-list .monaco-list-row', { hasText: outcomeId }).first().click();
    const title = await waitFor('the outcome quick pick', async () => {
      const text = clean(await window.page.locator('.quick-input-widget .quick-input-title').textContent().catch(() => ''));
      return /pending/.test(text) ? text : undefined;
    });
    const items = (await window.page.locator('.quick-input-list .monaco-list-row').allTextContents()).map(clean);
    see(`Show Outcome: "${title}": ${items.join(' | ')}`);
    await window.page.locator('.quick-input-list .monaco-list-row', { hasText: 'Apply Outcome' }).first().click();
    const dialog = window.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: TIMEOUT });
    see(`confirmation: "${clean(await dialog.textContent())}"`);
    await dialog.locator('.monaco-button', { hasText: /^Apply$/ }).click();
    const toast = await window.waitForToast('about the application', /applied outcome/);
    see(`notification: "${toast}"`);
    check(/3 applied, 0 unchanged/.test(toast), `not every change was applied: ${toast}`);
    const readme = fs.readFileSync(path.join(repo, 'README.md'), 'utf8');
    check(readme.startsWith('# New title'), `README.md was not applied: ${readme}`);
    check(!fs.existsSync(path.join(repo, 'obsolete.txt')), 'obsolete.txt was not deleted');
    check(fs.readFileSync(path.join(repo, 'notes', 'hello.txt'), 'utf8') === 'hello from the fake runner\n', 'notes/hello.txt was not added');
    see('README.md has the new title, notes/hello.txt is back, obsolete.txt is gone');
  });

  await scenario(window, '13-run-from-palette', async (see) => {
    await window.clearNotifications();
    await window.openFile(MANIFEST('demo'));
    await window.command('Workbench: Run Workbench');
    const input = await window.waitForQuickInput();
    await input.fill('Check the findings again');
    await window.page.keyboard.press('Enter');
    const ending = await window.waitForToast('with the run ending', /Run completed|Outcome: /, 90000);
    see(`ending notification: "${ending}"`);
    check(/^\[info\].*the run completed\./.test(ending), `the second run did not complete: ${ending}`);
    const lines = await window.waitForOutput('the second run\'s outcome in the output', (shown) =>
      shown.some((line) => /^Outcome wbo_/.test(line) && !line.includes(outcomeId)),
    );
    see(`the output ends with a new outcome: ${lines.find((line) => /^Outcome wbo_/.test(line))}`);
  });
}

/** The Workbench Runs view's pane and its rows. */
function runsPane(window) {
  return window.page.locator('.pane').filter({ has: window.page.locator('.pane-header', { hasText: 'Workbench Runs' }) }).first();
}

/** A fake Claude Code that asks, in its control protocol: permission for a Bash command, then a question; it
 * writes what it read to `LOG`. */
const FAKE_ASKING_CLAUDE = `#!/bin/sh
log='LOG'
IFS= read -r line || exit 4
printf '%s\\n' "$line" >> "$log"
printf '%s\\n' '{"type":"control_request","request_id":"n1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm obsolete.txt"},"tool_use_id":"t1"}}'
IFS= read -r line || exit 5
printf '%s\\n' "$line" >> "$log"
printf '%s\\n' '{"type":"control_request","request_id":"n2","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"t2","input":{"questions":[{"question":"Which colour?","header":"Colour","multiSelect":false,"options":[{"label":"Red"},{"label":"Blue"}]}]}}}'
IFS= read -r line || exit 6
printf '%s\\n' "$line" >> "$log"
printf '%s\\n' '{"type":"result","subtype":"success","is_error":false,"result":"asked and answered","usage":{"input_tokens":1,"output_tokens":1},"total_cost_usd":0}'
`;

/** The record of run `runId` as `wb-lsp runs --all --json` gives it. */
function recordOf(runId, repo, env) {
  return JSON.parse(run(WB_LSP_BIN, ['runs', '--all', '--json'], { cwd: repo, env })).find((r) => r.run_id === runId);
}

/** A run that asks: Answer (from the palette) asks the permission as a notification with its choices as
 * buttons and the question as a quick pick, and the runner reads both answers. */
async function askingScenario(window, work, env) {
  await scenario(window, '25-answer-what-a-run-asks', async (see) => {
    await window.clearNotifications();
    await window.closeAllEditors();
    // A repository of its own, with a Claude Code package whose runner asks.
    const repo = path.join(work, 'asker-repo');
    writeFile(path.join(repo, '.workbenches', 'asker', 'workbench.yml'),
      'spec: 1\nversion: 0.1.0\nname: asker\nrunner: claude-code\nmodel:\n  id: anthropic/claude-sonnet-4.5\ninstructions: ./instructions.md\nruntimes:\n  local: {}\n');
    writeFile(path.join(repo, '.workbenches', 'asker', 'instructions.md'), '# Asker\n');
    const log = path.join(work, 'claude-read.txt');
    writeFile(path.join(work, 'bin', 'claude'), FAKE_ASKING_CLAUDE.replace("'LOG'", `'${log}'`), 0o755);
    const runEnv = { ...env, ANTHROPIC_API_KEY: 'sk-ant-test' };
    const started = run(WB_LSP_BIN, ['run', '--detach', '--task', 'Tidy the repository', path.join(repo, '.workbenches', 'asker')], {
      cwd: repo,
      env: runEnv,
    });
    const runId = /wb_[0-9a-f]{24}/.exec(started)?.[0];
    check(runId !== undefined, `wb-lsp run --detach printed no run id: ${started}`);
    see(`wb-lsp run --detach started ${runId}`);
    await waitFor('the run to wait for an answer', async () => recordOf(runId, repo, env)?.state === 'needs_input' || undefined, 30000);
    // Answer from the palette: the command offers the runs that wait for an answer (the Runs view's inline
    // Answer runs the same command on its row; its marking is checked by the extension's unit tests).
    await window.command('Workbench: Answer What the Run Asks');
    await window.waitForQuickInput();
    await waitFor('the waiting run offered', async () =>
      (await window.page.locator('.quick-input-list .monaco-list-row', { hasText: runId }).count()) > 0 || undefined);
    see(`the palette offers ${runId}`);
    await window.page.locator('.quick-input-list .monaco-list-row', { hasText: runId }).first().click();
    const asked = await window.waitForToast('asking the permission', /Workbench asks: permission · in_[0-9a-f]{8}: Bash: rm obsolete\.txt/, 30000);
    see(`notification: "${asked}"`);
    await window.clickToastButton(/Workbench asks: permission/, 'Allow');
    await waitFor('the run to ask its question', async () => recordOf(runId, repo, env)?.pending?.[0]?.kind === 'question' || undefined, 30000);
    // From the palette this time: the command asks which run first.
    await window.command('Workbench: Answer What the Run Asks');
    await window.waitForQuickInput();
    await waitFor('the waiting run offered', async () =>
      (await window.page.locator('.quick-input-list .monaco-list-row', { hasText: runId }).count()) > 0 || undefined);
    await window.page.locator('.quick-input-list .monaco-list-row', { hasText: runId }).first().click();
    await waitFor('the question asked', async () =>
      (await window.page.locator('.quick-input-list .monaco-list-row', { hasText: 'Blue' }).count()) > 0 || undefined);
    const options = await waitFor('the question\'s options', async () => {
      const rows = (await window.page.locator('.quick-input-list .monaco-list-row').allTextContents()).map(clean);
      return rows.length >= 2 ? rows : undefined;
    });
    see(`quick pick: ${options.join(' | ')}`);
    check(options.some((row) => row.startsWith('Blue')), `no Blue among ${options.join(', ')}`);
    await window.page.locator('.quick-input-list .monaco-list-row', { hasText: 'Blue' }).first().click();
    await waitFor('the run to complete', async () => recordOf(runId, repo, env)?.state === 'completed' || undefined, 30000);
    const read = fs.readFileSync(log, 'utf8');
    check(read.includes('"behavior":"allow"'), `the runner read: ${read}`);
    check(read.includes('"Which colour?":"Blue"'), `the runner read: ${read}`);
    see('the runner read "allow" and the question\'s answer "Blue"; the run completed');
  });
}

async function runsRows(window) {
  return (await runsPane(window).locator('.monaco-list-row').allTextContents()).map((text) => clean(text).replace(/\s+/g, ' ').trim());
}

/** Clicks the inline action `label` (its tooltip) of the Runs view's row that shows `text`. */
async function clickRunAction(window, text, label) {
  const row = runsPane(window).locator('.monaco-list-row', { hasText: text }).first();
  await row.hover();
  await row.locator(`.action-label[aria-label="${label}"]`).first().click();
}

/** The trial lens runs the package's trial; its ending opens the report in a webview; the Runs view lists it;
 * and the report itself renders in Chromium with its chart. */
async function trialScenarios(window, browser, workbenchHome) {
  await scenario(window, '24-trials-lens-report', async (see) => {
    await window.clearNotifications();
    await window.openFile(MANIFEST('trialled'));
    const lenses = await waitFor('the trial lens', async () => {
      const shown = await window.codeLenses();
      return shown.includes('Run trials') ? shown : undefined;
    }, 60000);
    see(`code lenses: ${lenses.join(' | ')}`);
    await window.clickCodeLens('Run trials');
    const progress = await window.waitForToast('with the trial in progress', /Workbench: trial/, 30000);
    see(`progress notification: "${progress}"`);
    const ending = await window.waitForToast('with the trial line', /trials 0\.1\.0: 1\/1 works/, 180000);
    see(`ending notification: "${ending}"`);
    check(ending.includes('Open Report'), `the ending has no Open Report button: ${ending}`);
    await window.clickToastButton(/trials 0\.1\.0/, 'Open Report');
    const tab = await waitFor('the report tab', async () => {
      const tabs = (await window.page.locator('.tabs-container .tab').allTextContents()).map(clean);
      return tabs.find((text) => text.includes('Trial report · trialled'));
    });
    // What the webview shows: VS Code nests the page in two frames.
    const heading = await waitFor('the report drawn in the webview', async () => {
      for (const frame of window.page.frames()) {
        const text = await frame.locator('h1').first().textContent({ timeout: 500 }).catch(() => null);
        if (text !== null && text.includes('Trial of trialled')) {
          return text;
        }
      }
      return undefined;
    });
    see(`report tab "${tab}" shows "${clean(heading)}" (${await window.screenshot('24-trial-report-webview')})`);
    const lens = await waitFor('the latest trial lens', async () => {
      await window.openFile(MANIFEST('trialled'));
      return (await window.codeLenses()).find((text) => text.startsWith('trials 0.1.0'));
    }, 30000);
    see(`the lens now reads "${lens}"`);
    await window.page.keyboard.press('Escape');
    await window.page.keyboard.press('F1');
    const palette = await window.waitForQuickInput();
    await palette.fill('>Focus on Workbench Runs View');
    await window.page.locator('.quick-input-list .monaco-list-row', { hasText: 'Workbench Runs' }).first().click();
    await window.command('Workbench: Refresh Runs');
    // The jobs come after the runs: the list shows only its visible rows, so its end is brought into view.
    const rows = await waitFor('the trial in the Runs view', async () => {
      await runsPane(window).locator('.monaco-list').first().focus();
      await window.page.keyboard.press('End');
      const shown = await runsRows(window);
      return shown.some((row) => row.includes('trial · trialled')) ? shown : undefined;
    }, 30000);
    see(`Runs view: ${rows.filter((row) => row.includes('trial')).join(' / ')}`);
    // The report as a browser shows it: the chart drawn, one bar per arm.
    const trials = path.join(workbenchHome, 'trials');
    const [jobId] = fs.readdirSync(trials);
    const report = path.join(trials, jobId, 'report.html');
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    try {
      await page.goto(`file://${report}`);
      const chart = page.locator('svg').first();
      await chart.waitFor({ state: 'visible', timeout: TIMEOUT });
      const box = await chart.boundingBox();
      const bars = await page.locator('svg rect').count();
      const shot = path.join(ARTIFACTS, '24-trial-report-chromium.png');
      const png = await page.screenshot({ path: shot, fullPage: true });
      check(box !== null && box.width > 200 && box.height > 100, `the chart is not drawn: ${JSON.stringify(box)}`);
      check(bars >= 2, `the chart has ${bars} rects`);
      check(png.length > 10000, `the screenshot is blank (${png.length} bytes)`);
      see(`Chromium drew the report: chart ${Math.round(box.width)}×${Math.round(box.height)}, ${bars} rects, ${shot}`);
    } finally {
      await page.close();
    }
  });
}

async function runsScenarios(window, repo, workbenchHome, env) {
  await scenario(window, '17-runs-view-attach-kill', async (see) => {
    await window.clearNotifications();
    await window.closeAllEditors();
    // A run started outside the editor (the CLI, detached): the view finds it under the same Workbench home.
    const started = run(WB_LSP_BIN, ['run', '--detach', '--task', 'Work until killed', path.join(repo, '.workbenches', 'demo')], {
      cwd: repo,
      env: { ...env, PATH: env.PATH },
    });
    const runId = /wb_[0-9a-f]{24}/.exec(started)?.[0];
    check(runId !== undefined, `wb-lsp run --detach printed no run id: ${started}`);
    see(`wb-lsp run --detach started ${runId}`);
    await window.page.keyboard.press('Escape');
    await window.page.keyboard.press('F1');
    const input = await window.waitForQuickInput();
    await input.fill('>Focus on Workbench Runs View');
    await window.page.locator('.quick-input-list .monaco-list-row', { hasText: 'Workbench Runs' }).first().click();
    const listed = await waitFor('the run, running with its cost, in the Runs view', async () => {
      const rows = await runsRows(window);
      return rows.find((row) => row.includes('demo') && row.includes('running') && row.includes('$0.1250'));
    }, 30000).catch(async (error) => {
      throw new Failure(`${error.message}; the view shows: ${(await runsRows(window)).join(' | ')}`);
    });
    see(`Runs view row: "${listed}"`);
    const cost = await waitFor('the cost status bar item', async () => {
      const texts = (await window.page.locator('.statusbar-item').allTextContents()).map(clean);
      return texts.find((text) => /Workbench: 1 running, \$0\.1250/.test(text));
    }, 10000);
    see(`status bar: "${cost}"`);

    // Attach: the run's events, replayed, in the run output as for a run started here.
    await clickRunAction(window, 'running', 'Attach to Run');
    const progress = await window.waitForToast('with the attached run in progress', new RegExp(`Workbench run ${runId}`), 30000);
    see(`progress notification: "${progress}"`);
    const replayed = await window.waitForOutput('the replayed events in the run output', (shown) =>
      shown.some((line) => line.includes(`attached to ${runId}`)) && shown.some((line) => line.includes('Waiting to be killed')),
    );
    see(`Workbench Run output:\n    ${replayed.join('\n    ')}`);
    check(replayed.some((line) => line.includes(`▶ Run ${runId} started: demo 0.1.0 on local (opencode)`)), 'the run.started event was not replayed');

    // Kill, confirmed in the dialog: the run is cancelled, the follower sees it end, the view and the CLI agree.
    await clickRunAction(window, 'running', 'Kill Run');
    const dialog = window.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: TIMEOUT });
    const question = clean(await dialog.textContent());
    see(`confirmation: "${question}"`);
    check(question.includes(`Kill run demo (${runId})?`), `not the Kill confirmation: ${question}`);
    await dialog.locator('.monaco-button', { hasText: /^Kill$/ }).click();
    const ending = await window.waitForToast('with the attached run\'s ending', /the run was cancelled/, 60000);
    see(`ending notification: "${ending}"`);
    const lines = await window.waitForOutput('"■ Run cancelled" in the run output', (shown) => shown.some((line) => /■ Run cancelled/.test(line)));
    see(`the run output ends: ${lines.slice(-3).join(' / ')}`);
    const cancelled = await waitFor('the run shown cancelled in the Runs view', async () =>
      (await runsRows(window)).find((row) => row.includes('demo') && row.includes('cancelled')), 30000);
    see(`Runs view row: "${cancelled}"`);
    const records = JSON.parse(run(WB_LSP_BIN, ['runs', '--all', '--json'], { cwd: repo, env }));
    const record = records.find((candidate) => candidate.run_id === runId);
    check(record?.state === 'cancelled', `wb-lsp runs says ${JSON.stringify(record)}`);
    await waitFor('the cost status bar item to go', async () => {
      const texts = (await window.page.locator('.statusbar-item').allTextContents()).map(clean);
      return !texts.some((text) => /Workbench: \d+ running/.test(text)) || undefined;
    }, 10000);
    see('the cost status bar item is hidden: nothing runs');

    // Open Outcome on the cancelled run: its partial outcome, through the outcome commands.
    check(typeof record.outcome_id === 'string', `the killed run has no outcome: ${JSON.stringify(record)}`);
    await window.clearNotifications();
    await clickRunAction(window, 'cancelled', 'Open Run Outcome');
    const shown = await window.waitForToast('about the outcome', new RegExp(record.outcome_id), 30000);
    see(`Open Outcome: "${shown}"`);
  });

  await scenario(window, '18-runs-view-session-turn', async (see) => {
    await window.clearNotifications();
    // A session started from the CLI: its first turn ends, then it waits for the next.
    const first = run(WB_LSP_BIN, ['run', '--session', '--json', '--task', 'session turn one', path.join(repo, '.workbenches', 'demo')], {
      cwd: repo,
      env,
    });
    const runId = /wb_[0-9a-f]{24}/.exec(first)?.[0];
    check(runId !== undefined, `wb-lsp run --session printed no run id: ${first}`);
    see(`wb-lsp run --session started ${runId}; its first turn ended`);
    const listed = await waitFor('the idle session in the Runs view', async () =>
      (await runsRows(window)).find((row) => row.includes('idle') && row.includes('session, 1 turn')), 30000).catch(async (error) => {
      throw new Failure(`${error.message}; the view shows: ${(await runsRows(window)).join(' | ')}`);
    });
    see(`Runs view row: "${listed}"`);
    await clickRunAction(window, 'session, 1 turn', 'Send Turn to Session');
    const input = await window.waitForQuickInput();
    await input.fill('session turn two');
    await window.page.keyboard.press('Enter');
    const ending = await window.waitForToast('with the turn\'s ending', new RegExp(`turn 2 of session ${runId} completed|Outcome: `), 60000);
    see(`ending notification: "${ending}"`);
    const lines = await window.waitForOutput('the turn in the run output', (shown) =>
      shown.some((line) => line.includes('Session answer: session turn two')),
    );
    see(`Workbench Run output: ${lines.filter((line) => /session turn two/.test(line)).join(' / ')}`);
    const records = JSON.parse(run(WB_LSP_BIN, ['runs', '--all', '--json'], { cwd: repo, env }));
    const record = records.find((candidate) => candidate.run_id === runId);
    check(record?.state === 'idle' && record?.turns === 2, `wb-lsp runs says ${JSON.stringify(record)}`);
    const snapshots = JSON.parse(run(WB_LSP_BIN, ['outcomes', '--json'], { cwd: repo, env })).filter(
      (outcome) => outcome.run_id === runId && outcome.turn_index === 2,
    );
    check(snapshots.length === 1, `no snapshot of turn 2: ${JSON.stringify(snapshots)}`);
    see(`the turn's snapshot: ${snapshots[0].id}`);
    // Kill ends the idle session: its final outcome is collected and it completes.
    await clickRunAction(window, 'session, 2 turns', 'Kill Run');
    const dialog = window.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: TIMEOUT });
    await dialog.locator('.monaco-button', { hasText: /^Kill$/ }).click();
    const ended = await waitFor('the session shown completed in the Runs view', async () =>
      (await runsRows(window)).find((row) => row.includes('completed') && row.includes('session, 2 turns')), 30000);
    see(`Runs view row: "${ended}"`);
  });
}

/** The text of the diff editor's two sides, line by line. */
async function diffSides(window) {
  const side = async (which) =>
    (await window.page.locator(`.monaco-diff-editor .editor.${which} .view-line`).allTextContents()).map((line) =>
      line.replace(/\u00a0/g, ' '),
    );
  return { original: await side('original'), modified: await side('modified') };
}

async function reviewScenarios(window, repo, workbenchHome, env) {
  await scenario(window, '19-review-file-by-file', async (see) => {
    await window.clearNotifications();
    await window.closeAllEditors();
    // A run whose outcome is pending, as an isolated runtime leaves it: the receipt pending, the workspace as
    // before the run. Earlier scenarios applied the same edits: the workspace is put back first, so the run
    // changes something.
    fs.writeFileSync(path.join(repo, 'README.md'), '# Old title\n\nThe ledger service.\n');
    fs.rmSync(path.join(repo, 'notes'), { recursive: true, force: true });
    fs.writeFileSync(path.join(repo, 'obsolete.txt'), 'remove me\n');
    const events = run(WB_LSP_BIN, ['run', '--json', '--task', 'Write the findings report', path.join(repo, '.workbenches', 'demo')], { cwd: repo, env });
    const available = events.split('\n').filter((line) => line.includes('"outcome.available"')).map((line) => JSON.parse(line))[0];
    const outcomeId = available?.data?.outcome_id;
    check(typeof outcomeId === 'string', `the run gave no outcome: ${events}`);
    const receipt = path.join(workbenchHome, 'outcomes', outcomeId, 'application.json');
    fs.writeFileSync(receipt, JSON.stringify({ version: 1, outcome_id: outcomeId, state: 'pending', updated_at: '2026-01-01T00:00:00Z' }));
    fs.writeFileSync(path.join(repo, 'README.md'), '# Old title\n\nThe ledger service.\n');
    fs.rmSync(path.join(repo, 'notes'), { recursive: true, force: true });
    fs.writeFileSync(path.join(repo, 'obsolete.txt'), 'remove me\n');
    see(`wb-lsp run gave outcome ${outcomeId}, made pending`);
    await window.page.keyboard.press('Escape');
    await window.page.keyboard.press('F1');
    const palette = await window.waitForQuickInput();
    await palette.fill('>Focus on Workbench Runs View');
    await window.page.locator('.quick-input-list .monaco-list-row', { hasText: 'Workbench Runs' }).first().click();
    // The run expands into its files (its row named by its id for assistive technology, and so found here).
    const runId = /"run_id":"(wb_[0-9a-f]+)"/.exec(events)?.[1];
    check(runId !== undefined, `no run id in ${events}`);
    const row = runsPane(window).locator(`.monaco-list-row[aria-label*="${runId}"]`).first();
    // The view reads the runs every 2 s: until then it may still show the run running, with nothing to expand.
    await waitFor('the run shown completed in the Runs view', async () =>
      (await row.count()) > 0 && / completed /.test((await row.getAttribute('aria-label')) ?? '') || undefined, 30000);
    // Its twistie: a click on the row's middle may land on an inline action.
    await row.locator('.monaco-tl-twistie').click();
    see(`run row: ${await row.getAttribute('aria-label')}, expanded ${await row.getAttribute('aria-expanded')}`);
    const files = await waitFor('the outcome\'s files under the run', async () => {
      const rows = await runsRows(window);
      return rows.some((row) => row.startsWith('README.md')) ? rows : undefined;
    }, 30000).catch(async (error) => {
      throw new Failure(`${error.message}; the view shows: ${(await runsRows(window)).join(' | ')}`);
    });
    see(`Runs view: ${files.join(' | ')}`);
    check(files.some((row) => /^README\.md\s*M \+1 \u22121$/.test(row)), 'README.md is not listed as modified, +1 -1');
    check(files.some((row) => /^notes\/hello\.txt\s*A \+1$/.test(row)), 'notes/hello.txt is not listed as added');
    check(files.some((row) => /^obsolete\.txt\s*D \u22121$/.test(row)), 'obsolete.txt is not listed as deleted');
    // README.md in VS Code's own diff editor: both sides' text.
    await runsPane(window).locator('.monaco-list-row', { hasText: /^README\.md/ }).first().click();
    const sides = await waitFor('the diff editor with both sides', async () => {
      const shown = await diffSides(window);
      return shown.original.includes('# Old title') && shown.modified.includes('# New title') ? shown : undefined;
    }, 30000).catch(async (error) => {
      throw new Failure(`${error.message}; the diff editor shows ${JSON.stringify(await diffSides(window))}`);
    });
    const tab = await window.activeEditorPath();
    see(`diff editor "${tab}": before ${JSON.stringify(sides.original)}, after ${JSON.stringify(sides.modified)} (${await window.screenshot('19-review-diff')})`);
    check(sides.original.includes('The ledger service.') && sides.modified.includes('The ledger service.'), 'the unchanged line is not on both sides');
    // Apply This File: only README.md is taken, the receipt stays pending.
    // The view re-reads the runs every 2 s and redraws its rows: a click that lands while a row is replaced
    // reaches nothing. Only when nothing was applied and nothing said so is it made again.
    await clickRunAction(window, 'README.md', 'Apply This File');
    let toast = await window.waitForToast('about the file', /applied README\.md/, 5000).catch(() => undefined);
    if (toast === undefined && !fs.readFileSync(path.join(repo, 'README.md'), 'utf8').startsWith('# New title')) {
      see('Apply This File did nothing within 5 s (the row was redrawn?), clicking it again');
      await clickRunAction(window, 'README.md', 'Apply This File');
    }
    toast ??= await window.waitForToast('about the file', /applied README\.md/, 30000);
    see(`notification: "${toast}"`);
    check(fs.readFileSync(path.join(repo, 'README.md'), 'utf8').startsWith('# New title'), 'README.md was not applied');
    check(fs.existsSync(path.join(repo, 'obsolete.txt')), 'a file that was not selected was applied');
    let state = JSON.parse(fs.readFileSync(receipt, 'utf8')).state;
    check(state === 'pending', `the receipt is ${state} after one file`);
    const taken = await waitFor('README.md shown taken', async () => (await runsRows(window)).find((row) => row.startsWith('README.md') && row.includes('taken')), 30000);
    see(`Runs view: "${taken}"; the receipt is still pending`);
    // Then the rest: the whole outcome, and the receipt is applied.
    await window.clearNotifications();
    await window.command('Workbench: Apply Outcome');
    const dialog = window.page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: TIMEOUT });
    await dialog.locator('.monaco-button', { hasText: /^Apply$/ }).click();
    const rest = await window.waitForToast('about the rest', /applied outcome/, 30000);
    see(`notification: "${rest}"`);
    check(/2 applied, 1 unchanged/.test(rest), `not the rest of the outcome: ${rest}`);
    state = JSON.parse(fs.readFileSync(receipt, 'utf8')).state;
    check(state === 'applied', `the receipt is ${state} after the rest`);
    check(!fs.existsSync(path.join(repo, 'obsolete.txt')), 'obsolete.txt was not deleted');
    see('the receipt went from pending to applied');
  });
}

async function inlayHintScenario(window) {
  await scenario(window, '20-inlay-hints', async (see) => {
    await window.clearNotifications();
    await window.closeAllEditors();
    await window.openFile(MANIFEST('demo'));
    await waitFor('the document', async () => (await window.editorLines()).some((line) => line.startsWith('instructions:')) || undefined);
    // Held down, Ctrl+Alt shows the hints (editor.inlayHints.enabled: offUnlessPressed).
    await window.focusEditor();
    await window.page.keyboard.down('Control');
    await window.page.keyboard.down('Alt');
    let lines;
    try {
      lines = await window.waitForEditorLines('the inlay hints', (shown) =>
        shown.some((line) => /^instructions: .*tokens.*\(estimate\)/.test(line)) && shown.some((line) => /id: openai\/gpt-5\.6-terra.*→|no credentials/.test(line)),
      );
    } finally {
      await window.page.keyboard.up('Alt');
      await window.page.keyboard.up('Control');
    }
    const shown = lines.filter((line) => /tokens|→|no credentials/.test(line));
    see(`lines with hints: ${shown.join(' / ')} (${await window.screenshot('20-inlay-hints')})`);
    const released = await window.waitForEditorLines('the hints hidden again', (now) => !now.some((line) => /\(estimate\)/.test(line)));
    see(`released: ${released.find((line) => line.startsWith('instructions:'))}`);
  });
}

async function formattingAndTokensScenarios(window, repo) {
  await scenario(window, '21-format-document', async (see) => {
    await window.clearNotifications();
    await window.closeAllEditors();
    await window.openFile(MANIFEST('loose'));
    await window.waitForEditorLines('the loose manifest', (lines) => lines.includes('name:    "loose"'));
    // The server is up once its code lenses show.
    await waitFor('the code lenses', async () => (await window.page.locator('.editor-group-container.active .codelens-decoration').count()) > 0 || undefined, 60000);
    await window.focusEditor();
    await window.command('Format Document');
    const lines = await window.waitForEditorLines('the formatted manifest', (shown) =>
      shown.includes('name: loose') && shown.includes('runner: opencode') && shown.includes('  # the model') && shown.includes('  id: openai/gpt-5.6-terra') && shown.includes('  local: {}'),
    );
    see(`formatted: ${lines.join(' / ')} (${await window.screenshot('21-format-document')})`);
    const disk = fs.readFileSync(path.join(repo, MANIFEST('loose')), 'utf8');
    check(disk === MANIFESTS.loose, 'formatting wrote the file itself instead of editing the buffer');
    await window.command('File: Revert File');
    await window.waitForEditorLines('the reverted manifest', (shown) => shown.includes('name:    "loose"'));
    see('the edit is an ordinary buffer edit: File: Revert File undoes it');
  });

  await scenario(window, '23-prose-check-quick-fix', async (see) => {
    await window.closeAllEditors();
    await window.openFile('.workbenches/prose/instructions.md');
    await window.waitForEditorLines('the instructions', (lines) => lines.some((line) => line.startsWith('Run `jq .`')));
    await window.openProblems();
    const row = await waitFor('the prose warning in Problems', async () =>
      (await window.problems()).find((text) => text.includes('Command not declared in tools: jq')),
    60000);
    see(`Problems: "${row}"`);
    check(row.includes('prose-undeclared-tool') && /\[Ln 3, Col 6\]/.test(row), `the entry lacks its code or place: ${row}`);
    await window.focusEditor();
    await window.gotoLine(3, 7);
    const menu = await window.openQuickFix();
    const items = (await menu.locator('.monaco-list-row').allTextContents()).map(clean);
    see(`the quick fix menu offers: ${items.join(' | ')}`);
    const fix = menu.locator('.monaco-list-row', { hasText: 'Add `jq` to tools' }).first();
    check(await fix.count() > 0, `no "Add \`jq\` to tools" fix: ${items.join(' | ')}`);
    await fix.click();
    await waitFor('the warning to go once jq is declared', async () =>
      (await window.problems()).every((text) => !text.includes('Command not declared in tools: jq')) || undefined,
    60000);
    await window.openFile(MANIFEST('prose'));
    const lines = await window.waitForEditorLines('the manifest to list jq', (shown) => shown.includes('  - jq'));
    see(`the manifest's tools: ${lines.filter((line) => line.startsWith('  - ')).join(', ')} (${await window.screenshot('23-prose-fix')})`);
    await window.command('File: Revert File');
  });

  await scenario(window, '22-semantic-tokens', async (see) => {
    await window.closeAllEditors();
    await window.openFile(MANIFEST('demo'));
    await window.waitForEditorLines('the document', (lines) => lines.some((line) => line.startsWith('instructions:')));
    await window.focusEditor();
    await window.gotoLine(1, 2);
    await window.command('Developer: Inspect Editor Tokens and Scopes');
    const text = await waitFor('the token inspector to show a semantic token', async () => {
      const widget = clean((await window.page.locator('.token-inspect-widget').first().textContent().catch(() => '')) ?? '');
      return /semantic token type\s*property/.test(widget) ? widget : undefined;
    }, 30000);
    see(`inspector on \`spec\`: ${text.slice(0, 200)} (${await window.screenshot('22-semantic-tokens')})`);
    await window.page.keyboard.press('Escape');
  });
}

async function missingServerScenario(window) {
  await scenario(window, '14-missing-server', async (see) => {
    const toast = await window.waitForToast(
      'about the missing server',
      /server\.path is "[^"]*", but no executable wb-lsp is there|wb-lsp was not found on PATH/,
      60000,
    );
    see(`notification: "${toast}"`);
    check(/server\.path is "\/nonexistent\/wb-lsp", but no executable wb-lsp is there/.test(toast), `not the documented message: ${toast}`);
    check(toast.includes('Install Instructions') && toast.includes('Open Settings'), `the buttons are missing: ${toast}`);
    const status = (await window.page.locator('.statusbar-item').allTextContents()).map(clean).find((text) => /Workbench/.test(text));
    see(`status bar: "${status}"`);
    check(status !== undefined, 'no Workbench status bar item');
  });
}

/** Every line of the output channels' log files under a profile's user data (`logs/…/output_logging_…/`). */
function outputLogLines(userData) {
  const lines = [];
  const walk = (dir) => {
    for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && entry.name.endsWith('.log') && full.includes('output_logging')) {
        lines.push(...fs.readFileSync(full, 'utf8').split('\n'));
      }
    }
  };
  walk(path.join(userData, 'logs'));
  return lines;
}

async function bundledServerScenarios(window, profile) {
  await scenario(window, '15-settings-moved-notice', async (see) => {
    const toast = await window.waitForToast('about the moved settings', /settings moved to wb-lsp/, 60000);
    see(`notification: "${toast}"`);
    check(
      toast.includes('Workbench settings moved to wb-lsp.*: workbench.runTimeWarnings → wb-lsp.runTimeWarnings. The old keys still work.'),
      `not the documented notice: ${toast}`,
    );
    check(toast.includes('Open Settings'), `no Open Settings button: ${toast}`);
  });
  await scenario(window, '16-bundled-server', async (see) => {
    await window.openFile(MANIFEST('typo'));
    await window.openProblems();
    const row = await waitFor('the Problems entry from the bundled server', async () =>
      (await window.problems()).find((text) => text.includes('Unknown manifest field: descripton')),
    90000);
    see(`Problems: "${row}"`);
    check(row.includes('wb-lsp') && row.includes('unknown-field'), `the entry lacks source and code: ${row}`);
    await window.command('Workbench: Show Output');
    const lines = await window.waitForOutput('the output saying which wb-lsp runs', (shown) =>
      shown.some((line) => line.includes('Using the bundled wb-lsp:')),
    );
    const shown = lines.find((line) => line.includes('Using the bundled wb-lsp:'));
    see(`output: "${shown}"`);
    // The panel cuts a line at its width (a long temporary directory does), so the whole line is read from the
    // channel's log file when code-server keeps one; the panel's line must then be its beginning.
    const logged = outputLogLines(profile.userData).find((line) => line.includes('Using the bundled wb-lsp:'));
    const using = logged ?? shown;
    if (logged !== undefined) {
      see(`output log: "${logged}"`);
      check(logged.includes(shown.trim().replace(/^.*Using the bundled/, 'Using the bundled')), `the panel and the log differ: ${shown} / ${logged}`);
    }
    // The path is the installed extension's folder (`…/extensions/wb-lsp.workbench-<version>/server/wb-lsp` in
    // code-server): never a wb-lsp from PATH, which has none.
    const expected = `${profile.extensions}${path.sep}wb-lsp.`;
    const named = using.slice(using.indexOf('Using the bundled wb-lsp:') + 'Using the bundled wb-lsp:'.length).trim();
    check(
      named.startsWith(expected) || (logged === undefined && named.length > profile.dir.length && expected.startsWith(named)),
      `not the extension's own server (${expected}…): ${using}`,
    );
  });
}

// ---------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wb-vscode-e2e-')));
  log(`work directory ${work}, artifacts ${ARTIFACTS}`);
  let browser;
  try {
    const vsix = buildVsix(work);
    const repo = makeRepository(work);
    const workbenchHome = path.join(work, 'workbench-home');
    // No wb-lsp on code-server's PATH: the server is found through the setting only.
    const basePath = [path.join(work, 'bin'), NODE_BIN_DIR, '/usr/local/bin', '/usr/bin', '/bin'].join(':');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
    // The main window: the server under test.
    const main = makeProfile(work, 'main', WB_LSP_BIN, [path.join(work, 'bin')]);
    const env = profileEnv(main, { PATH: basePath, WORKBENCH_HOME: workbenchHome, OPENAI_API_KEY: 'sk-test' });
    log(`installed: ${installExtension(main, vsix, env)}`);
    if (ONLY.length === 0 || ONLY.some((name) => !['14', '15', '16'].some((n) => name.startsWith(n)))) {
      const server = await startCodeServer(main, repo, env, 'main');
      log(`code-server at ${server.url}`);
      const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
      const page = await context.newPage();
      const window = new Window(page);
      await window.open(server.url);
      await diagnosticsScenarios(window);
      await editingScenarios(window);
      await executionScenarios(window, repo, workbenchHome);
      await runsScenarios(window, repo, workbenchHome, env);
      await reviewScenarios(window, repo, workbenchHome, env);
      await inlayHintScenario(window);
      await formattingAndTokensScenarios(window, repo);
      await trialScenarios(window, browser, workbenchHome);
      await askingScenario(window, work, env);
      await context.close();
      stopCodeServer(server);
    }
    // A window with the linux-x64 package: no server path setting, no wb-lsp on PATH, and a setting under its
    // old name.
    if (ONLY.length === 0 || ONLY.some((name) => name.startsWith('15') || name.startsWith('16'))) {
      const bundledVsix = buildPlatformVsix(work, WB_LSP_BIN);
      const bundled = makeProfile(work, 'bundled', undefined, [], { 'workbench.runTimeWarnings': true });
      const bundledEnv = profileEnv(bundled, { PATH: basePath });
      log(`installed: ${installExtension(bundled, bundledVsix, bundledEnv)}`);
      // A repository of its own: the main window's scenarios edited the first one.
      const bundledRepo = makeRepository(path.join(work, 'bundled-work'));
      const server = await startCodeServer(bundled, bundledRepo, bundledEnv, 'bundled');
      const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
      const window = new Window(await context.newPage());
      await window.open(server.url);
      await bundledServerScenarios(window, bundled);
      await context.close();
      stopCodeServer(server);
    }
    // A second window whose server path names nothing and whose PATH has no wb-lsp.
    if (ONLY.length === 0 || ONLY.some((name) => name.startsWith('14'))) {
      const missing = makeProfile(work, 'missing', '/nonexistent/wb-lsp');
      const missingEnv = profileEnv(missing, { PATH: basePath });
      installExtension(missing, vsix, missingEnv);
      const server = await startCodeServer(missing, repo, missingEnv, 'missing');
      const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
      const window = new Window(await context.newPage());
      await window.open(server.url);
      await missingServerScenario(window);
      await context.close();
      stopCodeServer(server);
    }
  } finally {
    await browser?.close().catch(() => undefined);
    killAll();
    if (process.env.WB_KEEP_TEMP !== '1') {
      fs.rmSync(work, { recursive: true, force: true });
    } else {
      log(`kept ${work}`);
    }
  }
}

try {
  await main();
} catch (error) {
  results.push({ name: 'setup', ok: false, seen: [], message: error instanceof Failure ? error.message : (error.stack ?? String(error)) });
  log(`FAIL setup: ${results.at(-1).message}`);
}
const failed = results.filter((result) => !result.ok);
fs.writeFileSync(path.join(ARTIFACTS, 'report.json'), `${JSON.stringify(results, null, 2)}\n`);
log(`${results.length - failed.length} passed, ${failed.length} failed`);
for (const result of failed) {
  process.stdout.write(`FAILED ${result.name}: ${result.message}\n`);
}
process.exit(failed.length === 0 && results.length > 0 ? 0 : 1);
