/**
 * Finding the `wb-lsp` executable: the `wb-lsp.server.path` setting (or its old name `workbench.server.path`),
 * else the server bundled in a platform-specific package (`<extension>/server/wb-lsp`), else `wb-lsp` on PATH.
 */

import * as path from 'node:path';
import { INSTALL_URL, RELEASES_URL, SERVER_EXECUTABLE } from './constants';
import { expandPath } from './settings';

export interface ResolveContext {
  platform: NodeJS.Platform;
  /** The environment, for PATH, PATHEXT and HOME. */
  env: Readonly<Record<string, string | undefined>>;
  homedir: string;
  /** Absolute paths of the workspace folders, the first one first. */
  workspaceFolders: readonly string[];
  /** True when `file` is a regular file that may be executed. */
  isExecutable(file: string): boolean;
  /**
   * The server a platform-specific package carries (`<extension>/server/wb-lsp`, `wb-lsp.exe` on Windows);
   * undefined when the extension's directory is unknown.
   */
  bundled?: string;
}

/** The setting naming the server, as read by src/config.ts. */
export interface ServerPathSetting {
  /** The value as written; empty or undefined: not set. */
  readonly value: string | undefined;
  /** The key it was read from: `wb-lsp.server.path`, or the old `workbench.server.path`. */
  readonly name: string;
}

export const SERVER_PATH_SETTING = 'wb-lsp.server.path';

export type Resolution =
  | {
      readonly kind: 'found';
      readonly path: string;
      readonly source: 'setting' | 'bundled' | 'path';
      /** The setting's key (source `setting`). */
      readonly settingName: string;
      /** The bundled file that was looked for and is not there (source `path`). */
      readonly bundled?: string;
    }
  | {
      readonly kind: 'missing';
      /** `setting`: the setting names nothing executable; `path`: no bundled server, and wb-lsp is not on PATH. */
      readonly source: 'setting' | 'path';
      /** The setting's key (`wb-lsp.server.path` or the old `workbench.server.path`). */
      readonly settingName: string;
      /** The setting's value as written (source `setting`). */
      readonly configured?: string;
      /** Every file that was tried, in order. */
      readonly tried: readonly string[];
    };

function pathModule(platform: NodeJS.Platform): path.PlatformPath {
  return platform === 'win32' ? path.win32 : path.posix;
}

/** The names to try for `name` on this platform: `wb-lsp`, or `wb-lsp.exe`, `wb-lsp.cmd`, ... on Windows. */
function candidateNames(name: string, context: ResolveContext): string[] {
  if (context.platform !== 'win32') {
    return [name];
  }
  const extensions = (context.env.PATHEXT ?? context.env.Pathext ?? '.COM;.EXE;.BAT;.CMD')
    .split(';')
    .map((extension) => extension.trim().toLowerCase())
    .filter((extension) => extension.length > 0);
  if (extensions.some((extension) => name.toLowerCase().endsWith(extension))) {
    return [name];
  }
  return extensions.map((extension) => name + extension);
}

function searchPath(name: string, context: ResolveContext, tried: string[]): string | undefined {
  const p = pathModule(context.platform);
  const pathVariable = context.env.PATH ?? context.env.Path ?? '';
  for (const directory of pathVariable.split(p.delimiter)) {
    if (directory.length === 0) {
      continue;
    }
    for (const candidate of candidateNames(name, context)) {
      const file = p.join(directory, candidate);
      tried.push(file);
      if (context.isExecutable(file)) {
        return file;
      }
    }
  }
  return undefined;
}

/**
 * Resolves the server executable. A non-empty setting wins: an absolute path (after expanding `~` and
 * `${workspaceFolder}`) is used as it is, a relative path with a directory part is taken from the first
 * workspace folder, and a bare name (`wb-lsp-nightly`) is looked up on PATH; when it names nothing executable,
 * that is reported (no fallback: the user asked for that one). An empty setting takes the bundled server when
 * the package has one, else `wb-lsp` on PATH.
 */
