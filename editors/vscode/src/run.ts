/**
 * The execution commands' data, as plain functions (no `vscode` here): the arguments of `workbench.dryRun`,
 * `workbench.smoke` and `workbench.run`, the lines written for each canonical run event (protocol 0), the
 * summary of smoke reports, the run's ending, and the runtimes a manifest declares. The protocol is described
 * in docs/lsp-extensions.md.
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

/** `workbench/runEvent`'s parameters. */
export interface RunEventParams {
  event: RunEvent;
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

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** `1234` ms as `1.2 s`, under a second as `850 ms`. */
export function formatDuration(milliseconds: unknown): string | undefined {
  const ms = count(milliseconds);
  if (ms === undefined) {
    return undefined;
  }
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function took(data: Record<string, unknown>): string {
  const duration = formatDuration(data.duration_ms);
  return duration === undefined ? '' : ` in ${duration}`;
}

function toolLabel(data: Record<string, unknown>): string {
  const name = text(data.name) ?? 'tool';
  const detail = text(data.title) ?? text(data.target);
  return detail === undefined ? name : `${name} (${detail})`;
}

const TERMINAL_TYPES = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** True for the event that ends a run (exactly one per run). */
export function isTerminalEvent(event: RunEvent): boolean {
  return TERMINAL_TYPES.has(event.type);
}

/**
 * The human-readable lines for one event: the text the model wrote, tools started and completed, files
 * changed, usage and the final status. Events without meaning for a reader (`runner.event`) give no line.
 */
export function formatRunEvent(event: RunEvent): string[] {
  const data = typeof event.data === 'object' && event.data !== null ? event.data : {};
  switch (event.type) {
    case 'run.started': {
      const what = [text(data.workbench), text(data.version)].filter((part) => part !== undefined).join(' ');
      const runtime = text(data.runtime);
      const on = runtime === undefined ? '' : ` on ${runtime}`;
      return [`▶ Run ${event.run_id} started: ${what.length > 0 ? what : 'Workbench'}${on} (${event.runner})`];
    }
    case 'run.ready':
      return ['  the runner is ready'];
    case 'output.text': {
      const written = typeof data.text === 'string' ? data.text : '';
      return written.length === 0 ? [] : written.split(/\r?\n/);
    }
    case 'tool.started':
      return [`⚙ ${toolLabel(data)} started`];
    case 'tool.completed': {
      if (data.status === 'failed') {
        const message = text(data.message);
        return [`✗ ${toolLabel(data)} failed${message === undefined ? '' : `: ${message}`}`];
      }
      return [`✓ ${toolLabel(data)} completed`];
    }
    case 'file.changed': {
      const tool = text(data.tool);
      return [`✎ ${text(data.path) ?? 'a file'} changed${tool === undefined ? '' : ` (${tool})`}`];
    }
    case 'usage.updated':
      return [`  usage: ${formatUsage(data)}`];
    case 'outcome.available': {
      const count = (value: unknown, word: string): string => {
        const n = typeof value === 'number' ? value : 0;
        return `${n} ${word}${n === 1 ? '' : 's'}`;
      };
      const id = text(data.outcome_id) ?? '?';
      return [
        `  outcome ${id} (${count(data.changesets, 'changeset')}, ${count(data.artifacts, 'artifact')}, ${count(data.links, 'link')})`,
      ];
    }
    case 'outcome.failed': {
      const message = text(data.message);
      return [`  outcome failed${message === undefined ? '' : `: ${message}`}`];
    }
    case 'run.completed':
      return [`■ Run completed${took(data)}`];
    case 'run.failed': {
      const message = text(data.message);
      return [`■ Run failed${took(data)}${message === undefined ? '' : `: ${message}`}`];
    }
    case 'run.cancelled':
      return [`■ Run cancelled${took(data)}`];
    case 'runner.event':
      return [];
    default:
      return [`  ${event.type} ${JSON.stringify(data)}`];
  }
}

/** `3 input, 1 output tokens, $0.0012` from a `usage.updated` event's data. */
export function formatUsage(data: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, label] of [
    ['input_tokens', 'input'],
    ['output_tokens', 'output'],
    ['reasoning_tokens', 'reasoning'],
    ['cache_read_tokens', 'cache read'],
    ['cache_write_tokens', 'cache write'],
  ] as const) {
    const value = count(data[key]);
    if (value !== undefined) {
      parts.push(`${value} ${label}`);
    }
  }
  let line = parts.length === 0 ? 'updated' : `${parts.join(', ')} tokens`;
  const cost = count(data.cost_usd);
  if (cost !== undefined) {
    line += `, $${cost.toFixed(4)}`;
  }
  return line;
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

/** One entry of `workbench.smoke`'s answer. */
export interface SmokeReport {
  status: 'ready' | 'needs-auth' | 'failed';
  workbench: string;
  version: string;
  runtime: string;
  runner?: { name?: string; path?: string | null };
  tools?: Array<{ name?: string; path?: string }>;
  authentication?: { ready?: boolean; model?: string; route?: string | null; variable?: string | null };
  warnings?: string[];
  error?: { code?: string; message?: string };
}

function isSmokeReport(value: unknown): value is SmokeReport {
  return typeof value === 'object' && value !== null && typeof (value as { status?: unknown }).status === 'string';
}

/** The lines written to the run output channel for smoke reports. */
export function formatSmokeReports(reports: unknown): string[] {
  const list = Array.isArray(reports) ? reports.filter(isSmokeReport) : [];
  if (list.length === 0) {
    return ['Smoke: the server reported no package.'];
  }
  const lines: string[] = [];
  for (const report of list) {
    const name = [report.workbench, report.version].filter((part) => part.length > 0).join(' ') || 'Workbench';
    lines.push(`Smoke ${name}${report.runtime.length > 0 ? ` on ${report.runtime}` : ''}: ${report.status}`);
    if (report.runner?.name !== undefined) {
      lines.push(`  runner: ${report.runner.name}${report.runner.path ? ` (${report.runner.path})` : ''}`);
    }
    for (const tool of report.tools ?? []) {
      lines.push(`  tool: ${tool.name ?? '?'}${tool.path ? ` (${tool.path})` : ''}`);
    }
    const auth = report.authentication;
    if (auth !== undefined) {
      const how = auth.variable ? ` with ${auth.variable}` : '';
      const via = auth.route ? ` via ${auth.route}` : '';
      lines.push(`  model: ${auth.model ?? '?'}${via}${auth.ready ? how : ' (not authenticated)'}`);
    }
    for (const warning of report.warnings ?? []) {
      lines.push(`  warning: ${warning}`);
    }
    if (report.error?.message !== undefined) {
      lines.push(`  error: ${report.error.message}`);
    }
  }
  return lines;
}

/** The message shown for smoke reports: the worst status decides its level. */
export function smokeOutcome(reports: unknown): RunOutcome {
  const list = Array.isArray(reports) ? reports.filter(isSmokeReport) : [];
  const first = list[0];
  if (first === undefined) {
    return { level: 'warning', message: 'Workbench: smoke found no package to check.' };
  }
  const name = (report: SmokeReport) => report.workbench || 'the package';
  const failed = list.find((report) => report.status === 'failed');
  if (failed !== undefined) {
    return {
      level: 'error',
      message: `Workbench: smoke failed for ${name(failed)}${
        failed.error?.message ? `: ${failed.error.message}` : '.'
      }`,
    };
  }
  const needsAuth = list.find((report) => report.status === 'needs-auth');
  if (needsAuth !== undefined) {
    const instruction = needsAuth.warnings?.at(-1);
    return {
      level: 'warning',
      message: `Workbench: ${name(needsAuth)} needs authentication${instruction ? `: ${instruction}` : '.'}`,
    };
  }
  return {
    level: 'information',
    message:
      list.length === 1
        ? `Workbench: ${name(first)} is ready to run on ${first.runtime || 'its runtime'}.`
        : `Workbench: ${list.length} packages are ready to run.`,
  };
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
