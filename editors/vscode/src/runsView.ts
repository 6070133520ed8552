/**
 * The Workbench Runs view and the cost status bar item, on the server's `workbench.runs`, `workbench.attach`
 * and `workbench.kill` (docs/lsp-extensions.md). The view lists the running runs and the recent ones under the
 * Workbench home (started from this window, another one or the CLI: each is owned by its supervisor and
 * outlives the editor), with their state, elapsed time and cost; its items attach (the run's events replayed
 * then followed in the Workbench Run channel, as for a run started here), kill, and open the outcome. The
 * status bar item shows the total cost of the running runs and is hidden when none runs.
 *
 * A finished run with an outcome expands into its changed files (kind and line counts, `taken` once applied
 * on its own): clicking one opens it in the diff editor, and a pending outcome's file has Apply This File.
 *
 * The list is read again every few seconds while the view is visible or a run is running (slowly otherwise),
 * and at once after a run, an attach or a kill. The timer never starts the server; Refresh does.
 */

import * as vscode from 'vscode';
import {
  COMMAND_ATTACH_RUN,
  COMMAND_KILL_RUN,
  COMMAND_SEND_TURN,
  COMMAND_OPEN_RUN_OUTCOME,
  COMMAND_OPEN_ARTIFACT,
  COMMAND_OPEN_OUTCOME_FILE,
  COMMAND_OPEN_TRIAL_REPORT,
  COMMAND_REFRESH_RUNS,
  RUNS_VIEW_ID,
  SERVER_COMMAND_KILL,
  SERVER_COMMAND_RUNS,
  SERVER_COMMAND_TRIALS,
} from './constants';
import type { ServerClient } from './controller';
import type { ExecutionCommands } from './executionCommands';
import { fileChangeDescription, isOutcomeId, isWebLink, type FileChange, type OutcomeArtifact, type OutcomeLink } from './outcome';
import type { OutcomeCommands } from './outcomeCommands';
import { errorMessage } from './run';
import { parseTrialJobs, type TrialJob } from './trials';
import {
  isLive,
  parseRuns,
  presentRunningCost,
  runArgumentId,
  runContextValue,
  runDescription,
  runIcon,
  runTooltip,
  type RunRecord,
} from './runs';

/** The confirmation's button of Kill Run. */
export const BUTTON_KILL = 'Kill';
/** How many finished runs the view lists after the running ones. */
export const RECENT_RUNS = 20;
/** Milliseconds between two readings while the view is visible or a run is running. */
export const FAST_REFRESH_MS = 2000;
/** Milliseconds between two readings otherwise (runs started elsewhere show in the status bar). */
export const SLOW_REFRESH_MS = 15000;
/** Milliseconds from the server's start to the first reading. */
export const FIRST_REFRESH_MS = 500;

export interface RunsViewOptions {
  /** The clock (tests set it). */
  now?: () => number;
  /** Schedules a reading (tests replace it); returns a cancel function. */
  schedule?: (callback: () => void, milliseconds: number) => () => void;
}

function defaultSchedule(callback: () => void, milliseconds: number): () => void {
  const timer = setTimeout(callback, milliseconds);
  // A pending reading never keeps the extension host (or a test) alive.
  timer.unref?.();
  return () => clearTimeout(timer);
}

/** A changed file of a run's outcome, under the run in the view. */
export interface FileNode {
  kind: 'file';
  runId: string;
  outcomeId: string;
  change: FileChange;
  /** The outcome is pending: its files can be taken. */
  pending: boolean;
}

/** An artifact or a link of a run's outcome, under its files. */
export type ReturnedNode =
  | { kind: 'artifact'; runId: string; outcomeId: string; artifact: OutcomeArtifact }
  | { kind: 'link'; runId: string; outcomeId: string; link: OutcomeLink };

/** A trial or batch job, after the runs: clicking a trial opens its report. */
export interface TrialNode {
  kind: 'trial';
  job: TrialJob;
}

/** How many jobs the view lists after the runs. */
export const RECENT_TRIALS = 10;

