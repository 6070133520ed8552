/** The real language client (vscode-languageclient over stdio) behind the controller's ServerClient. */

import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  Trace,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
  type ExecuteCommandParams,
} from 'vscode-languageclient/node';
import { isInputRequestedParams, isInputResolvedParams } from './asks';
import {
  CLIENT_ID,
  CLIENT_NAME,
  INPUT_REQUESTED_NOTIFICATION,
  INPUT_RESOLVED_NOTIFICATION,
  RUN_EVENT_NOTIFICATION,
} from './constants';
import type { ClientSetup, ServerClient } from './controller';
import { clientOptions, serverExecutable } from './options';
import { isRunEventParams } from './run';
import { statusFromClientState } from './status';

export function createLanguageClient(setup: ClientSetup): ServerClient {
  const executable = serverExecutable(setup.serverPath);
  const client = new LanguageClient(
    CLIENT_ID,
    CLIENT_NAME,
    { run: executable, debug: executable },
    clientOptions({ outputChannel: setup.outputChannel, settings: setup.settings }),
  );
  // vscode-languageclient traces as `wb-lsp.trace.server` says (its id is `wb-lsp`), at start and on every
  // configuration change. When only the old `workbench.trace.server` is set, it is applied after the client's own.
  const applyLegacyTrace = (): void => {
    const legacy = setup.legacyTrace();
    if (legacy !== undefined && client.isRunning()) {
      client.setTrace(Trace.fromString(legacy)).catch(() => undefined);
    }
  };
  let traceListener: vscode.Disposable | undefined;
  return {
    start: async () => {
      await client.start();
      applyLegacyTrace();
      traceListener ??= vscode.workspace.onDidChangeConfiguration(applyLegacyTrace);
    },
    stop: () => client.stop(),
    executeCommand: (command, args, options) => {
      const params: ExecuteCommandParams = { command, arguments: args };
      if (options?.workDoneToken !== undefined) {
        params.workDoneToken = options.workDoneToken;
      }
      // With a token, cancelling it sends `$/cancelRequest` for this request.
      return options?.token === undefined
        ? client.sendRequest(ExecuteCommandRequest.type, params)
        : client.sendRequest(ExecuteCommandRequest.type, params, options.token);
    },
    onRunEvent: (listener) =>
      client.onNotification(RUN_EVENT_NOTIFICATION, (params: unknown) => {
        if (isRunEventParams(params)) {
          listener(params);
        }
      }),
    onInputRequested: (listener) =>
      client.onNotification(INPUT_REQUESTED_NOTIFICATION, (params: unknown) => {
        if (isInputRequestedParams(params)) {
          listener(params);
        }
      }),
    onInputResolved: (listener) =>
      client.onNotification(INPUT_RESOLVED_NOTIFICATION, (params: unknown) => {
        if (isInputResolvedParams(params)) {
          listener(params);
        }
      }),
    onWorkDoneProgress: (token, listener) => client.onProgress(WorkDoneProgress.type, token, listener),
    cancelWorkDoneProgress: (token) => {
      client.sendNotification(WorkDoneProgressCancelNotification.type, { token }).catch(() => undefined);
    },
    onDidChangeStatus: (listener) =>
      client.onDidChangeState((event) =>
        listener(statusFromClientState(event.newState, client.initializeResult?.serverInfo?.version)),
      ),
    dispose: () => {
      traceListener?.dispose();
      traceListener = undefined;
      return client.dispose();
    },
  };
}
