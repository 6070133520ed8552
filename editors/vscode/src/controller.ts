/**
 * The extension's behaviour: when to start the server, the server's commands (Check Workspace, Migrate, Restart
 * Server, Show Output), the status bar item and the reaction to setting changes. The execution commands live in
 * src/executionCommands.ts and the outcome commands in src/outcomeCommands.ts. The language client itself comes from a factory (src/client.ts in the extension, a fake in
 * the tests), so everything here runs under the tests' stand-in for the `vscode` module.
 */

import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  allNames,
  BUTTON_OPEN_SETTINGS,
  legacyLines,
  legacyUsage,
  MOVED_NOTICE_STATE,
  movedNotice,
  readSetting,
  SETTING_KEYS,
} from './config';
import { answerRun, InputAsker, type InputRequestedParams, type InputResolvedParams } from './asks';
import {
  BUNDLED_SERVER_DIRECTORY,
  BUTTON_OUTPUT,
  COMMAND_ANSWER_RUN,
  COMMAND_CHECK_WORKSPACE,
  COMMAND_MIGRATE,
  COMMAND_RESTART_SERVER,
  COMMAND_SHOW_OUTPUT,
  EXTENSION_ID,
  INSTALL_URL,
  MANIFEST_GLOB,
  OUTPUT_CHANNEL_NAME,
  RUN_OUTPUT_CHANNEL_NAME,
  SERVER_COMMAND_ANSWER,
  SERVER_COMMAND_CHECK_WORKSPACE,
  SERVER_COMMAND_MIGRATE,
  SERVER_EXECUTABLE,
} from './constants';
import { ExecutionCommands } from './executionCommands';
import { OutcomeCommands } from './outcomeCommands';
import { RunsView, type RunsViewOptions } from './runsView';
import { TrialCommands } from './trials';
import { isManifestPath, isWorkbenchFile } from './paths';
import { errorMessage, type RunEventParams } from './run';
import {
  describeResolution,
  missingServerMessage,
  resolveServerPath,
  SERVER_PATH_SETTING,
  type ResolveContext,
} from './serverPath';
import { RESTART_SETTINGS, toServerSettings, type ServerSettings } from './settings';
import { presentStatus, type ServerStatus } from './status';

/** How a `workspace/executeCommand` request is sent. */
export interface RequestOptions {
  /** Cancelling it sends `$/cancelRequest` for the request. */
  token?: vscode.CancellationToken;
  /** Sent as the request's `workDoneToken`: the server reports `$/progress` on it. */
  workDoneToken?: string;
}

/** A `$/progress` value of a work-done token. */
export interface WorkDoneProgressValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
}

/** What the controller needs of a language client. */
export interface ServerClient {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** `workspace/executeCommand`. */
  executeCommand(command: string, args: unknown[], options?: RequestOptions): Promise<unknown>;
  /** The server's `workbench/runEvent` notifications. */
  onRunEvent(listener: (params: RunEventParams) => void): vscode.Disposable;
  /** The server's `workbench/inputRequested` and `workbench/inputResolved` notifications. */
  onInputRequested(listener: (params: InputRequestedParams) => void): vscode.Disposable;
  onInputResolved(listener: (params: InputResolvedParams) => void): vscode.Disposable;
  /** `$/progress` on a work-done token the client chose. */
  onWorkDoneProgress(token: string, listener: (value: WorkDoneProgressValue) => void): vscode.Disposable;
  /** `window/workDoneProgress/cancel` for a work-done token. */
  cancelWorkDoneProgress(token: string): void;
  onDidChangeStatus(listener: (status: ServerStatus) => void): vscode.Disposable;
  dispose(): Promise<void>;
}

export interface ClientSetup {
  /** The resolved `wb-lsp` executable. */
  serverPath: string;
  outputChannel: vscode.OutputChannel;
  /** The current settings for the server, read when asked. */
  settings(): ServerSettings;
  /**
   * The old `workbench.trace.server`, when only it is set (vscode-languageclient reads `wb-lsp.trace.server`
   * itself); undefined otherwise.
   */
  legacyTrace(): string | undefined;
}