export type RunsNode = RunRecord | FileNode | ReturnedNode | TrialNode;

function isTrialNode(node: RunsNode): node is TrialNode {
  return (node as TrialNode).kind === 'trial';
}

/** A job: its package and line; a trial with a report opens it. */
function trialItem(node: TrialNode): vscode.TreeItem {
  const { job } = node;
  const item = new vscode.TreeItem(`${job.kind} · ${job.workbench}`, vscode.TreeItemCollapsibleState.None);
  item.id = job.jobId;
  item.description = job.kind === 'trial' ? job.summary : `${job.done}/${job.total} done`;
  item.tooltip = `${job.jobId}: ${job.summary}`;
  item.iconPath = new vscode.ThemeIcon(job.done < job.total ? 'loading~spin' : 'beaker');
  item.contextValue = 'trialJob';
  if (job.kind === 'trial' && job.reportHtml !== null) {
    item.command = { command: COMMAND_OPEN_TRIAL_REPORT, title: 'Open Trial Report', arguments: [{ jobId: job.jobId }] };
  }
  return item;
}

function isFileNode(node: RunsNode): node is FileNode {
  return (node as FileNode).kind === 'file';
}

function isReturnedNode(node: RunsNode): node is ReturnedNode {
  const kind = (node as ReturnedNode).kind;
  return kind === 'artifact' || kind === 'link';
}

/** Whether a run's item expands into its outcome's files: it has ended with an outcome. */
function hasFiles(record: RunRecord): boolean {
  return !isLive(record) && isOutcomeId(record.outcome_id ?? undefined);
}

const FILE_ICONS: Record<FileChange['kind'], string> = {
  added: 'diff-added',
  modified: 'diff-modified',
  deleted: 'diff-removed',
  mode_changed: 'diff-modified',
  link: 'file-symlink-file',
};

/** An artifact (opens read-only) or a link (opens in the browser when it is a web link) of an outcome. */
function returnedItem(node: ReturnedNode): vscode.TreeItem {
  if (node.kind === 'artifact') {
    const { artifact } = node;
    const item = new vscode.TreeItem(artifact.name, vscode.TreeItemCollapsibleState.None);
    item.id = `${node.outcomeId}/artifact/${artifact.id}`;
    item.description = `artifact \u00b7 ${artifact.content.media_type}, ${artifact.content.size_bytes} bytes`;
    item.tooltip = artifact.description ?? artifact.path ?? artifact.name;
    item.iconPath = new vscode.ThemeIcon('file-media');
    item.contextValue = 'outcomeArtifact';
    item.command = {
      command: COMMAND_OPEN_ARTIFACT,
      title: 'Open Artifact',
      arguments: [{ id: node.outcomeId, artifact: artifact.id }],
    };
    return item;
  }
  const { link } = node;
  const item = new vscode.TreeItem(link.label, vscode.TreeItemCollapsibleState.None);
  item.id = `${node.outcomeId}/link/${link.id}`;
  item.description = `link${link.kind === undefined ? '' : ` \u00b7 ${link.kind}`}`;
  item.tooltip = link.uri;
  item.iconPath = new vscode.ThemeIcon('link-external');
  item.contextValue = 'outcomeLink';
  if (isWebLink(link.uri)) {
    item.command = { command: 'vscode.open', title: 'Open Link', arguments: [vscode.Uri.parse(link.uri)] };
  }
  return item;
}

