/**
 * The runs under the Workbench home, as `workbench.runs` answers them (docs/lsp-extensions.md, docs/runs.md), as
 * plain functions (no `vscode` here): reading the records, and what the Runs view and the cost status bar item
 * show of them (state, elapsed time, cost or "cost unknown").
 */

/**
 * A run's state: `needs_input` while it waits for the person's answer; `idle` for a session waiting for its next
 * turn; `lost` when its supervisor ended before the run did.
 */
export type RunState = 'running' | 'needs_input' | 'idle' | 'completed' | 'failed' | 'cancelled' | 'lost';

/** One record of `workbench.runs`: run.json's fields plus `state`. */
export interface RunRecord {
  run_id: string;
  workbench: string;
  version?: string;
  runtime?: string;
  runner?: string;
  started_at?: string;
  ended_at?: string | null;
  status?: string;
  outcome_id?: string | null;
  /** The costs the runner reported, summed; null or absent: unknown (never 0 for "unknown"). */
  cost_usd?: number | null;
  /** What the run is doing (`thinking`, `writing`, a tool title, a file edited). */
  activity?: string | null;
  /** Why a run failed or stopped. */
  message?: string | null;
  last_sequence?: number;
  /** A session (`run --session`): it takes more turns (docs/sessions.md). */
  session?: boolean;
  /** The turns a session has started. */
  turns?: number;
  /** What the run asked that waits for an answer (docs/runs.md#answering). */
  pending?: unknown[];
  state: RunState;
}

const STATES: readonly string[] = ['running', 'needs_input', 'idle', 'completed', 'failed', 'cancelled', 'lost'];

/** Running (or waiting for an answer) or idle: the run has not ended and its supervisor lives. */
export function isLive(record: RunRecord): boolean {
  return record.state === 'running' || record.state === 'needs_input' || record.state === 'idle';
}

export function isRunId(value: unknown): value is string {
  return typeof value === 'string' && /^wb_[0-9a-f]{24}$/.test(value);
}

function isRunRecord(value: unknown): value is RunRecord {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const record = value as { run_id?: unknown; workbench?: unknown; state?: unknown };
  return isRunId(record.run_id) && typeof record.workbench === 'string' && STATES.includes(String(record.state));
}

/** The records of a `workbench.runs` answer (anything else in it is left out). */
export function parseRuns(answer: unknown): RunRecord[] {
  return Array.isArray(answer) ? answer.filter(isRunRecord) : [];
}

/** The run id a command was given: the id itself, a Runs view item (a record, `{run_id}`) or `{runId}`. */
export function runArgumentId(argument: unknown): string | undefined {
  if (isRunId(argument)) {
    return argument;
  }
  if (typeof argument === 'object' && argument !== null) {
    const { runId, run_id: id } = argument as { runId?: unknown; run_id?: unknown };
    if (isRunId(runId)) {
      return runId;
    }
    if (isRunId(id)) {
      return id;
    }
  }
  return undefined;
}

/** `12s`, `3m 05s`, `1h 02m`: as `wb-lsp status` counts. */
export function formatElapsed(milliseconds: number): string {
  const seconds = Math.max(0, Math.floor(milliseconds / 1000));
  if (seconds < 60) {
    return `${seconds}s`;
  }
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) {
    return `${minutes}m ${String(seconds % 60).padStart(2, '0')}s`;
  }
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}

/** How long the run went on (until now while it runs); undefined without a readable start. */
export function runElapsed(record: RunRecord, now: number): number | undefined {
  const start = record.started_at === undefined ? NaN : Date.parse(record.started_at);
  if (Number.isNaN(start)) {
    return undefined;
  }
  const end = isLive(record) || typeof record.ended_at !== 'string' ? now : Date.parse(record.ended_at);
  return Number.isNaN(end) ? undefined : end - start;
}

/** `$0.2500` (as `wb-lsp status` prints it), or `cost unknown` when the runner reported none. */
export function formatCost(cost: number | null | undefined): string {
  return typeof cost === 'number' && Number.isFinite(cost) ? `$${cost.toFixed(4)}` : 'cost unknown';
}

/** The Runs view's line for a run after its package name: `running · 1m 05s · $0.2500 · writing`. */
export function runDescription(record: RunRecord, now: number): string {
  const parts: string[] = [record.state];
  const elapsed = runElapsed(record, now);
  if (elapsed !== undefined) {
    parts.push(formatElapsed(elapsed));
  }
  parts.push(formatCost(record.cost_usd));
  if (record.state === 'running' && typeof record.activity === 'string' && record.activity.length > 0) {
    parts.push(record.activity);
  }
  if (record.session === true) {
    const turns = record.turns ?? 0;
    parts.push(`session, ${turns} turn${turns === 1 ? '' : 's'}`);
  }
  return parts.join(' · ');
}