export type ClientFactory = (setup: ClientSetup) => ServerClient;

/** The machine: for finding the executable and expanding paths (the bundled server comes from activate()). */
export type MachineContext = Omit<ResolveContext, 'workspaceFolders' | 'bundled'>;

export const BUTTON_INSTALL = 'Install Instructions';
export const BUTTON_SETTINGS = 'Open Settings';

export class WorkbenchController implements vscode.Disposable {
  readonly output: vscode.OutputChannel;
  /** The run events, smoke reports and run endings. */
  readonly runOutput: vscode.OutputChannel;
  /** Show Outcome, Open Artifact, View Outcome Diff, Apply Outcome, and the outcomes' read-only documents. */
  readonly outcomes: OutcomeCommands;
  /** Dry Run, Smoke, Run Workbench, Cancel Run, Show Run Output, and the run in progress. */
  readonly execution: ExecutionCommands;
  /** The Workbench Runs view (running and recent runs: attach, kill, open outcome) and the cost status bar item. */
  readonly runs: RunsView;
  /** Run Trials and Open Trial Report. */
  readonly trials: TrialCommands;
  /** What the runs this window follows ask the person, and Answer in the Runs view. */
  readonly asker: InputAsker;
  private readonly statusItem: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  private client: ServerClient | undefined;
  private clientListeners: vscode.Disposable[] = [];
  private currentStatus: ServerStatus = { state: 'stopped' };
  /** True once the server was wanted (a package is in the workspace, or a command asked for it). */
  private wanted = false;
  /** Start, stop and restart run one at a time, in order. */
  private queue: Promise<unknown> = Promise.resolve();
  /** `<extension>/server/wb-lsp`, where a platform-specific package carries the server. */
  private bundledServer: string | undefined;
  private extensionVersion: string | undefined;
  private globalState: vscode.Memento | undefined;
  /** The notice about the moved settings was shown (or found remembered) in this session. */
  private movedNoticeDone = false;

