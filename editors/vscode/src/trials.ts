/**
 * Trials (docs/trials.md): "Workbench: Run Trials" runs the current package's trial (`workbench.trial`) under a
 * cancellable notification showing the server's progress (`done/total · N works · $cost`); Cancel stops
 * admitting, and the running attempts finish and are graded. "Workbench: Open Trial Report" shows a trial's
 * report.html (`workbench.openTrialReport` with `open: false`) in a webview: the page is self-contained, styled
 * inline, with no script, so the webview runs none. The Runs view lists the jobs (`workbench.trials`).
 */

import * as fs from 'node:fs/promises';
import * as vscode from 'vscode';
import {
  COMMAND_OPEN_TRIAL_REPORT,
  COMMAND_RUN_TRIALS,
  SERVER_COMMAND_OPEN_TRIAL_REPORT,
  SERVER_COMMAND_TRIAL,
} from './constants';
import type { ServerClient } from './controller';
import { isManifestPath } from './paths';
import { argumentUri, errorMessage } from './run';

/** The button of a trial's ending that opens its report. */
export const BUTTON_OPEN_REPORT = 'Open Report';
/** The webview panels' type. */
export const REPORT_VIEW_TYPE = 'wb-lsp.trialReport';

/** A job as `workbench.trials` lists it (docs/lsp-extensions.md). */
export interface TrialJob {
  jobId: string;
  kind: string;
  workbench: string;
  version: string;
  createdAt: string;
  total: number;
  done: number;
  works: number;
  spentUsd: number;
  /** The code lens's line: `trials 1.0.0: 9/10 works · $0.30 per working result · 2 days ago`. */
  summary: string;
  reportHtml: string | null;
}

/** A job from the server's answer, when it is one. */
export function parseTrialJob(value: unknown): TrialJob | undefined {
  if (typeof value !== 'object' || value === null) {
    return undefined;
  }
  const job = value as Partial<TrialJob>;
  if (typeof job.jobId !== 'string' || !/^wbt_[0-9a-f]+$/.test(job.jobId) || typeof job.summary !== 'string') {
    return undefined;
  }
  return {
    jobId: job.jobId,
    kind: typeof job.kind === 'string' ? job.kind : 'trial',
    workbench: typeof job.workbench === 'string' ? job.workbench : '',
    version: typeof job.version === 'string' ? job.version : '',
    createdAt: typeof job.createdAt === 'string' ? job.createdAt : '',
    total: typeof job.total === 'number' ? job.total : 0,
    done: typeof job.done === 'number' ? job.done : 0,
    works: typeof job.works === 'number' ? job.works : 0,
    spentUsd: typeof job.spentUsd === 'number' ? job.spentUsd : 0,
    summary: job.summary,
    reportHtml: typeof job.reportHtml === 'string' ? job.reportHtml : null,
  };
}

/** The jobs of a `workbench.trials` answer (what is not a job is left out). */
export function parseTrialJobs(value: unknown): TrialJob[] {
  return Array.isArray(value) ? value.map(parseTrialJob).filter((job): job is TrialJob => job !== undefined) : [];
}

/** The report page for a webview: a Content-Security-Policy letting its inline styles and data images in, nothing
 * else (no script, no fetch). */
export function reportWebviewHtml(html: string): string {
  const policy =
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; img-src data:;">';
  const head = /<head[^>]*>/i;
  return head.test(html) ? html.replace(head, (tag) => `${tag}${policy}`) : `${policy}${html}`;
}

/** The job id a command's argument names (`{jobId}` from a lens or the Runs view), if any. */
function argumentJobId(argument: unknown): string | undefined {
  if (typeof argument === 'object' && argument !== null) {
    const id = (argument as { jobId?: unknown }).jobId;
    return typeof id === 'string' ? id : undefined;
  }
  return undefined;
}

