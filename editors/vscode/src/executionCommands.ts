/**
 * The execution commands: Dry Run, Smoke, Run Workbench, Cancel Run and Show Run Output, on the server's
 * `workbench.dryRun`, `workbench.smoke` and `workbench.run` (docs/lsp-extensions.md). They write to the
 * Workbench Run channel, stream each run's `workbench/runEvent` notifications into it (the controller hands
 * them to `onRunEvent`), keep one run at a time with its status bar item, and hand the outcome a run committed
 * to the outcome commands. `attach` follows a run started elsewhere (`workbench.attach`) the same way.
 */

import * as vscode from 'vscode';
import {
  BUTTON_OUTPUT,
  COMMAND_CANCEL_RUN,
  COMMAND_DRY_RUN,
  COMMAND_RUN,
  COMMAND_RUN_SESSION,
  COMMAND_SHOW_RUN_OUTPUT,
  COMMAND_SMOKE,
  RUNNING_CONTEXT,
  SERVER_COMMAND_ATTACH,
  SERVER_COMMAND_DRY_RUN,
  SERVER_COMMAND_RUN,
  SERVER_COMMAND_SEND,
  SERVER_COMMAND_SMOKE,
} from './constants';
import type { ServerClient } from './controller';
import { isOutcomeId, type OutcomeView } from './outcome';
import { BUTTON_APPLY_OUTCOME, BUTTON_SHOW_OUTCOME, BUTTON_VIEW_DIFF, type OutcomeCommands } from './outcomeCommands';
import { isManifestPath } from './paths';
import {
  argumentUri,
  declaredRuntimes,
  errorMessage,
  executionArguments,
  isRequestCancelled,
  isRunResult,
  isTurnResult,
  runOutcome,
  turnOutcome,
  smokeLines,
  smokeOutcome,
  textLines,
  type RunEventParams,
  type RunOutcome,
} from './run';

export const BUTTON_CANCEL_RUN = 'Cancel Run';

/** What a followed run is: its task (for the outcome), the channel's header, the server command and argument,
 * the notification's title, and the run's id when it is known before its first event. */
interface FollowRequest {
  task: string;
  header: string;
  command: string;
  argument: unknown;
  title: string;
  runId?: string;
}
/** The button that attaches again to a run the server let go of. */
export const BUTTON_ATTACH = 'Attach';

/** The server's error when its session ends during a run or an attach: the run goes on (docs/lsp-extensions.md). */
const SESSION_ENDED = /^The session ended while run (wb_[0-9a-f]{24}) goes on/;

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

export class ExecutionCommands implements vscode.Disposable {
  /** Shown while a run is in progress. */
  private readonly runStatusItem: vscode.StatusBarItem;
  private activeRun: ActiveRun | undefined;
  private runCount = 0;
  private readonly runsChanged = new vscode.EventEmitter<void>();
  /** Fires when a run of this window starts (its first event) or ends: the Runs view refreshes. */
  readonly onDidChangeRuns: vscode.Event<void> = this.runsChanged.event;
  /** The last task asked for, offered again next time. */
  private lastTask = '';

