/**
 * What a run asks the person (docs/runs.md#answering, docs/lsp-extensions.md): a `workbench/inputRequested` for a
 * run this window follows is asked with a notification (a permission's options as buttons) or quick picks (each
 * question's options, several where it allows them, and your own words where it allows them), and answered with
 * `workbench.answer`. A `workbench/inputResolved` (answered in a terminal or another window, refused after the
 * input timeout) withdraws it: a choice made after that is not sent. Dismissing leaves the request waiting; the
 * Runs view's Answer asks it again.
 */

import * as vscode from 'vscode';
import { SERVER_COMMAND_RUNS } from './constants';
import { parseRuns, runArgumentId } from './runs';

export interface QuestionOption {
  label: string;
  description?: string;
}

export interface Question {
  question: string;
  header?: string;
  options: QuestionOption[];
  multiple: boolean;
  custom: boolean;
}

/** A request as `run.json`'s `pending` and `workbench/inputRequested` carry it. */
export type InputRequest =
  | { id: string; kind: 'permission'; message: string; options: string[]; tool?: string }
  | { id: string; kind: 'question'; questions: Question[] }
  | { id: string; kind: 'authentication'; message: string };

export interface InputRequestedParams {
  runId: string;
  request: InputRequest;
  text: string;
}

export interface InputResolvedParams {
  runId: string;
  id: string;
  how: 'answered' | 'refused';
  answer?: string;
  reason?: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export function isInputRequest(value: unknown): value is InputRequest {
  return isObject(value) && typeof value.id === 'string' && typeof value.kind === 'string';
}

export function isInputRequestedParams(value: unknown): value is InputRequestedParams {
  return isObject(value) && typeof value.runId === 'string' && isInputRequest(value.request);
}

export function isInputResolvedParams(value: unknown): value is InputResolvedParams {
  return isObject(value) && typeof value.runId === 'string' && typeof value.id === 'string';
}

/** `kind · id: details`, as `wb-lsp wait` prints a request (for one read from a record). */
export function requestText(request: InputRequest): string {
  switch (request.kind) {
    case 'permission':
      return `permission · ${request.id}: ${request.message} (${request.options.join(', ')})`;
    case 'question':
      return `question · ${request.id}: ${request.questions.map((q) => q.question).join('; ')}`;
    case 'authentication':
      return `authentication · ${request.id}: ${request.message}`;
  }
}

/** The buttons of a permission's choices. */
const CHOICE_LABELS: Record<string, string> = { allow: 'Allow', deny: 'Deny', allow_always: 'Allow Always' };
export const OWN_WORDS = '$(edit) Your own words…';

/** The answer, as `workbench.answer` takes it, to a question request: `undefined` when a pick was dismissed. */
export async function askQuestions(questions: readonly Question[]): Promise<string | undefined> {
  const answers: string[][] = [];
  for (const question of questions) {
    const items: vscode.QuickPickItem[] = question.options.map((option) => ({
      label: option.label,
      description: option.description,
    }));
    if (question.custom || items.length === 0) {
      items.push({ label: OWN_WORDS });
    }
    const options = { title: question.header ?? 'Workbench', placeHolder: question.question, ignoreFocusOut: true };
    const picked = question.multiple
      ? await vscode.window.showQuickPick(items, { ...options, canPickMany: true })
      : await vscode.window.showQuickPick(items, options);
    const chosen = picked === undefined ? [] : Array.isArray(picked) ? picked : [picked];
    if (chosen.length === 0) {
      return undefined;
    }
    const labels: string[] = [];
    for (const item of chosen) {
      if (item.label !== OWN_WORDS) {
        labels.push(item.label);
        continue;
      }
      const own = await vscode.window.showInputBox({ prompt: question.question, ignoreFocusOut: true });
      if (own === undefined || own.trim() === '') {
        return undefined;
      }
      labels.push(own);
    }
    answers.push(labels);
  }
  const [first] = answers;
  if (answers.length === 1 && first?.length === 1 && first[0] !== undefined) {
    return first[0];
  }
  return JSON.stringify(answers);
}

/** Asks the requests of the runs this window follows, and sends the answers. */
export class InputAsker {
  /** The requests asked and not yet resolved: request id to run id. */
  private readonly pending = new Map<string, string>();

  constructor(private readonly answer: (runId: string, requestId: string, answer: string) => Promise<unknown>) {}

  /** The ids of the requests this window asks and that are not resolved yet. */
  get waiting(): string[] {
    return [...this.pending.keys()];
  }

  /** Asks `params.request`; sends the answer unless it was resolved meanwhile. Dismissing leaves it waiting. */
  async requested(params: InputRequestedParams): Promise<void> {
    const { runId, request } = params;
    this.pending.set(request.id, runId);
    let answer: string | undefined;
    if (request.kind === 'permission') {
      const buttons = request.options.map((option) => CHOICE_LABELS[option] ?? option);
      const picked = await vscode.window.showInformationMessage(`Workbench asks: ${params.text}`, ...buttons);
      answer = picked === undefined ? undefined : request.options[buttons.indexOf(picked)];
    } else if (request.kind === 'question') {
      answer = await askQuestions(request.questions);
    } else {
      void vscode.window.showWarningMessage(`Workbench: ${params.text} (a sign-in only the runner can do)`);
    }
    if (answer === undefined) {
      return;
    }
    if (!this.pending.has(request.id)) {
      void vscode.window.showInformationMessage(`Workbench: request ${request.id} was already answered.`);
      return;
    }
    try {
      await this.answer(runId, request.id, answer);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      void vscode.window.showErrorMessage(`Workbench: cannot answer ${request.id}: ${message}`);
    }
  }

  /** The request is no longer asked (answered here or elsewhere, or refused). */
  resolved(params: InputResolvedParams): void {
    this.pending.delete(params.id);
  }
}

/** What `answerRun` needs of the language client. */
interface Executor {
  executeCommand(command: string, args: unknown[]): Promise<unknown>;
}

/**
 * Answer (the Runs view's action on a run that needs input): asks each request the run's record lists as
 * pending, as a notification would have.
 */
export async function answerRun(
  argument: unknown,
  client: () => Promise<Executor | undefined>,
  asker: InputAsker,
): Promise<void> {
  const server = await client();
  if (server === undefined) {
    return;
  }
  const records = parseRuns(await server.executeCommand(SERVER_COMMAND_RUNS, [{ all: false }]));
  // From the command palette: which of the runs that wait for an answer.
  let runId = runArgumentId(argument);
  if (runId === undefined) {
    const waiting = records.filter((record) => record.state === 'needs_input');
    if (waiting.length === 0) {
      void vscode.window.showInformationMessage('Workbench: no run waits for an answer.');
      return;
    }
    const picked = await vscode.window.showQuickPick(
      waiting.map((record) => ({ label: record.run_id, description: record.workbench })),
      { title: 'Workbench: Answer What the Run Asks', placeHolder: 'The run' },
    );
    runId = picked?.label;
  }
  const record = records.find((candidate) => candidate.run_id === runId);
  if (runId === undefined) {
    return;
  }
  const pending = (record?.pending ?? []).filter(isInputRequest);
  if (pending.length === 0) {
    void vscode.window.showInformationMessage(`Workbench: run ${runId} waits for no answer.`);
    return;
  }
  for (const request of pending) {
    await asker.requested({ runId, request, text: requestText(request) });
  }
}