export class RunsView implements vscode.TreeDataProvider<RunsNode>, vscode.Disposable {
  private records: RunRecord[] = [];
  private trials: TrialNode[] = [];
  private readonly changed = new vscode.EventEmitter<RunsNode | undefined>();
  readonly onDidChangeTreeData: vscode.Event<RunsNode | undefined> = this.changed.event;
  /** The running runs' total cost; hidden when none runs. */
  readonly costItem: vscode.StatusBarItem;
  private treeView: vscode.TreeView<RunsNode> | undefined;
  private cancelTimer: (() => void) | undefined;
  private readonly now: () => number;
  private readonly schedule: (callback: () => void, milliseconds: number) => () => void;
  private disposed = false;
  /** The reading in progress, so that two never overlap. */
  private reading: Promise<void> | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    /** The running client, started first if needed (Refresh, Attach, Kill). */
    private readonly client: () => Promise<ServerClient | undefined>,
    /** The client when it is already running, else undefined (the timer never starts the server). */
    private readonly currentClient: () => ServerClient | undefined,
    private readonly execution: ExecutionCommands,
    private readonly outcomes: OutcomeCommands,
    options: RunsViewOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.schedule = options.schedule ?? defaultSchedule;
    this.costItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, -2);
    this.costItem.name = 'Workbench Runs Cost';
    this.costItem.command = `${RUNS_VIEW_ID}.focus`;
  }

  /** The runs the view lists: the running ones, then up to RECENT_RUNS finished ones, newest first. */
  get runs(): readonly RunRecord[] {
    return this.records;
  }

  /** The view, its four commands and the refresh after each run of this window. */
  register(): vscode.Disposable[] {
    this.treeView = vscode.window.createTreeView(RUNS_VIEW_ID, { treeDataProvider: this, showCollapseAll: false });
    this.disposables.push(
      this.treeView,
      this.treeView.onDidChangeVisibility((event) => {
        if (event.visible) {
          void this.refresh();
        }
      }),
      this.execution.onDidChangeRuns(() => void this.refresh()),
      this.outcomes.onDidChangeFiles(() => this.changed.fire(undefined)),
    );
    return [
      vscode.commands.registerCommand(COMMAND_REFRESH_RUNS, () => this.refresh(true)),
      vscode.commands.registerCommand(COMMAND_ATTACH_RUN, (argument?: unknown) => this.attach(argument)),
      vscode.commands.registerCommand(COMMAND_KILL_RUN, (argument?: unknown) => this.kill(argument)),
      vscode.commands.registerCommand(COMMAND_SEND_TURN, (argument?: unknown) => this.sendTurn(argument)),
      vscode.commands.registerCommand(COMMAND_OPEN_RUN_OUTCOME, (argument?: unknown) => this.openOutcome(argument)),
    ];
  }

  /** The server is running: the first reading comes soon (then the timer goes on). */
  serverStarted(): void {
    if (this.disposed) {
      return;
    }
    this.cancelTimer?.();
    this.cancelTimer = this.schedule(() => void this.refresh(), FIRST_REFRESH_MS);
  }

  getTreeItem(node: RunsNode): vscode.TreeItem {
    if (isTrialNode(node)) {
      return trialItem(node);
    }
    if (isFileNode(node)) {
      return this.fileItem(node);
    }
    if (isReturnedNode(node)) {
      return returnedItem(node);
    }
    const record = node;
    const now = this.now();
    const collapsed = hasFiles(record)
      ? vscode.TreeItemCollapsibleState.Collapsed
      : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(record.workbench, collapsed);
    item.id = record.run_id;
    item.description = runDescription(record, now);
    // A screen reader names the run by its id too (the label and description alone repeat across runs).
    item.accessibilityInformation = { label: `${record.workbench} ${record.run_id} ${item.description}` };
    item.tooltip = runTooltip(record, now);
    item.iconPath = new vscode.ThemeIcon(runIcon(record.state));
    item.contextValue = runContextValue(record);
    return item;
  }

  getChildren(element?: RunsNode): RunsNode[] | Promise<RunsNode[]> {
    if (element === undefined) {
      return [...this.records, ...this.trials];
    }
    if (isTrialNode(element) || isFileNode(element) || isReturnedNode(element) || !hasFiles(element)) {
      return [];
    }
    return this.files(element);
  }

  /** A run's outcome: its changed files, then its artifacts and links, read from the server. */
  private async files(record: RunRecord): Promise<Array<FileNode | ReturnedNode>> {
    const outcomeId = record.outcome_id ?? '';
    const runId = record.run_id;
    const { changes, pending, artifacts, links } = await this.outcomes.fileChanges(outcomeId);
    return [
      ...changes.map((change): FileNode => ({ kind: 'file', runId, outcomeId, change, pending })),
      ...artifacts.map((artifact): ReturnedNode => ({ kind: 'artifact', runId, outcomeId, artifact })),
      ...links.map((link): ReturnedNode => ({ kind: 'link', runId, outcomeId, link })),
    ];
  }

  /** A changed file: its path (and workspace), kind and counts; clicking opens it in the diff editor. */
  private fileItem(node: FileNode): vscode.TreeItem {
    const { change } = node;
    const item = new vscode.TreeItem(change.path, vscode.TreeItemCollapsibleState.None);
    item.id = `${node.outcomeId}/${change.label}`;
    item.description = `${change.workspace === null ? '' : `${change.workspace}: `}${fileChangeDescription(change)}`;
    item.tooltip = `${change.label} in outcome ${node.outcomeId}`;
    item.iconPath = new vscode.ThemeIcon(FILE_ICONS[change.kind]);
    item.contextValue = `outcomeFile${node.pending && !change.taken ? ' applicable' : ''}`;
    item.command = {
      command: COMMAND_OPEN_OUTCOME_FILE,
      title: 'Open Changes',
      arguments: [{ outcomeId: node.outcomeId, label: change.label }],
    };
    return item;
  }

  /**
   * Reads the runs again (`workbench.runs` with `all`), updates the view and the cost item, and schedules the
   * next reading. `start`: start the server if it is not running (the Refresh command); otherwise a stopped
   * server leaves the list as it was.
   */
  async refresh(start = false): Promise<void> {
    if (this.disposed) {
      return;
    }
    if (this.reading !== undefined) {
      return this.reading;
    }
    this.reading = this.read(start).finally(() => {
      this.reading = undefined;
      this.scheduleNext();
    });
    return this.reading;
  }

  /** Attach: the run's events replayed then followed in the Workbench Run channel. Without an argument, asks. */
  async attach(argument?: unknown): Promise<void> {
    const runId = runArgumentId(argument) ?? (await this.pick('Workbench: Attach to Run', (r) => r.state !== 'lost'));
    if (runId === undefined) {
      return;
    }
    const record = this.records.find((candidate) => candidate.run_id === runId);
    await this.execution.attach(runId, record?.workbench);
  }

  /** Kill: after a confirmation, asks the run's supervisor to cancel it (`workbench.kill`). Without an argument, asks. */
  async kill(argument?: unknown): Promise<void> {
    const runId = runArgumentId(argument) ?? (await this.pick('Workbench: Kill Run', isLive));
    if (runId === undefined) {
      return;
    }
    const record = this.records.find((candidate) => candidate.run_id === runId);
    const name = record === undefined ? runId : `${record.workbench} (${runId})`;
    const confirmed = await vscode.window.showWarningMessage(
      `Kill run ${name}?`,
      { modal: true, detail: 'The runner stops and the partial outcome is collected, as on a cancel.' },
      BUTTON_KILL,
    );
    if (confirmed !== BUTTON_KILL) {
      return;
    }
    const client = await this.client();
    if (client === undefined) {
      return;
    }
    try {
      await client.executeCommand(SERVER_COMMAND_KILL, [{ runId }]);
      void vscode.window.showInformationMessage(`Workbench: asked run ${name} to stop.`);
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: cannot kill run ${runId}: ${errorMessage(error)}`);
    }
    await this.refresh();
  }

  /**
   * Send Turn: the next turn of an idle session (`workbench.send`), its task asked for, its events in the
   * Workbench Run channel and its snapshot offered as a run's outcome is. Without an argument, asks which.
   */
  async sendTurn(argument?: unknown): Promise<void> {
    const runId =
      runArgumentId(argument) ?? (await this.pick('Workbench: Send Turn', (record) => record.state === 'idle'));
    if (runId === undefined) {
      return;
    }
    const record = this.records.find((candidate) => candidate.run_id === runId);
    const task = await vscode.window.showInputBox({
      title: `Workbench: the next turn of ${record?.workbench ?? runId}`,
      prompt: 'The task of the turn (the session keeps its conversation)',
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() === '' ? 'A task is required' : undefined),
    });
    if (task === undefined || task.trim() === '') {
      return;
    }
    await this.execution.sendTurn(runId, task, record?.workbench);
  }

  /** Open Outcome: the run's outcome in Show Outcome (the outcome commands). */
  async openOutcome(argument?: unknown): Promise<void> {
    const runId = runArgumentId(argument);
    const given = typeof argument === 'object' && argument !== null ? (argument as RunRecord).outcome_id : undefined;
    const record = this.records.find((candidate) => candidate.run_id === runId);
    const outcomeId = isOutcomeId(given) ? given : record?.outcome_id;
    if (!isOutcomeId(outcomeId)) {
      void vscode.window.showInformationMessage(
        `Workbench: run ${runId ?? ''} has no outcome${record?.state === 'running' ? ' yet' : ''}.`,
      );
      return;
    }
    await this.outcomes.showOutcome(outcomeId);
  }

  dispose(): void {
    this.disposed = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    for (const disposable of this.disposables.splice(0)) {
      disposable.dispose();
    }
    this.costItem.dispose();
    this.changed.dispose();
  }

  private async read(start: boolean): Promise<void> {
    const client = start ? await this.client() : this.currentClient();
    if (client === undefined) {
      return;
    }
    let answer: unknown;
    try {
      answer = await client.executeCommand(SERVER_COMMAND_RUNS, [{ all: true }]);
    } catch (error) {
      this.setMessage(`Cannot list the runs: ${errorMessage(error)}`);
      if (start) {
        void vscode.window.showErrorMessage(`Workbench: cannot list the runs: ${errorMessage(error)}`);
      }
      return;
    }
    if (this.disposed) {
      return;
    }
    const all = parseRuns(answer);
    const running = all.filter(isLive);
    const finished = all.filter((record) => !isLive(record)).slice(0, RECENT_RUNS);
    this.records = [...running, ...finished];
    // The jobs come after the runs; a server that cannot list them leaves the runs listed.
    const jobs = await client.executeCommand(SERVER_COMMAND_TRIALS, [{}]).catch(() => []);
    if (this.disposed) {
      return;
    }
    this.trials = parseTrialJobs(jobs)
      .slice(0, RECENT_TRIALS)
      .map((job): TrialNode => ({ kind: 'trial', job }));
    this.setMessage(this.records.length + this.trials.length === 0 ? 'No Workbench runs yet.' : undefined);
    this.changed.fire(undefined);
    this.updateCost();
  }

  private setMessage(message: string | undefined): void {
    if (this.treeView !== undefined) {
      this.treeView.message = message;
    }
  }

  private updateCost(): void {
    const look = presentRunningCost(this.records, this.now());
    if (look === undefined) {
      this.costItem.hide();
      return;
    }
    this.costItem.text = look.text;
    this.costItem.tooltip = look.tooltip;
    this.costItem.show();
  }

  private scheduleNext(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    if (this.disposed) {
      return;
    }
    const busy =
      this.treeView?.visible === true ||
      this.execution.running ||
      this.records.some((record) => record.state === 'running');
    this.cancelTimer = this.schedule(() => void this.refresh(), busy ? FAST_REFRESH_MS : SLOW_REFRESH_MS);
  }

  /** A quick pick of the listed runs that `wanted` accepts (read first); undefined when dismissed or none. */
  private async pick(title: string, wanted: (record: RunRecord) => boolean): Promise<string | undefined> {
    await this.refresh(true);
    const candidates = this.records.filter(wanted);
    if (candidates.length === 0) {
      void vscode.window.showInformationMessage('Workbench: no run to choose from.');
      return undefined;
    }
    const now = this.now();
    const picked = await vscode.window.showQuickPick(
      candidates.map((record) => ({
        label: record.workbench,
        description: runDescription(record, now),
        detail: record.run_id,
        runId: record.run_id,
      })),
      { title, placeHolder: 'The run', matchOnDescription: true, matchOnDetail: true },
    );
    return picked?.runId;
  }
}
