/** Finding the `wb-lsp` executable: the `workbench.server.path` setting, else PATH. */

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
}

export type Resolution =
  | { readonly kind: 'found'; readonly path: string; readonly source: 'setting' | 'path' }
  | {
      readonly kind: 'missing';
      /** `setting`: workbench.server.path names nothing executable; `path`: wb-lsp is not on PATH. */
      readonly source: 'setting' | 'path';
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
 * workspace folder, and a bare name (`wb-lsp-nightly`) is looked up on PATH. An empty setting looks up
 * `wb-lsp` on PATH.
 */
export function resolveServerPath(setting: string | undefined, context: ResolveContext): Resolution {
  const p = pathModule(context.platform);
  const tried: string[] = [];
  const configured = (setting ?? '').trim();
  if (configured.length === 0) {
    const found = searchPath(SERVER_EXECUTABLE, context, tried);
    return found !== undefined
      ? { kind: 'found', path: found, source: 'path' }
      : { kind: 'missing', source: 'path', tried };
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
      ? { kind: 'found', path: found, source: 'setting' }
      : { kind: 'missing', source: 'setting', configured, tried };
  }
  for (const candidate of context.platform === 'win32' ? [expanded, ...candidateNames(expanded, context)] : [expanded]) {
    const file = p.normalize(candidate);
    if (!tried.includes(file)) {
      tried.push(file);
    }
    if (context.isExecutable(file)) {
      return { kind: 'found', path: file, source: 'setting' };
    }
  }
  return { kind: 'missing', source: 'setting', configured, tried };
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
  'then run "Workbench: Restart Server", or set workbench.server.path to the executable.',
  `More: ${INSTALL_URL}`,
].join('\n');

/** The error shown when the server cannot be found. */
export function missingServerMessage(resolution: Extract<Resolution, { kind: 'missing' }>): MissingServerMessage {
  const message =
    resolution.source === 'setting'
      ? `Workbench: workbench.server.path is "${resolution.configured ?? ''}", but no executable wb-lsp is there. ` +
        'Fix the setting, or clear it to use wb-lsp from PATH.'
      : 'Workbench: the language server wb-lsp was not found on PATH. Install it with ' +
        '`cargo install --path crates/wb-lsp` (from a wb-lsp checkout) or from the releases, ' +
        'or set workbench.server.path.';
  const tried =
    resolution.tried.length > 0 ? `Tried:\n${resolution.tried.map((file) => `  ${file}`).join('\n')}` : 'PATH is empty.';
  return { message, details: `${message}\n${tried}\n\n${INSTALL_INSTRUCTIONS}` };
}