/** The hover of a run: its id, package, runtime, runner, times, cost, outcome and message, one per line. */
export function runTooltip(record: RunRecord, now: number): string {
  const version = record.version === undefined ? '' : ` ${record.version}`;
  const on = record.runtime === undefined ? '' : ` on ${record.runtime}`;
  const runner = record.runner === undefined ? '' : ` (${record.runner})`;
  const lines = [`Run ${record.run_id}: ${record.workbench}${version}${on}${runner}`, `State: ${record.state}`];
  if (record.started_at !== undefined) {
    lines.push(`Started: ${record.started_at}`);
  }
  if (typeof record.ended_at === 'string') {
    lines.push(`Ended: ${record.ended_at}`);
  }
  const elapsed = runElapsed(record, now);
  if (elapsed !== undefined) {
    lines.push(`Elapsed: ${formatElapsed(elapsed)}`);
  }
  lines.push(`Cost: ${formatCost(record.cost_usd)}`);
  if (typeof record.activity === 'string' && record.activity.length > 0 && record.state === 'running') {
    lines.push(`Activity: ${record.activity}`);
  }
  if (typeof record.outcome_id === 'string') {
    lines.push(`Outcome: ${record.outcome_id}`);
  }
  if (typeof record.message === 'string' && record.message.length > 0) {
    lines.push(`Message: ${record.message}`);
  }
  return lines.join('\n');
}

/** The codicon of a state in the Runs view. */
export function runIcon(state: RunState): string {
  switch (state) {
    case 'running':
      return 'sync~spin';
    case 'needs_input':
      return 'bell-dot';
    case 'idle':
      return 'comment-discussion';
    case 'completed':
      return 'pass';
    case 'failed':
      return 'error';
    case 'cancelled':
      return 'circle-slash';
    case 'lost':
      return 'question';
  }
}

/**
 * The Runs view item's `contextValue`, which the menus' `when` clauses match: `workbenchRun`, then `running`
 * (Kill: also an idle session), `idle` (Send Turn), `needsInput` (Answer), `attachable` (not lost: Attach) and
 * `outcome` (Open Outcome) when they apply.
 */
export function runContextValue(record: RunRecord): string {
  const flags = ['workbenchRun'];
  if (isLive(record)) {
    flags.push('running');
  }
  if (record.state === 'idle') {
    flags.push('idle');
  }
  if (record.state === 'needs_input') {
    flags.push('needsInput');
  }
  if (record.state !== 'lost') {
    flags.push('attachable');
  }
  if (typeof record.outcome_id === 'string' && record.outcome_id.length > 0) {
    flags.push('outcome');
  }
  return flags.join(' ');
}

/** What the cost status bar item shows: undefined (hidden) when no run is running. */
export interface CostPresentation {
  text: string;
  tooltip: string;
}

/**
 * The cost status bar item: the total cost of the running runs, `$(pulse) Workbench: 2 running, $0.5000`;
 * runs whose runner reports no cost are counted apart (`$0.2500 + 1 cost unknown`), never as 0.
 */
export function presentRunningCost(records: readonly RunRecord[], now: number): CostPresentation | undefined {
  const running = records.filter((record) => record.state === 'running');
  if (running.length === 0) {
    return undefined;
  }
  const known = running.filter((record) => typeof record.cost_usd === 'number' && Number.isFinite(record.cost_usd));
  const unknown = running.length - known.length;
  const total = known.reduce((sum, record) => sum + (record.cost_usd as number), 0);
  let cost: string;
  if (known.length === 0) {
    cost = 'cost unknown';
  } else if (unknown === 0) {
    cost = formatCost(total);
  } else {
    cost = `${formatCost(total)} + ${unknown} cost unknown`;
  }
  const tooltip = [
    `Workbench runs running: ${running.length}, cost so far ${cost}`,
    ...running.map((record) => {
      const elapsed = runElapsed(record, now);
      return `${record.workbench} (${record.run_id}): ${elapsed === undefined ? '' : `${formatElapsed(elapsed)}, `}${formatCost(record.cost_usd)}`;
    }),
    'Click for the Workbench Runs view.',
  ].join('\n');
  return { text: `$(pulse) Workbench: ${running.length} running, ${cost}`, tooltip };
}
