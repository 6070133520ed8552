/** Names shared by the extension's modules, its tests and package.json. */

/**
 * The section the server asks for with `workspace/configuration` (every editor's client answers it: Neovim and
 * Emacs send `{workbench = {...}}`). In VS Code the settings are `wb-lsp.*` (src/config.ts); the client's
 * middleware answers the server's `workbench` requests from them.
 */
export const SERVER_CONFIGURATION_SECTION = 'workbench';

/** The extension's configuration section: every contributed setting is `wb-lsp.<key>`. */
export const SETTINGS_SECTION = 'wb-lsp';
/** The section of the settings before 0.2, still read when the new key is not set (src/config.ts). */
export const LEGACY_SETTINGS_SECTION = 'workbench';
/** The extension's id (`publisher.name`): the Settings UI filter `@ext:wb-lsp.workbench` shows its settings. */
export const EXTENSION_ID = 'wb-lsp.workbench';

/**
 * The language client's id. vscode-languageclient reads `<id>.trace.server`, so this id makes the
 * `wb-lsp.trace.server` setting work (the old `workbench.trace.server` is applied by src/client.ts).
 */
export const CLIENT_ID = 'wb-lsp';
export const CLIENT_NAME = 'Workbench Language Server';
export const OUTPUT_CHANNEL_NAME = 'Workbench';
/** The output channel the run events, smoke reports and run endings are written to. */
export const RUN_OUTPUT_CHANNEL_NAME = 'Workbench Run';
/** The button of a message that opens its output channel (the server's or the run's). */
export const BUTTON_OUTPUT = 'Show Output';

/** The server executable's name, looked up on PATH when `wb-lsp.server.path` is empty and none is bundled. */
export const SERVER_EXECUTABLE = 'wb-lsp';
/** Where a platform-specific package carries the server: `<extension>/server/wb-lsp` (`wb-lsp.exe` on Windows). */
export const BUNDLED_SERVER_DIRECTORY = 'server';

/** Commands the server implements (`workspace/executeCommand`). */
export const SERVER_COMMAND_CHECK_WORKSPACE = 'workbench.checkWorkspace';
export const SERVER_COMMAND_MIGRATE = 'workbench.migrate';
export const SERVER_COMMAND_DRY_RUN = 'workbench.dryRun';
export const SERVER_COMMAND_SMOKE = 'workbench.smoke';
export const SERVER_COMMAND_RUN = 'workbench.run';
export const SERVER_COMMAND_OUTCOME = 'workbench.outcome';
export const SERVER_COMMAND_APPLY_OUTCOME = 'workbench.applyOutcome';
export const SERVER_COMMAND_OUTCOME_FILE = 'workbench.outcomeFile';
export const SERVER_COMMAND_RUNS = 'workbench.runs';
export const SERVER_COMMAND_ATTACH = 'workbench.attach';
export const SERVER_COMMAND_KILL = 'workbench.kill';
export const SERVER_COMMAND_SEND = 'workbench.send';
export const SERVER_COMMAND_TRIAL = 'workbench.trial';
export const SERVER_COMMAND_TRIALS = 'workbench.trials';
export const SERVER_COMMAND_OPEN_TRIAL_REPORT = 'workbench.openTrialReport';
export const SERVER_COMMAND_ANSWER = 'workbench.answer';

/** The notification carrying each canonical event of a `workbench.run` (docs/lsp-extensions.md). */
export const RUN_EVENT_NOTIFICATION = 'workbench/runEvent';
/** A run the client follows asks the person something; and that request was answered or refused. */
export const INPUT_REQUESTED_NOTIFICATION = 'workbench/inputRequested';
export const INPUT_RESOLVED_NOTIFICATION = 'workbench/inputResolved';

/**
 * The extension's own commands. They cannot use the server's command names: vscode-languageclient registers a
 * VS Code command for every command the server announces, and a second registration of the same id fails.
 */
