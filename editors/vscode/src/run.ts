/**
 * The execution commands' data, as plain functions (no `vscode` here): the arguments of `workbench.dryRun`,
 * `workbench.smoke` and `workbench.run`, reading the lines the server renders for each run event and smoke
 * report, the message of smoke reports and of the run's ending, and the runtimes a manifest declares. The
 * protocol is described in docs/lsp-extensions.md.
 */

/** The argument object of the server's execution commands. */
export interface ExecutionArguments {
  uri: string;
  task?: string;
  runtime?: string;
  workspaces?: string[];
  env?: string[];
  envFiles?: string[];
  dir?: string;
  allowHostDocker?: boolean;
  allowUncheckedGpu?: boolean;
}

/** What the user chose for one command. */
export interface ExecutionChoice {
  task?: string;
  runtime?: string;
}

/** The single argument sent with `workbench.dryRun`, `workbench.smoke` or `workbench.run`. */
export function executionArguments(uri: string, choice: ExecutionChoice = {}): ExecutionArguments {
  const argument: ExecutionArguments = { uri };
  const task = choice.task?.trim();
  if (task !== undefined && task.length > 0) {
    argument.task = choice.task;
  }
  if (choice.runtime !== undefined && choice.runtime.length > 0) {
    argument.runtime = choice.runtime;
  }
  return argument;
}

/** The manifest URI a command was invoked with: a code lens's `{uri}`, a URI string, or a `vscode.Uri`. */
export function argumentUri(argument: unknown): string | undefined {
  if (typeof argument === 'string') {
    return argument;
  }
  if (typeof argument === 'object' && argument !== null) {
    const uri = (argument as { uri?: unknown }).uri;
    if (typeof uri === 'string') {
      return uri;
    }
    // A vscode.Uri (explorer or editor context menus): has a scheme and a toString giving the URI.
    if (typeof (argument as { scheme?: unknown }).scheme === 'string') {
      return String(argument);
    }
  }
  return undefined;
}

/** One canonical event (protocol 0), as the `event` of a `workbench/runEvent` notification. */
export interface RunEvent {
  protocol: number;
  run_id: string;
  sequence: number;
  timestamp: string;
  type: string;
  runner: string;
  data: Record<string, unknown>;
}

/** `workbench/runEvent`'s parameters: the event and the server's lines for it (none for `runner.event`). */
export interface RunEventParams {
  event: RunEvent;
  text?: unknown;
}

/** The strings of a server `text` field (a list of lines; anything else gives none). */
export function textLines(text: unknown): string[] {
  return Array.isArray(text) ? text.filter((line): line is string => typeof line === 'string') : [];
}

export function isRunEventParams(value: unknown): value is RunEventParams {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const event = (value as { event?: unknown }).event;
  return (
    typeof event === 'object' &&
    event !== null &&
    typeof (event as { type?: unknown }).type === 'string' &&
    typeof (event as { run_id?: unknown }).run_id === 'string'
  );
}

const TERMINAL_TYPES = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** True for the event that ends a run (exactly one per run). */
export function isTerminalEvent(event: RunEvent): boolean {
  return TERMINAL_TYPES.has(event.type);
}

/** The result of `workbench.run`. */
export interface RunResult {
  runId: string;
  ending: { status: 'completed' | 'failed' | 'cancelled'; message?: string };
  finalText: string;
  /** The outcome the run committed (`workbench.outcome` inspects it), when it committed one. */
  outcomeId?: string | null;
}

export function isRunResult(value: unknown): value is RunResult {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const ending = (value as { ending?: unknown }).ending;
  return (
    typeof (value as { runId?: unknown }).runId === 'string' &&
    typeof ending === 'object' &&
    ending !== null &&
    ['completed', 'failed', 'cancelled'].includes(String((ending as { status?: unknown }).status))
  );
}

/** JSON-RPC's RequestCancelled: the answer to `$/cancelRequest`. */
export const REQUEST_CANCELLED = -32800;

export function isRequestCancelled(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === REQUEST_CANCELLED;
}

/** How a run ended, as the extension shows it. */
export interface RunOutcome {
  level: 'information' | 'warning' | 'error';
  message: string;
}

/**
 * The message for a run's ending: its result, or the error the request failed with (`started`: the run had
 * sent events, so the error interrupted it rather than refused it).
 */
/** The answer of `workbench.send` (and of `workbench.run` with `session`): how one turn of a session ended. */
export interface TurnResult {
  runId: string;
  turnIndex: number | null;
  /** `completed`, `failed`, `cancelled`, or `ended` (the session ended before it took the turn). */
  status: string;
  finalText: string;
  /** The turn's snapshot outcome, when its outbox changed. */
  snapshotId?: string | null;
}

export function isTurnResult(value: unknown): value is TurnResult {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const result = value as { runId?: unknown; status?: unknown; turnIndex?: unknown };
  return (
    typeof result.runId === 'string' &&
    typeof result.status === 'string' &&
    (typeof result.turnIndex === 'number' || result.turnIndex === null)
  );
}

/** What to tell of a turn's answer. */
export function turnOutcome(result: TurnResult): RunOutcome {
  switch (result.status) {
    case 'completed':
      return { level: 'information', message: `Workbench: turn ${result.turnIndex} of session ${result.runId} completed.` };
    case 'ended':
      return { level: 'warning', message: `Workbench: session ${result.runId} ended before it took the turn.` };
    case 'cancelled':
      return { level: 'warning', message: `Workbench: turn ${result.turnIndex} was cancelled; the session ended.` };
    default:
      return { level: 'error', message: `Workbench: turn ${result.turnIndex} failed; the session ended.` };
  }
}

