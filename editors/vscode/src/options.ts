/**
 * The language client's options, as plain data. Only types come from vscode-languageclient here, so the
 * options can be built and checked without VS Code.
 */

import type { DocumentFilter, Executable, LanguageClientOptions, Middleware } from 'vscode-languageclient/node';
import type { OutputChannel } from 'vscode';
import { CONFIGURATION_SECTION, MANIFEST_GLOB, SKILL_GLOB } from './constants';
import type { ServerSettings } from './settings';

/** The manifests (YAML, by pattern) and the skill files of every package. */
export const DOCUMENT_SELECTOR: DocumentFilter[] = [
  { scheme: 'file', language: 'yaml', pattern: MANIFEST_GLOB },
  { scheme: 'file', pattern: SKILL_GLOB },
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
 * Maps the answers to the server's `workspace/configuration` requests: for the `workbench` section, the
 * server's settings (paths expanded, VS Code's own `workbench.*` settings left out) instead of the raw section.
 */
export function configurationMiddleware(settings: () => ServerSettings): NonNullable<Middleware['workspace']> {
  return {
    configuration: async (params, token, next) => {
      const answer: unknown = await next(params, token);
      if (!Array.isArray(answer)) {
        return answer as Awaited<ReturnType<typeof next>>;
      }
      return params.items.map((item, index): unknown =>
        item.section === CONFIGURATION_SECTION ? settings() : answer[index],
      );
    },
  };
}

export function clientOptions(input: ClientOptionsInput): LanguageClientOptions {
  return {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: input.outputChannel,
    // `workspace/didChangeConfiguration` on any change under `workbench`; the server then asks again with
    // `workspace/configuration`, answered through the middleware below.
    synchronize: { configurationSection: CONFIGURATION_SECTION },
    initializationOptions: input.settings(),
    middleware: { workspace: configurationMiddleware(input.settings) },
  };
}
