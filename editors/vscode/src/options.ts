/**
 * The language client's options, as plain data. Only types come from vscode-languageclient here, so the
 * options can be built and checked without VS Code.
 */

import type { DocumentFilter, Executable, LanguageClientOptions, Middleware } from 'vscode-languageclient/node';
import type { OutputChannel } from 'vscode';
import {
  LEGACY_SETTINGS_SECTION,
  LENS_COMMANDS,
  MANIFEST_GLOB,
  SERVER_CONFIGURATION_SECTION,
  SETTINGS_SECTION,
  PACKAGE_MARKDOWN_GLOB,
  TRIAL_TASK_GLOB,
} from './constants';
import type { ServerSettings } from './settings';

/** The manifests (YAML, by pattern), the Markdown and the trial tasks of every package. */
export const DOCUMENT_SELECTOR: DocumentFilter[] = [
  { scheme: 'file', language: 'yaml', pattern: MANIFEST_GLOB },
  { scheme: 'file', pattern: PACKAGE_MARKDOWN_GLOB },
  { scheme: 'file', pattern: TRIAL_TASK_GLOB },
];

/** The server process: `wb-lsp --stdio`, speaking LSP over its standard input and output. */
export function serverExecutable(command: string): Executable {
  // No `transport`: vscode-languageclient then spawns the command with pipes on stdin/stdout (stdio).
  return { command, args: ['--stdio'] };
}

export interface ClientOptionsInput {
  outputChannel: OutputChannel;
  /** The current settings, mapped for the server (sent as initialization options too). */
  settings(): ServerSettings;
}

/**
 * Maps the answers to the server's `workspace/configuration` requests: for the `workbench` section (the one
 * wb-lsp asks for, in every editor) and for `wb-lsp`, the server's settings read from `wb-lsp.*` (or the old
 * `workbench.*` keys), paths expanded, instead of the raw section (which would be VS Code's own `workbench.*`).
 */
export function configurationMiddleware(settings: () => ServerSettings): NonNullable<Middleware['workspace']> {
  return {
    configuration: async (params, token, next) => {
      const answer: unknown = await next(params, token);
      if (!Array.isArray(answer)) {
        return answer as Awaited<ReturnType<typeof next>>;
      }
      return params.items.map((item, index): unknown =>
        item.section === SERVER_CONFIGURATION_SECTION || item.section === SETTINGS_SECTION
          ? settings()
          : answer[index],
      );
    },
  };
}

/** A code lens, as far as the rewriting below is concerned. */
interface LensLike {
  command?: { command: string } | undefined;
}

/**
 * Points the server's lenses (`workbench.dryRun`, `workbench.smoke`, `workbench.run`, argument `{uri}`) at the
 * extension's commands (`wb-lsp.dryRun`, ...), which ask for the task and show the result. Other commands are
 * left alone. Changes the lenses in place and returns them.
 */
export function rewriteLensCommand<T extends LensLike>(lens: T): T {
  const target = lens.command === undefined ? undefined : LENS_COMMANDS[lens.command.command];
  if (lens.command !== undefined && target !== undefined) {
    lens.command.command = target;
  }
  return lens;
}

export function rewriteLensCommands<T extends LensLike>(lenses: T[] | null | undefined): T[] | null | undefined {
  for (const lens of lenses ?? []) {
    rewriteLensCommand(lens);
  }
  return lenses;
}

/** The code lens middleware: the server's lenses, rewritten by rewriteLensCommands. */
export function codeLensMiddleware(): Pick<Middleware, 'provideCodeLenses' | 'resolveCodeLens'> {
  return {
    provideCodeLenses: async (document, token, next) => rewriteLensCommands(await next(document, token)),
    resolveCodeLens: async (lens, token, next) => {
      const resolved = await next(lens, token);
      return resolved === null || resolved === undefined ? resolved : rewriteLensCommand(resolved);
    },
  };
}

export function clientOptions(input: ClientOptionsInput): LanguageClientOptions {
  return {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: input.outputChannel,
    // `workspace/didChangeConfiguration` on any change under `wb-lsp` or the old `workbench` keys; the server
    // then asks again with `workspace/configuration`, answered through the middleware below.
    synchronize: { configurationSection: [SETTINGS_SECTION, LEGACY_SETTINGS_SECTION] },
    initializationOptions: input.settings(),
    middleware: { workspace: configurationMiddleware(input.settings), ...codeLensMiddleware() },
  };
}