export function resolveServerPath(
  setting: ServerPathSetting | string | undefined,
  context: ResolveContext,
): Resolution {
  const p = pathModule(context.platform);
  const tried: string[] = [];
  const { value, name: settingName } =
    typeof setting === 'object' ? setting : { value: setting, name: SERVER_PATH_SETTING };
  const configured = (value ?? '').trim();
  if (configured.length === 0) {
    if (context.bundled !== undefined) {
      tried.push(context.bundled);
      if (context.isExecutable(context.bundled)) {
        return { kind: 'found', path: context.bundled, source: 'bundled', settingName };
      }
    }
    const found = searchPath(SERVER_EXECUTABLE, context, tried);
    if (found === undefined) {
      return { kind: 'missing', source: 'path', settingName, tried };
    }
    return context.bundled === undefined
      ? { kind: 'found', path: found, source: 'path', settingName }
      : { kind: 'found', path: found, source: 'path', settingName, bundled: context.bundled };
  }

  const expanded = expandPath(configured, {
    homedir: context.homedir,
    workspaceFolder: context.workspaceFolders[0],
    platform: context.platform,
  });
  const bareName = !expanded.includes('/') && !(context.platform === 'win32' && expanded.includes('\\'));
  if (bareName) {
    const found = searchPath(expanded, context, tried);
    return found !== undefined
      ? { kind: 'found', path: found, source: 'setting', settingName }
      : { kind: 'missing', source: 'setting', settingName, configured, tried };
  }
  for (const candidate of context.platform === 'win32' ? [expanded, ...candidateNames(expanded, context)] : [expanded]) {
    const file = p.normalize(candidate);
    if (!tried.includes(file)) {
      tried.push(file);
    }
    if (context.isExecutable(file)) {
      return { kind: 'found', path: file, source: 'setting', settingName };
    }
  }
  return { kind: 'missing', source: 'setting', settingName, configured, tried };
}

/**
 * The output channel's line saying which server is used and why:
 * `Using wb-lsp from the setting wb-lsp.server.path: /x/wb-lsp`,
 * `Using the bundled wb-lsp: /ext/server/wb-lsp (extension 0.1.0; wb-lsp.server.path is empty)`,
 * `Using wb-lsp from PATH: /usr/local/bin/wb-lsp (wb-lsp.server.path is empty and there is no bundled server at ...)`.
 */
export function describeResolution(
  resolution: Extract<Resolution, { kind: 'found' }>,
  extensionVersion?: string,
): string {
  switch (resolution.source) {
    case 'setting': {
      const renamed =
        resolution.settingName === SERVER_PATH_SETTING ? '' : ` (the old name of ${SERVER_PATH_SETTING})`;
      return `Using wb-lsp from the setting ${resolution.settingName}${renamed}: ${resolution.path}`;
    }
    case 'bundled':
      return (
        `Using the bundled wb-lsp: ${resolution.path} (` +
        `${extensionVersion === undefined ? '' : `extension ${extensionVersion}; `}${SERVER_PATH_SETTING} is empty)`
      );
    case 'path':
      return (
        `Using wb-lsp from PATH: ${resolution.path} (${SERVER_PATH_SETTING} is empty and there is no bundled ` +
        `server${resolution.bundled === undefined ? '' : ` at ${resolution.bundled}`})`
      );
  }
}

export interface MissingServerMessage {
  readonly message: string;
  /** Longer text for the output channel: what was tried and how to install. */
  readonly details: string;
}

/** Install instructions, shared by the notification, the output channel and the README. */
export const INSTALL_INSTRUCTIONS = [
  'Install wb-lsp with one of:',
  '  cargo install --path crates/wb-lsp      (from a checkout of https://github.com/wb-lsp/wb-lsp)',
  '  cargo install --git https://github.com/wb-lsp/wb-lsp --locked wb-lsp',
  `  a release binary from ${RELEASES_URL}, put on PATH`,
  '  or the extension for your platform (workbench-linux-x64-<version>.vsix, ...), which bundles wb-lsp',
  `then run "Workbench: Restart Server", or set ${SERVER_PATH_SETTING} to the executable.`,
  `More: ${INSTALL_URL}`,
].join('\n');

/** The error shown when the server cannot be found. */
export function missingServerMessage(resolution: Extract<Resolution, { kind: 'missing' }>): MissingServerMessage {
  const message =
    resolution.source === 'setting'
      ? `Workbench: ${resolution.settingName} is "${resolution.configured ?? ''}", but no executable wb-lsp is there. ` +
        'Fix the setting, or clear it to use the bundled wb-lsp or the one on PATH.'
      : 'Workbench: the language server wb-lsp was not found on PATH (and this extension bundles none). ' +
        'Install it with `cargo install --path crates/wb-lsp` (from a wb-lsp checkout) or from the releases, ' +
        `install the extension's build for your platform, or set ${SERVER_PATH_SETTING}.`;
  const tried =
    resolution.tried.length > 0 ? `Tried:\n${resolution.tried.map((file) => `  ${file}`).join('\n')}` : 'PATH is empty.';
  return { message, details: `${message}\n${tried}\n\n${INSTALL_INSTRUCTIONS}` };
}