  constructor(
    private readonly createClient: ClientFactory,
    private readonly machine: MachineContext,
    runsOptions: RunsViewOptions = {},
  ) {
    this.output = vscode.window.createOutputChannel(OUTPUT_CHANNEL_NAME);
    this.statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 0);
    this.statusItem.name = 'Workbench Language Server';
    this.runOutput = vscode.window.createOutputChannel(RUN_OUTPUT_CHANNEL_NAME);
    this.outcomes = new OutcomeCommands(() => this.runningClient(), this.runOutput);
    this.execution = new ExecutionCommands(() => this.runningClient(), this.runOutput, this.outcomes);
    this.trials = new TrialCommands(() => this.runningClient());
    this.asker = new InputAsker(async (runId, requestId, answer) => {
      const client = await this.runningClient();
      if (client === undefined) {
        throw new Error('the language server is not running');
      }
      return client.executeCommand(SERVER_COMMAND_ANSWER, [{ runId, requestId, answer }]);
    });
    this.runs = new RunsView(
      () => this.runningClient(),
      () => (this.currentStatus.state === 'running' ? this.client : undefined),
      this.execution,
      this.outcomes,
      runsOptions,
    );
    this.disposables.push(
      this.output,
      this.statusItem,
      this.runOutput,
      this.runs,
      this.execution,
      this.outcomes,
      this.trials,
      this.trials.onDidChangeTrials(() => void this.runs.refresh()),
    );
  }

  /** True while a run is in progress. */
  get running(): boolean {
    return this.execution.running;
  }

  get status(): ServerStatus {
    return this.currentStatus;
  }

  /** Registers the commands and listeners, and starts the server when the workspace has a package. */
  async activate(context: vscode.ExtensionContext): Promise<void> {
    context.subscriptions.push(this);
    this.globalState = context.globalState;
    if (typeof context.extensionPath === 'string' && context.extensionPath.length > 0) {
      const p = this.machine.platform === 'win32' ? path.win32 : path.posix;
      const name = this.machine.platform === 'win32' ? `${SERVER_EXECUTABLE}.exe` : SERVER_EXECUTABLE;
      this.bundledServer = p.join(context.extensionPath, BUNDLED_SERVER_DIRECTORY, name);
    }
    const version: unknown = (context.extension?.packageJSON as { version?: unknown } | undefined)?.version;
    this.extensionVersion = typeof version === 'string' ? version : undefined;
    this.disposables.push(
      vscode.commands.registerCommand(COMMAND_CHECK_WORKSPACE, () => this.checkWorkspace()),
      vscode.commands.registerCommand(COMMAND_MIGRATE, (uri?: unknown) => this.migrate(uri)),
      vscode.commands.registerCommand(COMMAND_RESTART_SERVER, () => this.restart()),
      vscode.commands.registerCommand(COMMAND_SHOW_OUTPUT, () => this.showOutput()),
      vscode.commands.registerCommand(COMMAND_ANSWER_RUN, (argument?: unknown) =>
        answerRun(argument, () => this.runningClient(), this.asker),
      ),
      ...this.execution.register(),
      ...this.outcomes.register(),
      ...this.runs.register(),
      ...this.trials.register(),
      vscode.workspace.onDidChangeConfiguration((event) => this.onDidChangeConfiguration(event)),
      vscode.workspace.onDidOpenTextDocument((document) => this.onDidOpenTextDocument(document)),
    );
    this.noticeMovedSettings();
    if (await this.workspaceHasPackages()) {
      await this.start();
    }
  }

  /** The settings the server gets, from `wb-lsp.*` (or the old `workbench.*` keys; src/config.ts). */
  serverSettings(): ServerSettings {
    const raw = {
      modelCatalog: readSetting('modelCatalog').value,
      severity: readSetting('severity').value,
      runTimeWarnings: readSetting('runTimeWarnings').value,
      inlayHints: readSetting('inlayHints').value,
      format: readSetting('format').value,
    };
    return toServerSettings(raw, {
      homedir: this.machine.homedir,
      workspaceFolder: this.workspaceFolders()[0],
      platform: this.machine.platform,
    });
  }

  start(): Promise<boolean> {
    this.wanted = true;
    return this.enqueue(() => this.startNow());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.stopNow());
  }

  restart(): Promise<boolean> {
    this.wanted = true;
    return this.enqueue(async () => {
      await this.stopNow();
      return this.startNow();
    });
  }

  showOutput(): void {
    this.output.show(true);
  }

  /** "Workbench: Check Workspace": the server re-scans every folder and re-checks every package. */
  async checkWorkspace(): Promise<void> {
    const client = await this.runningClient();
    if (client === undefined) {
      return;
    }
    try {
      const result = await client.executeCommand(SERVER_COMMAND_CHECK_WORKSPACE, []);
      const packages =
        typeof result === 'object' && result !== null && typeof (result as { packages?: unknown }).packages === 'number'
          ? (result as { packages: number }).packages
          : undefined;
      const counted =
        packages === undefined ? 'the workspace' : `${packages} ${packages === 1 ? 'package' : 'packages'}`;
      await vscode.commands.executeCommand('workbench.actions.view.problems');
      void vscode.window.showInformationMessage(`Workbench: checked ${counted}; the problems are in the Problems view.`);
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: checking the workspace failed: ${errorMessage(error)}`);
    }
  }

  /**
   * "Workbench: Migrate to Spec 1" on the given manifest (explorer or editor context menu) or the active
   * editor's. The server answers with a `workspace/applyEdit`, which the language client applies to the buffer.
   */
  async migrate(argument?: unknown): Promise<void> {
    const uri = argument instanceof vscode.Uri ? argument : vscode.window.activeTextEditor?.document.uri;
    if (uri === undefined || !isManifestPath(uri.fsPath)) {
      void vscode.window.showWarningMessage(
        'Workbench: open a manifest (.workbenches/<name>/workbench.yml) to migrate it to spec 1.',
      );
      return;
    }
    const client = await this.runningClient();
    if (client === undefined) {
      return;
    }
    try {
      // The server migrates the text it has: open the manifest so that it is the editor's buffer.
      await vscode.workspace.openTextDocument(uri);
      const result = await client.executeCommand(SERVER_COMMAND_MIGRATE, [uri.toString()]);
      const answer = (typeof result === 'object' && result !== null ? result : {}) as {
        migrated?: unknown;
        applied?: unknown;
        failureReason?: unknown;
      };
      if (answer.applied === false) {
        // The server sent the edit but the editor did not apply it (the document changed, or an extension refused).
        const reason = typeof answer.failureReason === 'string' ? answer.failureReason : 'the editor refused the edit';
        void vscode.window.showWarningMessage(`Workbench: the migration was not applied: ${reason}`);
        return;
      }
      void vscode.window.showInformationMessage(
        answer.migrated === true
          ? 'Workbench: migrated to spec 1. Review the changes and save the file.'
          : 'Workbench: nothing to migrate, the manifest is not on spec 0.',
      );
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: migration failed: ${errorMessage(error)}`);
    }
  }

  async dispose(): Promise<void> {
    this.wanted = false;
    // A run in progress is let go of, not cancelled: its supervisor owns it and it goes on (the Runs view of the
    // next window, or `wb-lsp attach`, finds it again).
    await this.enqueue(() => this.stopNow());
    for (const disposable of this.disposables.splice(0)) {
      disposable.dispose();
    }
  }


  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private setStatus(status: ServerStatus): void {
    this.currentStatus = status;
    const look = presentStatus(status);
    this.statusItem.text = look.text;
    this.statusItem.tooltip = look.tooltip;
    this.statusItem.backgroundColor =
      look.backgroundColor === undefined ? undefined : new vscode.ThemeColor(look.backgroundColor);
    this.statusItem.command = look.command;
    this.statusItem.show();
  }

  private workspaceFolders(): string[] {
    return (vscode.workspace.workspaceFolders ?? [])
      .filter((folder) => folder.uri.scheme === 'file')
      .map((folder) => folder.uri.fsPath);
  }

  private async workspaceHasPackages(): Promise<boolean> {
    if (vscode.workspace.textDocuments.some((document) => this.isWorkbenchDocument(document))) {
      return true;
    }
    if (this.workspaceFolders().length === 0) {
      return false;
    }
    const found = await vscode.workspace.findFiles(MANIFEST_GLOB, '**/node_modules/**', 1);
    return found.length > 0;
  }

  private isWorkbenchDocument(document: vscode.TextDocument): boolean {
    return document.uri.scheme === 'file' && isWorkbenchFile(document.uri.fsPath);
  }

  private onDidOpenTextDocument(document: vscode.TextDocument): void {
    // Activated by a YAML file in a workspace without packages: start once a package file is opened.
    if (!this.wanted && this.isWorkbenchDocument(document)) {
      void this.start();
    }
  }

  private onDidChangeConfiguration(event: vscode.ConfigurationChangeEvent): void {
    const restart = RESTART_SETTINGS.filter((setting) => event.affectsConfiguration(setting));
    if (this.wanted && restart.length > 0) {
      this.output.appendLine(`${restart.join(' and ')} changed: restarting the server.`);
      void this.restart();
    }
    if (allNames(SETTING_KEYS).some((name) => event.affectsConfiguration(name))) {
      this.noticeMovedSettings();
    }
  }

  /**
   * Once per machine (remembered in globalState), when an old `workbench.*` key is in use: a notice naming the
   * new keys, with a button opening the Settings UI on the extension's settings.
   */
  private noticeMovedSettings(): void {
    if (this.movedNoticeDone || this.globalState?.get<boolean>(MOVED_NOTICE_STATE) === true) {
      this.movedNoticeDone = true;
      return;
    }
    const { used } = legacyUsage();
    if (used.length === 0) {
      return;
    }
    this.movedNoticeDone = true;
    void this.globalState?.update(MOVED_NOTICE_STATE, true);
    void vscode.window.showInformationMessage(movedNotice(used), BUTTON_OPEN_SETTINGS).then(async (choice) => {
      if (choice === BUTTON_OPEN_SETTINGS) {
        await vscode.commands.executeCommand('workbench.action.openSettings', `@ext:${EXTENSION_ID}`);
      }
    });
  }

  /** The old `workbench.trace.server`, when the new key is not set anywhere. */
  private legacyTrace(): string | undefined {
    const trace = readSetting<unknown>('trace.server');
    return trace.origin === 'legacy' && typeof trace.value === 'string' ? trace.value : undefined;
  }

  /** The client, started first if needed; undefined (after telling the user) when the server cannot run. */
  private async runningClient(): Promise<ServerClient | undefined> {
    await this.queue; // a start or restart in progress
    if (this.client === undefined || this.currentStatus.state !== 'running') {
      // Not started yet, not found, or stopped after a crash.
      const started = this.client === undefined ? await this.start() : await this.restart();
      if (!started) {
        return undefined;
      }
    }
    return this.client;
  }

  private async startNow(): Promise<boolean> {
    if (this.client !== undefined) {
      return true;
    }
    for (const line of legacyLines(legacyUsage())) {
      this.output.appendLine(line);
    }
    const setting = readSetting<unknown>('server.path');
    const resolution = resolveServerPath(
      { value: typeof setting.value === 'string' ? setting.value : undefined, name: setting.name },
      { ...this.machine, workspaceFolders: this.workspaceFolders(), bundled: this.bundledServer },
    );
    if (resolution.kind === 'missing') {
      const { message, details } = missingServerMessage(resolution);
      this.output.appendLine(details);
      this.setStatus({ state: 'error', message: 'wb-lsp was not found' });
      void this.offerHelp(message);
      return false;
    }

    this.output.appendLine(describeResolution(resolution, this.extensionVersion));
    this.setStatus({ state: 'starting' });
    const client = this.createClient({
      serverPath: resolution.path,
      outputChannel: this.output,
      settings: () => this.serverSettings(),
      legacyTrace: () => this.legacyTrace(),
    });
    this.client = client;
    this.clientListeners = [
      client.onDidChangeStatus((status) => {
        if (this.client === client) {
          this.setStatus(status);
          if (status.state === 'running') {
            // The runs of this Workbench home (some may have gone on while the editor was closed).
            this.runs.serverStarted();
          }
        }
      }),
      client.onRunEvent((params) => this.execution.onRunEvent(params)),
      client.onInputRequested((params) => void this.asker.requested(params)),
      client.onInputResolved((params) => this.asker.resolved(params)),
    ];
    try {
      await client.start();
      return true;
    } catch (error) {
      const message = `wb-lsp failed to start: ${errorMessage(error)}`;
      this.output.appendLine(message);
      this.setStatus({ state: 'error', message });
      await this.discardClient();
      void vscode.window
        .showErrorMessage(`Workbench: ${message}`, BUTTON_OUTPUT)
        .then((choice) => (choice === BUTTON_OUTPUT ? this.showOutput() : undefined));
      return false;
    }
  }

  private async stopNow(): Promise<void> {
    if (this.client === undefined) {
      return;
    }
    try {
      await this.client.stop();
    } catch (error) {
      this.output.appendLine(`Stopping wb-lsp failed: ${errorMessage(error)}`);
    }
    await this.discardClient();
    this.setStatus({ state: 'stopped' });
  }

  private async discardClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const listener of this.clientListeners.splice(0)) {
      listener.dispose();
    }
    if (client !== undefined) {
      try {
        await client.dispose();
      } catch {
        // Already stopped.
      }
    }
  }

  private async offerHelp(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(message, BUTTON_INSTALL, BUTTON_SETTINGS);
    if (choice === BUTTON_INSTALL) {
      this.showOutput();
      await vscode.env.openExternal(vscode.Uri.parse(INSTALL_URL));
    } else if (choice === BUTTON_SETTINGS) {
      await vscode.commands.executeCommand('workbench.action.openSettings', SERVER_PATH_SETTING);
    }
  }
}