  constructor(
    private readonly client: () => Promise<ServerClient | undefined>,
    /** The run events, smoke reports and run endings. */
    private readonly runOutput: vscode.OutputChannel,
    private readonly outcomes: OutcomeCommands,
  ) {
    this.runStatusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, -1);
    this.runStatusItem.name = 'Workbench Run';
  }

  /** True while a run is in progress. */
  get running(): boolean {
    return this.activeRun !== undefined;
  }

  /** The five commands. */
  register(): vscode.Disposable[] {
    return [
      vscode.commands.registerCommand(COMMAND_DRY_RUN, (argument?: unknown) => this.dryRun(argument)),
      vscode.commands.registerCommand(COMMAND_SMOKE, (argument?: unknown) => this.smoke(argument)),
      vscode.commands.registerCommand(COMMAND_RUN, (argument?: unknown) => this.run(argument)),
      vscode.commands.registerCommand(COMMAND_RUN_SESSION, (argument?: unknown) => this.run(argument, true)),
      vscode.commands.registerCommand(COMMAND_CANCEL_RUN, () => this.cancelRun()),
      vscode.commands.registerCommand(COMMAND_SHOW_RUN_OUTPUT, () => this.showRunOutput()),
    ];
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
    const client = await this.client();
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
      void vscode.window.showErrorMessage(`Workbench: dry run failed: ${errorMessage(error)}`);
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
    const client = await this.client();
    if (client === undefined) {
      return;
    }
    let outcome: RunOutcome;
    try {
      const reports = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Workbench: smoke' },
        () => client.executeCommand(SERVER_COMMAND_SMOKE, [executionArguments(uri.toString())]),
      );
      for (const line of smokeLines(reports)) {
        this.runOutput.appendLine(line);
      }
      outcome = smokeOutcome(reports);
    } catch (error) {
      const message = `Workbench: smoke failed: ${errorMessage(error)}`;
      this.runOutput.appendLine(message);
      outcome = { level: 'error', message };
    }
    this.offerRunOutput(outcome);
  }

  /**
   * "Workbench: Run Workbench": asks for the task (and the runtime), runs `workbench.run` with a work-done
   * token and streams its events into the Workbench Run channel under a cancellable notification. Cancelling
   * sends `$/cancelRequest` for the request (and `window/workDoneProgress/cancel` for its token).
   * "Workbench: Run Workbench as Session" (`session`) does the same with `session`: the answer comes when the
   * first turn has ended, and the session waits in the Runs view for Send Turn (docs/sessions.md).
   */
  async run(argument?: unknown, session = false): Promise<void> {
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
    const title = session ? 'Workbench: Run Workbench as Session' : 'Workbench: Run Workbench';
    const choice = await this.askTaskAndRuntime(uri, title);
    if (choice === undefined) {
      return;
    }
    const client = await this.client();
    if (client === undefined || this.activeRun !== undefined) {
      return;
    }
    const on = choice.runtime === undefined ? '' : ` on ${choice.runtime}`;
    const request = executionArguments(uri.toString(), choice);
    await this.follow(client, {
      task: choice.task ?? '',
      header: `── ${uri.fsPath}${on}${session ? ' (session)' : ''}: ${choice.task ?? ''}`,
      command: SERVER_COMMAND_RUN,
      argument: session ? { ...request, session: true } : request,
      title: session ? 'Workbench session' : 'Workbench run',
    });
  }

  /**
   * "Workbench: Attach to Run" (and the Runs view's Attach): `workbench.attach` replays the run's events from its
   * first, then follows it to its end, into the Workbench Run channel as a run started here shows them, with the
   * same progress, Cancel (which cancels the run) and ending. Returns false when it did not attach (a run of
   * this window is in progress, or no server).
   */
  async attach(runId: string, description?: string): Promise<boolean> {
    const following = this.activeRun?.runId === runId ? 'this run is already followed' : 'a run is already in progress';
    return this.followFromView(following, {
      task: description ?? runId,
      header: `── attached to ${runId}${description === undefined ? '' : `: ${description}`}`,
      command: SERVER_COMMAND_ATTACH,
      argument: { runId },
      title: `Workbench run ${runId}`,
      runId,
    });
  }

  /**
   * Send Turn: the next turn of session `runId` (`workbench.send`), followed as a run is, in the Workbench Run
   * channel; its snapshot (when its outbox changed) is offered as a run's outcome is. False when another run
   * is followed.
   */
  async sendTurn(runId: string, task: string, description?: string): Promise<boolean> {
    return this.followFromView('a run is already in progress', {
      task,
      header: `── ${runId}${description === undefined ? '' : ` (${description})`}: ${task}`,
      command: SERVER_COMMAND_SEND,
      argument: { runId, task },
      title: `Workbench session ${runId}`,
      runId,
    });
  }

  /**
   * What the Runs view starts (Attach, Send Turn): refused, saying `busy` with a button to the run output, while a
   * run of this window is followed; otherwise followed. False when nothing was followed.
   */
  private async followFromView(busy: string, request: FollowRequest): Promise<boolean> {
    if (this.activeRun !== undefined) {
      void vscode.window.showWarningMessage(`Workbench: ${busy}; the run output shows it.`, BUTTON_OUTPUT).then(
        (picked) => (picked === BUTTON_OUTPUT ? this.showRunOutput() : undefined),
      );
      return false;
    }
    const client = await this.client();
    if (client === undefined || this.activeRun !== undefined) {
      return false;
    }
    await this.follow(client, request);
    return true;
  }

  /**
   * Sends `workbench.run` or `workbench.attach` with a work-done token and streams the run's events into the
   * Workbench Run channel under a cancellable notification; then shows the ending and the outcome.
   */
  private async follow(client: ServerClient, request: FollowRequest): Promise<void> {
    this.runCount += 1;
    const run: ActiveRun = {
      task: request.task,
      workDoneToken: `wb-lsp-run-${this.runCount}`,
      cancellation: new vscode.CancellationTokenSource(),
      client,
      cancelled: false,
      runId: request.runId,
    };
    this.activeRun = run;
    this.showRunStatus(run);
    void vscode.commands.executeCommand('setContext', RUNNING_CONTEXT, true);
    if (run.runId !== undefined) {
      this.runsChanged.fire();
    }
    this.runOutput.appendLine(request.header);
    this.runOutput.show(true);
    let outcome: RunOutcome;
    let outcomeId: string | undefined;
    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: request.title, cancellable: true },
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
            return await client.executeCommand(request.command, [request.argument], {
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
      if (isTurnResult(result)) {
        outcome = turnOutcome(result);
        outcomeId = isOutcomeId(result.snapshotId) ? result.snapshotId : undefined;
      } else {
        outcome = runOutcome(result);
        if (isRunResult(result) && isOutcomeId(result.outcomeId)) {
          outcomeId = result.outcomeId;
        }
      }
    } catch (error) {
      const goesOn = SESSION_ENDED.exec(errorMessage(error))?.[1];
      if (goesOn !== undefined) {
        // The server stopped (Restart Server, a crash): the run goes on under its supervisor.
        this.runOutput.appendLine(`■ ${errorMessage(error)}`);
        void vscode.window
          .showWarningMessage(
            `Workbench: the server stopped; run ${goesOn} goes on without this window.`,
            BUTTON_ATTACH,
            BUTTON_OUTPUT,
          )
          .then(async (picked) => {
            if (picked === BUTTON_ATTACH) {
              await this.attach(goesOn, run.task);
            } else if (picked === BUTTON_OUTPUT) {
              this.showRunOutput();
            }
          });
        return;
      }
      outcome = runOutcome(undefined, error, run.runId !== undefined);
      // A run refused before it started sends no event, and a connection lost ends it without one: say why in
      // the channel too. (After a cancellation the run's own `run.cancelled` event says it.)
      if (!isRequestCancelled(error)) {
        this.runOutput.appendLine(`■ ${outcome.message.replace(/^Workbench: /, '')}`);
      }
    } finally {
      run.cancellation.dispose();
      this.endFollow(run);
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

  /**
   * A `workbench/runEvent` notification: the server's lines for it go to the run channel; the first names the
   * active run.
   */
  onRunEvent(params: RunEventParams): void {
    const active = this.activeRun;
    if (active !== undefined && active.runId === undefined) {
      active.runId = params.event.run_id;
      this.runsChanged.fire();
    }
    const outcomeId = params.event.data?.outcome_id;
    if (active?.runId === params.event.run_id && params.event.type === 'outcome.available' && isOutcomeId(outcomeId)) {
      active.outcomeId = outcomeId;
    }
    for (const line of textLines(params.text)) {
      this.runOutput.appendLine(line);
    }
  }

  dispose(): void {
    this.runStatusItem.dispose();
    this.runsChanged.dispose();
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
    const { outcome, receipt, brief } = view;
    const stop = /[.!?]$/.test(ending.message) ? '' : '.';
    const state = receipt.state === 'pending' ? ' (pending: not applied yet)' : '';
    const message = `${ending.message}${stop} Outcome${state}: ${brief}.`;
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

  /** The run (or attach) of this window is over, or let go of. */
  private endFollow(run: ActiveRun): void {
    if (this.activeRun !== run) {
      return;
    }
    this.activeRun = undefined;
    this.runStatusItem.hide();
    void vscode.commands.executeCommand('setContext', RUNNING_CONTEXT, false);
    this.runsChanged.fire();
  }

  private showRunStatus(run: ActiveRun): void {
    this.runStatusItem.text = '$(sync~spin) Workbench: running';
    this.runStatusItem.tooltip =
      `Running: ${run.task}\n` +
      "Click for the run's output; cancel it from the notification or with Workbench: Cancel Run.";
    this.runStatusItem.command = COMMAND_SHOW_RUN_OUTPUT;
    this.runStatusItem.show();
  }
}