export class TrialCommands implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  /** A trial of this window ended: the Runs view reads the jobs again. */
  readonly onDidChangeTrials: vscode.Event<void> = this.changed.event;
  private trialCount = 0;
  /** The report shown, reused for the next. */
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly client: () => Promise<ServerClient | undefined>,
    private readonly readFile: (path: string) => Promise<string> = (path) => fs.readFile(path, 'utf8'),
  ) {}

  register(): vscode.Disposable[] {
    return [
      vscode.commands.registerCommand(COMMAND_RUN_TRIALS, (argument?: unknown) => this.runTrials(argument)),
      vscode.commands.registerCommand(COMMAND_OPEN_TRIAL_REPORT, (argument?: unknown) => this.openReport(argument)),
    ];
  }

  /** "Workbench: Run Trials" on the manifest of the argument (a lens's `{uri}`) or of the active editor. */
  async runTrials(argument?: unknown): Promise<void> {
    const uri = this.manifestUri(argument, 'run its trial');
    if (uri === undefined) {
      return;
    }
    const client = await this.client();
    if (client === undefined) {
      return;
    }
    this.trialCount += 1;
    const workDoneToken = `wb-lsp-trial-${this.trialCount}`;
    const cancellation = new vscode.CancellationTokenSource();
    let answer: unknown;
    try {
      answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Workbench: trial', cancellable: true },
        async (progress, token) => {
          const listeners = [
            // Cancel is the trial's Ctrl-C: nothing new starts, the running attempts finish, then it answers.
            token.onCancellationRequested(() => client.cancelWorkDoneProgress(workDoneToken)),
            client.onWorkDoneProgress(workDoneToken, (value) => {
              if (value.message !== undefined) {
                progress.report({ message: value.message });
              }
            }),
          ];
          try {
            return await client.executeCommand(SERVER_COMMAND_TRIAL, [{ uri: uri.toString() }], {
              token: cancellation.token,
              workDoneToken,
            });
          } finally {
            for (const listener of listeners) {
              listener.dispose();
            }
          }
        },
      );
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: the trial failed: ${errorMessage(error)}`);
      return;
    } finally {
      cancellation.dispose();
      this.changed.fire();
    }
    const job = parseTrialJob((answer as { job?: unknown } | undefined)?.job);
    if (job === undefined) {
      return;
    }
    const exitCode = (answer as { exitCode?: unknown }).exitCode;
    const show = exitCode === 0 ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
    const items = job.reportHtml === null ? [] : [BUTTON_OPEN_REPORT];
    const picked = await show(`Workbench: ${job.summary}`, ...items);
    if (picked === BUTTON_OPEN_REPORT) {
      await this.openReport({ jobId: job.jobId });
    }
  }

  /**
   * "Workbench: Open Trial Report": the job of the argument (`{jobId}`), else the active manifest's package's
   * latest trial, in a webview.
   */
  async openReport(argument?: unknown): Promise<void> {
    const jobId = argumentJobId(argument);
    const request: Record<string, unknown> = { open: false };
    if (jobId !== undefined) {
      request.jobId = jobId;
    } else {
      const uri = this.manifestUri(argument, "open its latest trial's report");
      if (uri === undefined) {
        return;
      }
      request.uri = uri.toString();
    }
    const client = await this.client();
    if (client === undefined) {
      return;
    }
    let job: TrialJob | undefined;
    let html: string;
    try {
      job = parseTrialJob(await client.executeCommand(SERVER_COMMAND_OPEN_TRIAL_REPORT, [request]));
      if (job?.reportHtml === null || job === undefined) {
        throw new Error('the trial has no report yet');
      }
      html = await this.readFile(job.reportHtml);
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: cannot open the trial's report: ${errorMessage(error)}`);
      return;
    }
    const title = `Trial report · ${job.workbench}`;
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel(REPORT_VIEW_TYPE, title, vscode.ViewColumn.Active, {
        enableScripts: false,
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
      });
    } else {
      this.panel.title = title;
      this.panel.reveal();
    }
    this.panel.webview.html = reportWebviewHtml(html);
  }

  dispose(): void {
    this.panel?.dispose();
    this.changed.dispose();
  }

  private manifestUri(argument: unknown, action: string): vscode.Uri | undefined {
    const given = argumentUri(argument);
    const uri = given !== undefined ? vscode.Uri.parse(given) : vscode.window.activeTextEditor?.document.uri;
    if (uri === undefined || uri.scheme !== 'file' || !isManifestPath(uri.fsPath)) {
      void vscode.window.showWarningMessage(
        `Workbench: open a manifest (.workbenches/<name>/workbench.yml) to ${action}.`,
      );
      return undefined;
    }
    return uri;
  }
}