export const COMMAND_CHECK_WORKSPACE = 'wb-lsp.checkWorkspace';
export const COMMAND_MIGRATE = 'wb-lsp.migrate';
export const COMMAND_RESTART_SERVER = 'wb-lsp.restartServer';
export const COMMAND_SHOW_OUTPUT = 'wb-lsp.showOutput';
export const COMMAND_DRY_RUN = 'wb-lsp.dryRun';
export const COMMAND_SMOKE = 'wb-lsp.smoke';
export const COMMAND_RUN = 'wb-lsp.run';
export const COMMAND_RUN_TRIALS = 'wb-lsp.runTrials';
export const COMMAND_OPEN_TRIAL_REPORT = 'wb-lsp.openTrialReport';
export const COMMAND_RUN_SESSION = 'wb-lsp.runSession';
export const COMMAND_CANCEL_RUN = 'wb-lsp.cancelRun';
export const COMMAND_SHOW_RUN_OUTPUT = 'wb-lsp.showRunOutput';
export const COMMAND_SHOW_OUTCOME = 'wb-lsp.showOutcome';
export const COMMAND_OPEN_ARTIFACT = 'wb-lsp.openArtifact';
export const COMMAND_VIEW_OUTCOME_DIFF = 'wb-lsp.viewOutcomeDiff';
export const COMMAND_APPLY_OUTCOME = 'wb-lsp.applyOutcome';
/** A changed file of an outcome in the diff editor (the Runs view's file items). */
export const COMMAND_OPEN_OUTCOME_FILE = 'wb-lsp.openOutcomeFile';
/** Takes one changed file of a pending outcome (`workbench.applyOutcome` with `only`). */
export const COMMAND_APPLY_OUTCOME_FILE = 'wb-lsp.applyOutcomeFile';
export const COMMAND_REFRESH_RUNS = 'wb-lsp.refreshRuns';
export const COMMAND_ATTACH_RUN = 'wb-lsp.attachRun';
export const COMMAND_KILL_RUN = 'wb-lsp.killRun';
export const COMMAND_SEND_TURN = 'wb-lsp.sendTurn';
export const COMMAND_ANSWER_RUN = 'wb-lsp.answerRun';
export const COMMAND_OPEN_RUN_OUTCOME = 'wb-lsp.openRunOutcome';
/** The Workbench Runs view (in the Explorer): running and recent runs. */
export const RUNS_VIEW_ID = 'wb-lsp.runs';
/** A context key, true while a run is in progress (shows Cancel Run in the command palette). */
export const RUNNING_CONTEXT = 'wb-lsp.running';
/** A context key, true while the current outcome is pending (shows Apply Outcome in the command palette). */
export const OUTCOME_PENDING_CONTEXT = 'wb-lsp.outcomePending';

/**
 * The server's code lenses name its own commands (`workbench.dryRun`, ...). The commands vscode-languageclient
 * registers for them would send the lens's bare `{uri}` and drop the result, so the lenses are rewritten to the
 * extension's commands, which ask for the task and show the result.
 */
export const LENS_COMMANDS: Readonly<Record<string, string>> = {
  [SERVER_COMMAND_DRY_RUN]: COMMAND_DRY_RUN,
  [SERVER_COMMAND_SMOKE]: COMMAND_SMOKE,
  [SERVER_COMMAND_RUN]: COMMAND_RUN,
  [SERVER_COMMAND_TRIAL]: COMMAND_RUN_TRIALS,
  [SERVER_COMMAND_OPEN_TRIAL_REPORT]: COMMAND_OPEN_TRIAL_REPORT,
};

/** The scheme of the read-only documents of outcomes (artifacts, review diffs); see src/outcomeFiles.ts. */
export const OUTCOME_SCHEME = 'wb-outcome';

export const MANIFEST_GLOB = '**/.workbenches/*/workbench.yml';
/** A package's Markdown: its instructions and skills, where the prose checks report (docs/prose-checks.md). */
export const PACKAGE_MARKDOWN_GLOB = '**/.workbenches/*/**/*.md';
/** A package's trial tasks: `trials/<id>/task.json`. */
export const TRIAL_TASK_GLOB = '**/.workbenches/*/trials/*/task.json';

export const INSTALL_URL = 'https://github.com/wb-lsp/wb-lsp#install';
export const RELEASES_URL = 'https://github.com/wb-lsp/wb-lsp/releases';
