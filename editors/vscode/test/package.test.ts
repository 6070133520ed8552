/** package.json's contributions agree with the code, the server and the repository. */
import './register';
import { strict as assert } from 'node:assert';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import * as constants from '../src/constants';
import { MACHINE_KEYS, settingName, SETTING_KEYS } from '../src/config';
import { SEVERITY_LEVELS } from '../src/settings';

const root = join(__dirname, '..', '..');
const repository = join(root, '..', '..');

interface Command {
  command: string;
  title: string;
  category?: string;
}
interface Manifest {
  name: string;
  publisher: string;
  license: string;
  repository: { url: string };
  main: string;
  engines: { vscode: string };
  capabilities?: { untrustedWorkspaces?: { supported: boolean | 'limited'; restrictedConfigurations?: string[] } };
  activationEvents: string[];
  contributes: {
    commands: Command[];
    menus: Record<string, Array<{ command: string; when?: string }>>;
    configuration: { properties: Record<string, { type: string; default: unknown; scope?: string; enum?: string[]; additionalProperties?: { enum?: string[] } }> };
    yamlValidation: Array<{ fileMatch: string | string[]; url: string }>;
  };
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest;

test('the marketplace fields vsce needs are present', () => {
  assert.equal(manifest.publisher, 'wb-lsp');
  assert.equal(manifest.license, 'Apache-2.0');
  assert.equal(manifest.repository.url, 'https://github.com/wb-lsp/wb-lsp');
  assert.equal(manifest.main, './dist/extension.js');
  assert.ok(existsSync(join(root, 'README.md')));
  assert.ok(existsSync(join(root, 'CHANGELOG.md')));
  assert.match(manifest.scripts.package ?? '', /vsce package --no-dependencies/);
  assert.match(manifest.scripts['vscode:prepublish'] ?? '', /build\.mjs --production/);
});

test('the engine matches the VS Code API types and vscode-languageclient 9', () => {
  assert.equal(manifest.engines.vscode, '^1.82.0');
  assert.match(manifest.devDependencies['@types/vscode'] ?? '', /^~1\.82\./);
  assert.match(manifest.dependencies['vscode-languageclient'] ?? '', /^\^9\./);
});

test('the extension activates on a workspace with packages and on YAML files', () => {
  assert.deepEqual(manifest.activationEvents, [
    `workspaceContains:${constants.MANIFEST_GLOB}`,
    'onLanguage:yaml',
    // An outcome's artifact or review diff restored in an editor after a reload.
    `onFileSystem:${constants.OUTCOME_SCHEME}`,
  ]);
});

test('the contributed commands are exactly the ones the extension registers', () => {
  const ids = manifest.contributes.commands.map((command) => command.command);
  assert.deepEqual(ids, [
    constants.COMMAND_CHECK_WORKSPACE,
    constants.COMMAND_MIGRATE,
    constants.COMMAND_RESTART_SERVER,
    constants.COMMAND_SHOW_OUTPUT,
    constants.COMMAND_DRY_RUN,
    constants.COMMAND_SMOKE,
    constants.COMMAND_RUN,
    constants.COMMAND_RUN_SESSION,
    constants.COMMAND_RUN_TRIALS,
    constants.COMMAND_OPEN_TRIAL_REPORT,
    constants.COMMAND_CANCEL_RUN,
    constants.COMMAND_SHOW_RUN_OUTPUT,
    constants.COMMAND_SHOW_OUTCOME,
    constants.COMMAND_OPEN_ARTIFACT,
    constants.COMMAND_VIEW_OUTCOME_DIFF,
    constants.COMMAND_APPLY_OUTCOME,
    constants.COMMAND_REFRESH_RUNS,
    constants.COMMAND_ATTACH_RUN,
    constants.COMMAND_KILL_RUN,
    constants.COMMAND_SEND_TURN,
    constants.COMMAND_ANSWER_RUN,
    constants.COMMAND_OPEN_RUN_OUTCOME,
    constants.COMMAND_OPEN_OUTCOME_FILE,
    constants.COMMAND_APPLY_OUTCOME_FILE,
  ]);
  assert.deepEqual(
    manifest.contributes.commands.map((command) => `${command.category ?? ''}: ${command.title}`),
    [
      'Workbench: Check Workspace',
      'Workbench: Migrate to Spec 1',
      'Workbench: Restart Server',
      'Workbench: Show Output',
      'Workbench: Dry Run',
      'Workbench: Smoke',
      'Workbench: Run Workbench',
      'Workbench: Run Workbench as Session',
      'Workbench: Run Trials',
      'Workbench: Open Trial Report',
      'Workbench: Cancel Run',
      'Workbench: Show Run Output',
      'Workbench: Show Outcome',
      'Workbench: Open Outcome Artifact',
      'Workbench: View Outcome Diff',
      'Workbench: Apply Outcome',
      'Workbench: Refresh Runs',
      'Workbench: Attach to Run',
      'Workbench: Kill Run',
      'Workbench: Send Turn to Session',
    'Workbench: Answer What the Run Asks',
      'Workbench: Open Run Outcome',
      'Workbench: Open Changes',
      'Workbench: Apply This File',
    ],
  );
  // vscode-languageclient registers the server's own commands; contributing them again would clash.
  for (const id of [
    constants.SERVER_COMMAND_CHECK_WORKSPACE,
    constants.SERVER_COMMAND_MIGRATE,
    constants.SERVER_COMMAND_DRY_RUN,
    constants.SERVER_COMMAND_SMOKE,
    constants.SERVER_COMMAND_RUN,
    constants.SERVER_COMMAND_OUTCOME,
    constants.SERVER_COMMAND_APPLY_OUTCOME,
    constants.SERVER_COMMAND_RUNS,
    constants.SERVER_COMMAND_ATTACH,
    constants.SERVER_COMMAND_KILL,
    constants.SERVER_COMMAND_SEND,
    constants.SERVER_COMMAND_OUTCOME_FILE,
  ]) {
    assert.ok(!ids.includes(id), `${id} belongs to the server`);
    assert.ok(!id.startsWith('wb-lsp.'));
  }
  for (const [menu, entries] of Object.entries(manifest.contributes.menus)) {
    for (const entry of entries) {
      assert.ok(ids.includes(entry.command), `${menu} names a contributed command: ${entry.command}`);
    }
  }
  // Cancel Run shows in the palette only while a run is in progress; Apply Outcome only for a pending outcome.
  assert.deepEqual(manifest.contributes.menus.commandPalette, [
    { command: constants.COMMAND_CANCEL_RUN, when: constants.RUNNING_CONTEXT },
    { command: constants.COMMAND_APPLY_OUTCOME, when: constants.OUTCOME_PENDING_CONTEXT },
    // Open Run Outcome needs a Runs view item (Show Outcome is the palette's way); so do the file actions.
    { command: constants.COMMAND_OPEN_RUN_OUTCOME, when: 'false' },
    { command: constants.COMMAND_OPEN_OUTCOME_FILE, when: 'false' },
    { command: constants.COMMAND_APPLY_OUTCOME_FILE, when: 'false' },
  ]);
});

test('the Runs view is in the Explorer, and its item actions follow the run\'s state', () => {
  const views = (manifest.contributes as unknown as { views: Record<string, Array<{ id: string; name: string }>> }).views;
  assert.deepEqual(
    views.explorer?.map((view) => [view.id, view.name]),
    [[constants.RUNS_VIEW_ID, 'Workbench Runs']],
  );
  assert.deepEqual(manifest.contributes.menus['view/title'], [
    { command: constants.COMMAND_REFRESH_RUNS, when: `view == ${constants.RUNS_VIEW_ID}`, group: 'navigation' },
  ]);
  const items = manifest.contributes.menus['view/item/context'] ?? [];
  // What each action's `when` asks of the item's contextValue (src/runs.ts runContextValue).
  const shown = (command: string, contextValue: string) =>
    items
      .filter((entry) => entry.command === command)
      .map((entry) => {
        const match = /^view == (\S+) && viewItem =~ \/(.*)\/$/.exec(entry.when ?? '');
        assert.ok(match, entry.when);
        return match[1] === constants.RUNS_VIEW_ID && new RegExp(match[2] ?? '').test(contextValue);
      });
  const running = 'workbenchRun running attachable';
  const done = 'workbenchRun attachable outcome';
  const lost = 'workbenchRun';
  const idle = 'workbenchRun running idle attachable';
  // A changed file of an outcome opens in the diff editor; only a pending outcome's untaken file is applied.
  assert.deepEqual(shown(constants.COMMAND_OPEN_OUTCOME_FILE, 'outcomeFile'), [true, true]);
  assert.deepEqual(shown(constants.COMMAND_APPLY_OUTCOME_FILE, 'outcomeFile applicable'), [true, true]);
  assert.deepEqual(shown(constants.COMMAND_APPLY_OUTCOME_FILE, 'outcomeFile'), [false, false]);
  assert.deepEqual(shown(constants.COMMAND_OPEN_OUTCOME_FILE, done), [false, false]);
  assert.deepEqual(shown(constants.COMMAND_SEND_TURN, idle), [true, true]);
  assert.deepEqual(shown(constants.COMMAND_SEND_TURN, running), [false, false]);
  assert.deepEqual(shown(constants.COMMAND_ANSWER_RUN, 'workbenchRun running needsInput attachable'), [true, true]);
  assert.deepEqual(shown(constants.COMMAND_ANSWER_RUN, running), [false, false]);
  assert.deepEqual(shown(constants.COMMAND_KILL_RUN, idle), [true, true]);
  assert.deepEqual(shown(constants.COMMAND_KILL_RUN, running), [true, true]);
  assert.deepEqual(shown(constants.COMMAND_KILL_RUN, done), [false, false]);
  assert.deepEqual(shown(constants.COMMAND_ATTACH_RUN, running), [true, true]);
  assert.deepEqual(shown(constants.COMMAND_ATTACH_RUN, lost), [false, false]);
  assert.deepEqual(shown(constants.COMMAND_OPEN_RUN_OUTCOME, done), [true, true]);
  assert.deepEqual(shown(constants.COMMAND_OPEN_RUN_OUTCOME, running), [false, false]);
});

test('the code lenses of the server are rewritten to the extension\'s commands', () => {
  assert.deepEqual(constants.LENS_COMMANDS, {
    'workbench.dryRun': 'wb-lsp.dryRun',
    'workbench.smoke': 'wb-lsp.smoke',
    'workbench.run': 'wb-lsp.run',
    'workbench.trial': 'wb-lsp.runTrials',
    'workbench.openTrialReport': 'wb-lsp.openTrialReport',
  });
  const ids = manifest.contributes.commands.map((command) => command.command);
  for (const target of Object.values(constants.LENS_COMMANDS)) {
    assert.ok(ids.includes(target), `${target} is contributed`);
  }
});

test('the manifest menus (migrate, dry run, smoke, run, run trials) show on manifests only', () => {
  const manifestCommands: string[] = [
    constants.COMMAND_MIGRATE,
    constants.COMMAND_DRY_RUN,
    constants.COMMAND_SMOKE,
    constants.COMMAND_RUN,
    constants.COMMAND_RUN_TRIALS,
  ];
  for (const name of ['explorer/context', 'editor/context']) {
    const commands = (manifest.contributes.menus[name] ?? []).map((entry) => entry.command);
    assert.deepEqual(commands, manifestCommands, name);
  }
  for (const entries of Object.values(manifest.contributes.menus)) {
    for (const entry of entries.filter((e) => manifestCommands.includes(e.command))) {
      const when = entry.when ?? '';
      assert.match(when, /resourceFilename == workbench\.yml/);
      const regex = /resourceDirname =~ \/(.*)\/$/.exec(when);
      assert.ok(regex, when);
      const pattern = new RegExp(regex[1] ?? '');
      assert.ok(pattern.test('/work/repo/.workbenches/demo'));
      assert.ok(pattern.test('C:\\repo\\.workbenches\\demo'));
      assert.ok(!pattern.test('/work/repo/.workbenches/demo/sub'));
      assert.ok(!pattern.test('/work/repo/config'));
    }
  }
});

test('the settings mirror the server\'s, with its defaults, all under wb-lsp.*', () => {
  const properties = manifest.contributes.configuration.properties;
  assert.deepEqual(Object.keys(properties).sort(), [
    'wb-lsp.format',
    'wb-lsp.inlayHints',
    'wb-lsp.modelCatalog',
    'wb-lsp.runTimeWarnings',
    'wb-lsp.server.path',
    'wb-lsp.severity',
    'wb-lsp.trace.server',
  ]);
  // Nothing under VS Code's own `workbench.*` namespace any more; every key is one the extension reads.
  for (const key of Object.keys(properties)) {
    assert.ok(key.startsWith(`${constants.SETTINGS_SECTION}.`), key);
    assert.ok(!key.startsWith('workbench.'), key);
  }
  assert.deepEqual(Object.keys(properties).sort(), SETTING_KEYS.map(settingName).sort());
  assert.equal(properties['wb-lsp.runTimeWarnings']?.default, true);
  // Every kind of inlay hint is on until switched off, as the server has it.
  assert.deepEqual(properties['wb-lsp.inlayHints']?.default, { context: true, route: true, env: true });
  // Formatting keeps the author's key order unless asked, as the server has it.
  assert.deepEqual(properties['wb-lsp.format']?.default, { fieldOrder: false });
  assert.deepEqual(properties['wb-lsp.severity']?.default, {});
  assert.deepEqual(properties['wb-lsp.severity']?.additionalProperties?.enum, [...SEVERITY_LEVELS]);
  assert.equal(properties['wb-lsp.modelCatalog']?.default, '');
  assert.equal(properties['wb-lsp.server.path']?.default, '');
  assert.deepEqual(properties['wb-lsp.trace.server']?.enum, ['off', 'messages', 'verbose']);
  // vscode-languageclient reads `<client id>.trace.server`.
  assert.ok(`${constants.CLIENT_ID}.trace.server` in properties);
  // The server still asks for its `workbench` section (Neovim and Emacs send that); the middleware answers it.
  assert.equal(constants.SERVER_CONFIGURATION_SECTION, 'workbench');
  assert.equal(constants.LEGACY_SETTINGS_SECTION, 'workbench');
  // The notice's Settings UI filter names this extension.
  assert.equal(constants.EXTENSION_ID, `${manifest.publisher}.${manifest.name}`);
});

test('the platform packages: a script per target, server/ shipped only by them', () => {
  assert.match(manifest.scripts['package:linux-x64'] ?? '', /package-platform\.mjs --target linux-x64 --server \S+wb-lsp/);
  const ignore = readFileSync(join(root, '.vscodeignore'), 'utf8').split('\n');
  assert.ok(ignore.includes('!server/wb-lsp'));
  assert.ok(ignore.includes('!server/wb-lsp.exe'));
  const gitignore = readFileSync(join(root, '.gitignore'), 'utf8').split('\n');
  assert.ok(gitignore.includes('/server/'), 'the copied binary is not committed');
  assert.ok(!existsSync(join(root, 'server')), 'no server/ left behind for the plain package');
});

test('the severity levels are the server\'s', () => {
  const state = readFileSync(join(repository, 'crates', 'wb-lsp', 'src', 'server', 'snapshot.rs'), 'utf8');
  for (const level of SEVERITY_LEVELS) {
    assert.ok(state.includes(`Some("${level}")`), `the server reads ${level}`);
  }
});

test('yamlValidation maps the manifests to the schema copied into the package', () => {
  assert.deepEqual(manifest.contributes.yamlValidation, [
    { fileMatch: constants.MANIFEST_GLOB, url: './schemas/workbench.schema.json' },
  ]);
  const build = readFileSync(join(root, 'scripts', 'build.mjs'), 'utf8');
  assert.match(build, /join\(repository, 'schemas', 'v1', 'workbench\.schema\.json'\), join\(here, 'schemas', 'workbench\.schema\.json'\)/);
  const ignore = readFileSync(join(root, '.vscodeignore'), 'utf8').split('\n');
  for (const shipped of ['!dist/extension.js', '!schemas/workbench.schema.json', '!LICENSE', '!README.md', '!CHANGELOG.md']) {
    assert.ok(ignore.includes(shipped), `.vscodeignore keeps ${shipped}`);
  }
  const gitignore = readFileSync(join(root, '.gitignore'), 'utf8').split('\n');
  assert.ok(gitignore.includes('/schemas/'), 'the copied schema is not committed');
  const schema = JSON.parse(readFileSync(join(repository, 'schemas', 'v1', 'workbench.schema.json'), 'utf8')) as {
    $id: string;
  };
  assert.equal(schema.$id, 'https://raw.githubusercontent.com/wb-lsp/wb-lsp/main/schemas/v1/workbench.schema.json');
});

test('the server commands the extension calls are the ones wb-lsp announces', () => {
  const server = join(repository, 'crates', 'wb-lsp', 'src', 'server');
  const ext = readFileSync(join(server, 'ext.rs'), 'utf8');
  for (const name of [
    constants.SERVER_COMMAND_MIGRATE,
    constants.SERVER_COMMAND_CHECK_WORKSPACE,
    constants.SERVER_COMMAND_DRY_RUN,
    constants.SERVER_COMMAND_SMOKE,
    constants.SERVER_COMMAND_RUN,
    constants.SERVER_COMMAND_OUTCOME,
    constants.SERVER_COMMAND_APPLY_OUTCOME,
    constants.RUN_EVENT_NOTIFICATION,
  ]) {
    assert.ok(ext.includes(`"${name}"`), `the server names ${name}`);
  }
  const state = readFileSync(join(server, 'settings.rs'), 'utf8');
  assert.ok(state.includes('section: Some("workbench".into())'), 'the server asks for the workbench section');
});

test('a workspace cannot choose the server: the setting is machine-scoped and restricted in untrusted workspaces', () => {
  const properties = manifest.contributes.configuration.properties;
  assert.equal(properties['wb-lsp.server.path']?.scope, 'machine');
  assert.deepEqual(manifest.capabilities?.untrustedWorkspaces?.restrictedConfigurations, ['wb-lsp.server.path']);
  assert.deepEqual(MACHINE_KEYS, ['server.path']);
});
