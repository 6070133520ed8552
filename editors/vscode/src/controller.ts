/**
 * The extension's behaviour: when to start the server, the commands, the status bar item and the reaction to
 * setting changes. The language client itself comes from a factory (src/client.ts in the extension, a fake in
 * the tests), so everything here runs under the tests' stand-in for the `vscode` module.
 */

import * as vscode from 'vscode';
import {
  COMMAND_CANCEL_RUN,
  COMMAND_CHECK_WORKSPACE,
  COMMAND_DRY_RUN,
  COMMAND_MIGRATE,
  COMMAND_RESTART_SERVER,
  COMMAND_RUN,
  COMMAND_SHOW_OUTPUT,
  COMMAND_SHOW_RUN_OUTPUT,
  COMMAND_SMOKE,
  CONFIGURATION_SECTION,
  INSTALL_URL,
  MANIFEST_GLOB,
  OUTPUT_CHANNEL_NAME,
  RUN_OUTPUT_CHANNEL_NAME,
  RUNNING_CONTEXT,
  SERVER_COMMAND_CHECK_WORKSPACE,
  SERVER_COMMAND_DRY_RUN,
  SERVER_COMMAND_MIGRATE,
  SERVER_COMMAND_RUN,
  SERVER_COMMAND_SMOKE,
} from './constants';
import { isOutcomeId, outcomeBrief, type OutcomeView } from './outcome';
import { BUTTON_APPLY_OUTCOME, BUTTON_SHOW_OUTCOME, BUTTON_VIEW_DIFF, OutcomeCommands } from './outcomeCommands';
import { isManifestPath, isWorkbenchFile } from './paths';
import {
  argumentUri,
  declaredRuntimes,
  executionArguments,
  formatRunEvent,
  formatSmokeReports,
  isRequestCancelled,
  isRunResult,
  runOutcome,
  smokeOutcome,
  type RunEventParams,
  type RunOutcome,
} from './run';
import { missingServerMessage, resolveServerPath, type ResolveContext } from './serverPath';
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
  /** `$/progress` on a work-done token the client chose. */
  onWorkDoneProgress(token: string, listener: (value: WorkDoneProgressValue) => void): vscode.Disposable;
  /** `window/workDoneProgress/cancel` for a work-done token. */
  cancelWorkDoneProgress(token: string): void;
  onDidChangeStatus(listener: (status: ServerStatus) => void): vscode.Disposable;
  dispose(): Promise<void>;
}

/** The run in progress (one at a time). */
interface ActiveRun {
  readonly task: string;
  readonly workDoneToken: string;
  readonly cancellation: vscode.CancellationTokenSource;
  readonly client: ServerClient;
  cancelled: boolean;
  /** Set by the run's first event. */
  runId?: string;
  /** Set by its `outcome.available` event. */
  outcomeId?: string;
}

export interface ClientSetup {
  /** The resolved `wb-lsp` executable. */
  serverPath: string;
  outputChannel: vscode.OutputChannel;
  /** The current settings for the server, read when asked. */
  settings(): ServerSettings;
}

export type ClientFactory = (setup: ClientSetup) => ServerClient;

/** The machine: for finding the executable and expanding paths. */
export type MachineContext = Omit<ResolveContext, 'workspaceFolders'>;

export const BUTTON_INSTALL = 'Install Instructions';
export const BUTTON_SETTINGS = 'Open Settings';
export const BUTTON_OUTPUT = 'Show Output';
export const BUTTON_CANCEL_RUN = 'Cancel Run';

function errorText(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  if (typeof error === 'object' && error !== null && 'message' in error) {
    return String((error as { message: unknown }).message);
  }
  return String(error);
}

function showEnding(outcome: RunOutcome, ...items: string[]): Thenable<string | undefined> {
  switch (outcome.level) {
    case 'information':
      return vscode.window.showInformationMessage(outcome.message, ...items);
    case 'warning':
      return vscode.window.showWarningMessage(outcome.message, ...items);
    case 'error':
      return vscode.window.showErrorMessage(outcome.message, ...items);
  }
}

