/** Names shared by the extension's modules, its tests and package.json. */

/** The server's configuration section (`workspace/configuration`) and the prefix of every setting. */
export const CONFIGURATION_SECTION = 'workbench';

/**
 * The language client's id. vscode-languageclient reads `<id>.trace.server`, so this id makes the
 * `workbench.trace.server` setting work.
 */
export const CLIENT_ID = 'workbench';
export const CLIENT_NAME = 'Workbench Language Server';
export const OUTPUT_CHANNEL_NAME = 'Workbench';

/** The server executable's name, looked up on PATH when `workbench.server.path` is empty. */
export const SERVER_EXECUTABLE = 'wb-lsp';

/** Commands the server implements (`workspace/executeCommand`). */
export const SERVER_COMMAND_CHECK_WORKSPACE = 'workbench.checkWorkspace';
export const SERVER_COMMAND_MIGRATE = 'workbench.migrate';

/**
 * The extension's own commands. They cannot use the server's command names: vscode-languageclient registers a
 * VS Code command for every command the server announces, and a second registration of the same id fails.
 */
export const COMMAND_CHECK_WORKSPACE = 'wb-lsp.checkWorkspace';
export const COMMAND_MIGRATE = 'wb-lsp.migrate';
export const COMMAND_RESTART_SERVER = 'wb-lsp.restartServer';
export const COMMAND_SHOW_OUTPUT = 'wb-lsp.showOutput';

export const MANIFEST_GLOB = '**/.workbenches/*/workbench.yml';
export const SKILL_GLOB = '**/.workbenches/*/skills/*/SKILL.md';

export const INSTALL_URL = 'https://github.com/wb-lsp/wb-lsp#install';
export const RELEASES_URL = 'https://github.com/wb-lsp/wb-lsp/releases';
