/** The status bar item's states and how each one looks. */

import { COMMAND_RESTART_SERVER, COMMAND_SHOW_OUTPUT } from './constants';

export type ServerStatus =
  | { readonly state: 'starting' }
  | { readonly state: 'running'; readonly version?: string }
  | { readonly state: 'stopped' }
  | { readonly state: 'error'; readonly message: string };

export interface StatusPresentation {
  readonly text: string;
  readonly tooltip: string;
  /** A theme color id for the item's background, or undefined for the default. */
  readonly backgroundColor: string | undefined;
  /** The command run on click. */
  readonly command: string;
}

/** What the status bar item shows in each state. */
export function presentStatus(status: ServerStatus): StatusPresentation {
  switch (status.state) {
    case 'starting':
      return {
        text: '$(sync~spin) Workbench',
        tooltip: 'wb-lsp is starting',
        backgroundColor: undefined,
        command: COMMAND_SHOW_OUTPUT,
      };
    case 'running':
      return {
        text: '$(check) Workbench',
        tooltip: `wb-lsp${status.version !== undefined ? ` ${status.version}` : ''} is running. Click for its output.`,
        backgroundColor: undefined,
        command: COMMAND_SHOW_OUTPUT,
      };
    case 'stopped':
      return {
        text: '$(circle-slash) Workbench',
        tooltip: 'wb-lsp is stopped. Click to restart it.',
        backgroundColor: undefined,
        command: COMMAND_RESTART_SERVER,
      };
    case 'error':
      return {
        text: '$(error) Workbench',
        tooltip: `${status.message}\nClick for details.`,
        backgroundColor: 'statusBarItem.errorBackground',
        command: COMMAND_SHOW_OUTPUT,
      };
  }
}

/**
 * The language client's `State` enum (vscode-languageclient: Stopped = 1, Running = 2, Starting = 3) as a
 * status. The numbers are fixed by the library's published API.
 */
export function statusFromClientState(state: number, version?: string): ServerStatus {
  switch (state) {
    case 2:
      return { state: 'running', version };
    case 3:
      return { state: 'starting' };
    default:
      return { state: 'stopped' };
  }
}