export class WorkbenchController implements vscode.Disposable {
  readonly output: vscode.OutputChannel;
  /** The run events, smoke reports and run endings. */
  readonly runOutput: vscode.OutputChannel;
  /** Show Outcome, Open Artifact, View Outcome Diff, Apply Outcome, and the outcomes' read-only documents. */
  readonly outcomes: OutcomeCommands;
  private readonly statusItem: vscode.StatusBarItem;
  /** Shown while a run is in progress. */
  private readonly runStatusItem: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  private client: ServerClient | undefined;
  private clientListeners: vscode.Disposable[] = [];
  private activeRun: ActiveRun | undefined;
  private runCount = 0;
  /** The last task asked for, offered again next time. */
  private lastTask = '';
  private currentStatus: ServerStatus = { state: 'stopped' };
  /** True once the server was wanted (a package is in the workspace, or a command asked for it). */
  private wanted = false;
  /** Start, stop and restart run one at a time, in order. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly createClient: ClientFactory,
    private readonly machine: MachineContext,
  ) {
    this.output = vscode.window.createOutputChannel(OUTPUT_CHANNEL_NAME);
    this.statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 0);
    this.statusItem.name = 'Workbench Language Server';
    this.runOutput = vscode.window.createOutputChannel(RUN_OUTPUT_CHANNEL_NAME);
    this.runStatusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, -1);
    this.runStatusItem.name = 'Workbench Run';
    this.outcomes = new OutcomeCommands(() => this.runningClient(), this.runOutput);
    this.disposables.push(this.output, this.statusItem, this.runOutput, this.runStatusItem, this.outcomes);
  }

  /** True while a run is in progress. */
  get running(): boolean {
    return this.activeRun !== undefined;
  }

  get status(): ServerStatus {
    return this.currentStatus;
  }

  /** Registers the commands and listeners, and starts the server when the workspace has a package. */
  async activate(context: vscode.ExtensionContext): Promise<void> {
    context.subscriptions.push(this);
    this.disposables.push(
      vscode.commands.registerCommand(COMMAND_CHECK_WORKSPACE, () => this.checkWorkspace()),
      vscode.commands.registerCommand(COMMAND_MIGRATE, (uri?: unknown) => this.migrate(uri)),
      vscode.commands.registerCommand(COMMAND_RESTART_SERVER, () => this.restart()),
      vscode.commands.registerCommand(COMMAND_SHOW_OUTPUT, () => this.showOutput()),
      vscode.commands.registerCommand(COMMAND_DRY_RUN, (argument?: unknown) => this.dryRun(argument)),
      vscode.commands.registerCommand(COMMAND_SMOKE, (argument?: unknown) => this.smoke(argument)),
      vscode.commands.registerCommand(COMMAND_RUN, (argument?: unknown) => this.run(argument)),
      vscode.commands.registerCommand(COMMAND_CANCEL_RUN, () => this.cancelRun()),
      vscode.commands.registerCommand(COMMAND_SHOW_RUN_OUTPUT, () => this.showRunOutput()),
      ...this.outcomes.register(),
      vscode.workspace.onDidChangeConfiguration((event) => this.onDidChangeConfiguration(event)),
      vscode.workspace.onDidOpenTextDocument((document) => this.onDidOpenTextDocument(document)),
    );
    if (await this.workspaceHasPackages()) {
      await this.start();
    }
  }

