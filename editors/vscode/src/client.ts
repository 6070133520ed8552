/** The real language client (vscode-languageclient over stdio) behind the controller's ServerClient. */

import { ExecuteCommandRequest, LanguageClient } from 'vscode-languageclient/node';
import { CLIENT_ID, CLIENT_NAME } from './constants';
import type { ClientSetup, ServerClient } from './controller';
import { clientOptions, serverExecutable } from './options';
import { statusFromClientState } from './status';

export function createLanguageClient(setup: ClientSetup): ServerClient {
  const executable = serverExecutable(setup.serverPath);
  const client = new LanguageClient(
    CLIENT_ID,
    CLIENT_NAME,
    { run: executable, debug: executable },
    clientOptions({ outputChannel: setup.outputChannel, settings: setup.settings }),
  );
  return {
    start: () => client.start(),
    stop: () => client.stop(),
    executeCommand: (command, args) => client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }),
    onDidChangeStatus: (listener) =>
      client.onDidChangeState((event) =>
        listener(statusFromClientState(event.newState, client.initializeResult?.serverInfo?.version)),
      ),
    dispose: () => client.dispose(),
  };
}
