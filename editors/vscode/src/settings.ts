/** The settings as VS Code holds them (`wb-lsp.*`, or the old `workbench.*`; src/config.ts), and as the server reads them. */

import * as path from 'node:path';

/** The settings the server understands (README: "Configuration"). */
export interface ServerSettings {
  /** Absolute path of a model catalog, or null for the embedded one. */
  modelCatalog: string | null;
  /** Per-code severity: error, warning, information, hint or off. */
  severity: Record<string, string>;
  runTimeWarnings: boolean;
  /** Which inlay hints the server shows: the context's size and cost, the model's route, the env bindings. */
  inlayHints: { context: boolean; route: boolean; env: boolean };
  /** Formatting also puts keys in the standard's order. */
  format: { fieldOrder: boolean };
}

export const SEVERITY_LEVELS: readonly string[] = ['error', 'warning', 'information', 'hint', 'off'];

export interface PathContext {
  homedir: string;
  /** The first workspace folder, if any: `${workspaceFolder}` and relative paths start there. */
  workspaceFolder: string | undefined;
  platform: NodeJS.Platform;
}

/**
 * Expands `~`, `${userHome}`, `${workspaceFolder}` and `${env:NAME}`-free paths the way users write them in
 * settings. A relative path with a directory part is resolved against the workspace folder; a bare name is
 * returned unchanged (the caller decides: the server path looks it up on PATH).
 */
export function expandPath(value: string, context: PathContext): string {
  const p = context.platform === 'win32' ? path.win32 : path.posix;
  let expanded = value.trim();
  expanded = expanded.replace(/\$\{userHome\}/g, context.homedir);
  if (context.workspaceFolder !== undefined) {
    expanded = expanded.replace(/\$\{workspaceFolder\}/g, context.workspaceFolder);
  }
  if (expanded === '~') {
    expanded = context.homedir;
  } else if (expanded.startsWith('~/') || (context.platform === 'win32' && expanded.startsWith('~\\'))) {
    expanded = p.join(context.homedir, expanded.slice(2));
  }
  const hasDirectory = expanded.includes('/') || (context.platform === 'win32' && expanded.includes('\\'));
  if (!p.isAbsolute(expanded) && hasDirectory && context.workspaceFolder !== undefined) {
    expanded = p.resolve(context.workspaceFolder, expanded);
  }
  return expanded;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Maps the settings (read by src/config.ts from `wb-lsp.*` or the old `workbench.*` keys; a raw section may
 * have other keys, such as VS Code's own `workbench.*` settings) to what the server reads. Only the server's
 * keys are sent, always all of them, so the server never mistakes the answer for "nothing configured" (it then
 * keeps its initialization options). Values of the wrong type fall back
 * to the defaults; severity levels are passed through as written, so the server can report the unknown ones.
 */
export function toServerSettings(raw: unknown, context: PathContext): ServerSettings {
  const section = isRecord(raw) ? raw : {};

  let modelCatalog: string | null = null;
  if (typeof section.modelCatalog === 'string' && section.modelCatalog.trim().length > 0) {
    const expanded = expandPath(section.modelCatalog, context);
    const p = context.platform === 'win32' ? path.win32 : path.posix;
    modelCatalog =
      p.isAbsolute(expanded) || context.workspaceFolder === undefined
        ? expanded
        : p.resolve(context.workspaceFolder, expanded);
  }

  const severity: Record<string, string> = {};
  if (isRecord(section.severity)) {
    for (const [code, level] of Object.entries(section.severity)) {
      if (typeof level === 'string') {
        severity[code] = level;
      }
    }
  }

  const runTimeWarnings = typeof section.runTimeWarnings === 'boolean' ? section.runTimeWarnings : true;

  const hints = isRecord(section.inlayHints) ? section.inlayHints : {};
  const flag = (value: unknown) => (typeof value === 'boolean' ? value : true);
  const inlayHints = { context: flag(hints.context), route: flag(hints.route), env: flag(hints.env) };

  const formatSection = isRecord(section.format) ? section.format : {};
  const format = { fieldOrder: formatSection.fieldOrder === true };

  return { modelCatalog, severity, runTimeWarnings, inlayHints, format };
}

/** Settings whose change needs a new server process (the rest reach the running server), new and old names. */
export const RESTART_SETTINGS: readonly string[] = ['wb-lsp.server.path', 'workbench.server.path'];