  /** The settings the server gets, from the `workbench` section. */
  serverSettings(): ServerSettings {
    const section = vscode.workspace.getConfiguration(CONFIGURATION_SECTION);
    const raw = {
      modelCatalog: section.get<unknown>('modelCatalog'),
      severity: section.get<unknown>('severity'),
      runTimeWarnings: section.get<unknown>('runTimeWarnings'),
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
      void vscode.window.showErrorMessage(`Workbench: checking the workspace failed: ${errorText(error)}`);
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
      const migrated =
        typeof result === 'object' && result !== null && (result as { migrated?: unknown }).migrated === true;
      void vscode.window.showInformationMessage(
        migrated
          ? 'Workbench: migrated to spec 1. Review the changes and save the file.'
          : 'Workbench: nothing to migrate, the manifest is not on spec 0.',
      );
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: migration failed: ${errorText(error)}`);
    }
  }

  showRunOutput(): void {
    this.runOutput.show(true);
  }

  /**
   * "Workbench: Dry Run": asks for the task (and the runtime when the manifest declares several), runs
   * `workbench.dryRun` and shows the translation as JSON in an untitled editor.
   */
  async dryRun(argument?: unknown): Promise<void> {
    const uri = this.manifestUri(argument, 'dry-run it');
    if (uri === undefined) {
      return;
    }
    const choice = await this.askTaskAndRuntime(uri, 'Workbench: Dry Run');
    if (choice === undefined) {
      return;
    }
    const client = await this.runningClient();
    if (client === undefined) {
      return;
    }
    try {
      const translation = await client.executeCommand(SERVER_COMMAND_DRY_RUN, [
        executionArguments(uri.toString(), choice),
      ]);
      const document = await vscode.workspace.openTextDocument({
        language: 'json',
        content: `${JSON.stringify(translation, null, 2)}\n`,
      });
      await vscode.window.showTextDocument(document, { preview: false });
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: dry run failed: ${errorText(error)}`);
    }
  }

  /**
   * "Workbench: Smoke": runs `workbench.smoke` (can the package start here, without a model request?), writes
   * the reports to the Workbench Run channel and shows the worst status as a message.
   */
  async smoke(argument?: unknown): Promise<void> {
    const uri = this.manifestUri(argument, 'smoke it');
    if (uri === undefined) {
      return;
    }
    const client = await this.runningClient();
    if (client === undefined) {
      return;
    }
    let outcome: RunOutcome;
    try {
      const reports = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Workbench: smoke' },
        () => client.executeCommand(SERVER_COMMAND_SMOKE, [executionArguments(uri.toString())]),
      );
      for (const line of formatSmokeReports(reports)) {
        this.runOutput.appendLine(line);
      }
      outcome = smokeOutcome(reports);
    } catch (error) {
      const message = `Workbench: smoke failed: ${errorText(error)}`;
      this.runOutput.appendLine(message);
      outcome = { level: 'error', message };
    }
    this.offerRunOutput(outcome);
  }

  /**
   * "Workbench: Run Workbench": asks for the task (and the runtime), runs `workbench.run` with a work-done
   * token and streams its events into the Workbench Run channel under a cancellable notification. Cancelling
   * sends `$/cancelRequest` for the request (and `window/workDoneProgress/cancel` for its token).
   */
  async run(argument?: unknown): Promise<void> {
    if (this.activeRun !== undefined) {
      const choice = await vscode.window.showWarningMessage(
        'Workbench: a run is already in progress.',
        BUTTON_CANCEL_RUN,
        BUTTON_OUTPUT,
      );
      if (choice === BUTTON_CANCEL_RUN) {
        this.cancelRun();
      } else if (choice === BUTTON_OUTPUT) {
        this.showRunOutput();
      }
      return;
    }
    const uri = this.manifestUri(argument, 'run it');
    if (uri === undefined) {
      return;
    }
    const choice = await this.askTaskAndRuntime(uri, 'Workbench: Run Workbench');
    if (choice === undefined) {
      return;
    }
    const client = await this.runningClient();
    if (client === undefined || this.activeRun !== undefined) {
      return;
    }
    this.runCount += 1;
    const run: ActiveRun = {
      task: choice.task ?? '',
      workDoneToken: `wb-lsp-run-${this.runCount}`,
      cancellation: new vscode.CancellationTokenSource(),
      client,
      cancelled: false,
    };
    this.activeRun = run;
    this.showRunStatus(run);
    void vscode.commands.executeCommand('setContext', RUNNING_CONTEXT, true);
    const on = choice.runtime === undefined ? '' : ` on ${choice.runtime}`;
    this.runOutput.appendLine(`── ${uri.fsPath}${on}: ${run.task}`);
    this.runOutput.show(true);
    let outcome: RunOutcome;
    let outcomeId: string | undefined;
    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Workbench run', cancellable: true },
        async (progress, token) => {
          const listeners = [
            token.onCancellationRequested(() => this.cancelRun()),
            client.onWorkDoneProgress(run.workDoneToken, (value) => {
              if (value.message !== undefined && value.kind !== 'end') {
                progress.report({ message: value.message });
              }
            }),
          ];
          try {
            return await client.executeCommand(SERVER_COMMAND_RUN, [executionArguments(uri.toString(), choice)], {
              token: run.cancellation.token,
              workDoneToken: run.workDoneToken,
            });
          } finally {
            for (const listener of listeners) {
              listener.dispose();
            }
          }
        },
      );
      outcome = runOutcome(result);
      if (isRunResult(result) && isOutcomeId(result.outcomeId)) {
        outcomeId = result.outcomeId;
      }
    } catch (error) {
      outcome = runOutcome(undefined, error, run.runId !== undefined);
      // A run refused before it started sends no event, and a connection lost ends it without one: say why in
      // the channel too. (After a cancellation the run's own `run.cancelled` event says it.)
      if (!isRequestCancelled(error)) {
        this.runOutput.appendLine(`■ ${outcome.message.replace(/^Workbench: /, '')}`);
      }
    } finally {
      run.cancellation.dispose();
      if (this.activeRun === run) {
        this.activeRun = undefined;
      }
      this.runStatusItem.hide();
      void vscode.commands.executeCommand('setContext', RUNNING_CONTEXT, false);
    }
    // A failed or cancelled run may have committed a (partial) outcome too; its event tells when the answer did not.
    outcomeId ??= run.outcomeId;
    const view = outcomeId === undefined ? undefined : await this.outcomes.afterRun(outcomeId, run.task);
    if (view === undefined) {
      this.offerRunOutput(outcome);
    } else {
      this.offerRunEnding(outcome, view);
    }
  }

  /**
   * "Workbench: Cancel Run" (and the notification's Cancel button): `window/workDoneProgress/cancel` on the
   * run's token, then `$/cancelRequest` on its request. The run ends with `run.cancelled`.
   */
  cancelRun(): void {
    const run = this.activeRun;
    if (run === undefined) {
      void vscode.window.showInformationMessage('Workbench: no run is in progress.');
      return;
    }
    if (run.cancelled) {
      return;
    }
    run.cancelled = true;
    this.runOutput.appendLine('  cancelling…');
    run.client.cancelWorkDoneProgress(run.workDoneToken);
    run.cancellation.cancel();
  }

  async dispose(): Promise<void> {
    this.wanted = false;
    if (this.activeRun !== undefined) {
      this.cancelRun();
    }
    await this.enqueue(() => this.stopNow());
    for (const disposable of this.disposables.splice(0)) {
      disposable.dispose();
    }
  }

  /** The manifest a command works on: its argument (a code lens's `{uri}`, a Uri) or the active editor's. */
  private manifestUri(argument: unknown, action: string): vscode.Uri | undefined {
    const given =
      argument instanceof vscode.Uri
        ? argument
        : ((uri) => (uri === undefined ? undefined : vscode.Uri.parse(uri)))(argumentUri(argument));
    const uri = given ?? vscode.window.activeTextEditor?.document.uri;
    if (uri === undefined || uri.scheme !== 'file' || !isManifestPath(uri.fsPath)) {
      void vscode.window.showWarningMessage(
        `Workbench: open a manifest (.workbenches/<name>/workbench.yml) to ${action}.`,
      );
      return undefined;
    }
    return uri;
  }

  /** Asks for the task, then for the runtime when the manifest declares several. Undefined: dismissed. */
  private async askTaskAndRuntime(
    uri: vscode.Uri,
    title: string,
  ): Promise<{ task: string; runtime?: string } | undefined> {
    const task = await vscode.window.showInputBox({
      title,
      prompt: 'The task for the Workbench',
      placeHolder: 'Add an index on users.email',
      value: this.lastTask,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim().length === 0 ? 'The task cannot be empty.' : undefined),
    });
    if (task === undefined || task.trim().length === 0) {
      return undefined;
    }
    this.lastTask = task;
    let runtimes: string[] = [];
    try {
      const document = await vscode.workspace.openTextDocument(uri);
      runtimes = declaredRuntimes(document.getText());
    } catch {
      // Unreadable: the server reports it; no runtime is asked for.
    }
    if (runtimes.length < 2) {
      return { task };
    }
    const runtime = await vscode.window.showQuickPick(runtimes, {
      title,
      placeHolder: 'The runtime to use (the manifest declares several)',
      ignoreFocusOut: true,
    });
    return runtime === undefined ? undefined : { task, runtime };
  }

  /** Shows how a command ended, with a button for the run channel (not awaited: the command is done). */
  private offerRunOutput(outcome: RunOutcome): void {
    void showEnding(outcome, BUTTON_OUTPUT).then((picked) => {
      if (picked === BUTTON_OUTPUT) {
        this.showRunOutput();
      }
    });
  }

  /**
   * Shows how a run ended and what its outcome holds, with buttons for the outcome (Show Outcome, View Diff when
   * there is a review diff, Apply Outcome when it is pending) and the run channel. Not awaited.
   */
  private offerRunEnding(ending: RunOutcome, view: OutcomeView): void {
    const { outcome, receipt } = view;
    const stop = /[.!?]$/.test(ending.message) ? '' : '.';
    const state = receipt.state === 'pending' ? ' (pending: not applied yet)' : '';
    const message = `${ending.message}${stop} Outcome${state}: ${outcomeBrief(outcome)}.`;
    const buttons = [BUTTON_SHOW_OUTCOME];
    if (outcome.changesets.some((changeset) => view.files.reviews.some((file) => file.changeset === changeset.id))) {
      buttons.push(BUTTON_VIEW_DIFF);
    }
    if (receipt.state === 'pending') {
      buttons.push(BUTTON_APPLY_OUTCOME);
    }
    buttons.push(BUTTON_OUTPUT);
    void showEnding({ level: ending.level, message }, ...buttons).then((picked) => {
      switch (picked) {
        case BUTTON_SHOW_OUTCOME:
          return this.outcomes.showOutcome(outcome.id);
        case BUTTON_VIEW_DIFF:
          return this.outcomes.viewDiff(outcome.id);
        case BUTTON_APPLY_OUTCOME:
          return this.outcomes.apply(outcome.id);
        case BUTTON_OUTPUT:
          return this.showRunOutput();
        default:
          return undefined;
      }
    });
  }

  private showRunStatus(run: ActiveRun): void {
    this.runStatusItem.text = '$(sync~spin) Workbench: running';
    this.runStatusItem.tooltip =
      `Running: ${run.task}\n` +
      "Click for the run's output; cancel it from the notification or with Workbench: Cancel Run.";
    this.runStatusItem.command = COMMAND_SHOW_RUN_OUTPUT;
    this.runStatusItem.show();
  }

  private onRunEvent(params: RunEventParams): void {
    const active = this.activeRun;
    if (active !== undefined && active.runId === undefined) {
      active.runId = params.event.run_id;
    }
    const outcomeId = params.event.data?.outcome_id;
    if (active?.runId === params.event.run_id && params.event.type === 'outcome.available' && isOutcomeId(outcomeId)) {
      active.outcomeId = outcomeId;
    }
    for (const line of formatRunEvent(params.event)) {
      this.runOutput.appendLine(line);
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
    if (this.wanted && RESTART_SETTINGS.some((setting) => event.affectsConfiguration(setting))) {
      this.output.appendLine('workbench.server.path changed: restarting the server.');
      void this.restart();
    }
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
    const section = vscode.workspace.getConfiguration(CONFIGURATION_SECTION);
    const resolution = resolveServerPath(section.get<string>('server.path'), {
      ...this.machine,
      workspaceFolders: this.workspaceFolders(),
    });
    if (resolution.kind === 'missing') {
      const { message, details } = missingServerMessage(resolution);
      this.output.appendLine(details);
      this.setStatus({ state: 'error', message: 'wb-lsp was not found' });
      void this.offerHelp(message);
      return false;
    }

    this.output.appendLine(`Starting ${resolution.path} (${resolution.source === 'setting' ? 'workbench.server.path' : 'found on PATH'})`);
    this.setStatus({ state: 'starting' });
    const client = this.createClient({
      serverPath: resolution.path,
      outputChannel: this.output,
      settings: () => this.serverSettings(),
    });
    this.client = client;
    this.clientListeners = [
      client.onDidChangeStatus((status) => {
        if (this.client === client) {
          this.setStatus(status);
        }
      }),
      client.onRunEvent((params) => this.onRunEvent(params)),
    ];
    try {
      await client.start();
      return true;
    } catch (error) {
      const message = `wb-lsp failed to start: ${errorText(error)}`;
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
      this.output.appendLine(`Stopping wb-lsp failed: ${errorText(error)}`);
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
      await vscode.commands.executeCommand('workbench.action.openSettings', 'workbench.server.path');
    }
  }
}