export function runOutcome(result: unknown, error?: unknown, started = false): RunOutcome {
  if (error !== undefined) {
    if (isRequestCancelled(error)) {
      return { level: 'warning', message: 'Workbench: the run was cancelled.' };
    }
    const what = started ? 'the run stopped' : 'the run could not start';
    return { level: 'error', message: `Workbench: ${what}: ${errorMessage(error)}` };
  }
  if (!isRunResult(result)) {
    return { level: 'error', message: 'Workbench: the server answered the run with something unexpected.' };
  }
  switch (result.ending.status) {
    case 'completed':
      return { level: 'information', message: 'Workbench: the run completed.' };
    case 'cancelled':
      return { level: 'warning', message: 'Workbench: the run was cancelled.' };
    case 'failed':
      return {
        level: 'error',
        message: `Workbench: the run failed${result.ending.message === undefined ? '.' : `: ${result.ending.message}`}`,
      };
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  if (typeof error === 'object' && error !== null && 'message' in error) {
    return String((error as { message: unknown }).message);
  }
  return String(error);
}

/** One entry of `workbench.smoke`'s answer, with the server's lines for it. */
export interface SmokeReport {
  status: 'ready' | 'needs-auth' | 'failed';
  workbench: string;
  text?: unknown;
}

function isSmokeReport(value: unknown): value is SmokeReport {
  return typeof value === 'object' && value !== null && typeof (value as { status?: unknown }).status === 'string';
}

function smokeReports(reports: unknown): SmokeReport[] {
  return Array.isArray(reports) ? reports.filter(isSmokeReport) : [];
}

/** The lines written to the run output channel for smoke reports: the server's text of each. */
export function smokeLines(reports: unknown): string[] {
  const list = smokeReports(reports);
  return list.length === 0 ? ['Smoke: the server reported no package.'] : list.flatMap((r) => textLines(r.text));
}

const SMOKE_SEVERITY = ['ready', 'needs-auth', 'failed'];
const SMOKE_LEVELS: Record<string, RunOutcome['level']> = { ready: 'information', 'needs-auth': 'warning' };

/** The message shown for smoke reports: the first line of the worst report; its status decides the level. */
export function smokeOutcome(reports: unknown): RunOutcome {
  const severity = (report: SmokeReport) => {
    const index = SMOKE_SEVERITY.indexOf(report.status);
    return index < 0 ? SMOKE_SEVERITY.length : index;
  };
  const worst = smokeReports(reports).reduce<SmokeReport | undefined>(
    (found, report) => (found === undefined || severity(report) > severity(found) ? report : found),
    undefined,
  );
  if (worst === undefined) {
    return { level: 'warning', message: 'Workbench: smoke found no package to check.' };
  }
  const title = textLines(worst.text)[0] ?? `${worst.workbench}: ${worst.status}`;
  const stop = /[.!?]$/.test(title) ? '' : '.';
  return { level: SMOKE_LEVELS[worst.status] ?? 'error', message: `Workbench: ${title}${stop}` };
}

/**
 * The runtimes a manifest declares under `runtimes:` (spec 1), in order, read from its text without a YAML
 * parser: block mappings (`runtimes:` then indented keys) and flow mappings (`runtimes: {local: {}, docker:
 * {}}`). Anything it cannot read gives an empty list, and then no runtime is asked for (the server picks the
 * manifest's default).
 */
export function declaredRuntimes(manifest: string): string[] {
  const lines = manifest.split(/\r?\n/);
  const start = lines.findIndex((line) => /^runtimes\s*:/.test(line));
  if (start < 0) {
    return [];
  }
  const header = lines[start] ?? '';
  const rest = header
    .replace(/^runtimes\s*:/, '')
    .replace(/\s+#.*$/, '')
    .trim();
  if (rest.startsWith('{')) {
    return flowKeys(rest);
  }
  if (rest.length > 0) {
    return [];
  }
  const names: string[] = [];
  let indent: number | undefined;
  for (const line of lines.slice(start + 1)) {
    if (/^\s*(#.*)?$/.test(line)) {
      continue;
    }
    const leading = /^(\s*)/.exec(line)?.[1]?.length ?? 0;
    if (leading === 0) {
      break;
    }
    indent ??= leading;
    if (leading !== indent) {
      continue;
    }
    const key = /^\s*(["']?)([A-Za-z0-9_.-]+)\1\s*:/.exec(line);
    if (key?.[2] !== undefined) {
      names.push(key[2]);
    }
  }
  return names;
}

/** The top-level keys of a one-line flow mapping. */
function flowKeys(flow: string): string[] {
  const names: string[] = [];
  let depth = 0;
  let token = '';
  let expectKey = true;
  for (const character of flow) {
    if (character === '{' || character === '[') {
      depth += 1;
      if (depth === 1) {
        token = '';
        expectKey = true;
      }
      continue;
    }
    if (character === '}' || character === ']') {
      depth -= 1;
      continue;
    }
    if (depth !== 1) {
      continue;
    }
    if (character === ':' && expectKey) {
      const key = token.trim().replace(/^["']|["']$/g, '');
      if (key.length > 0) {
        names.push(key);
      }
      expectKey = false;
      token = '';
    } else if (character === ',') {
      expectKey = true;
      token = '';
    } else if (expectKey) {
      token += character;
    }
  }
  return names;
}
