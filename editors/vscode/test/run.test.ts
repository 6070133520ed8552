import './register';
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import {
  argumentUri,
  declaredRuntimes,
  executionArguments,
  formatDuration,
  formatRunEvent,
  formatSmokeReports,
  isRunEventParams,
  isTerminalEvent,
  runOutcome,
  smokeOutcome,
  type RunEvent,
} from '../src/run';
import { Uri } from './vscode-stub';

function event(type: string, data: Record<string, unknown> = {}, sequence = 1): RunEvent {
  return {
    protocol: 0,
    run_id: 'wb_0123456789abcdef01234567',
    sequence,
    timestamp: '2026-11-30T07:12:20.671Z',
    type,
    runner: 'opencode',
    data,
  };
}

test('the execution arguments: the URI, a non-empty task and the chosen runtime', () => {
  const uri = 'file:///work/repo/.workbenches/demo/workbench.yml';
  assert.deepEqual(executionArguments(uri), { uri });
  assert.deepEqual(executionArguments(uri, { task: 'say done' }), { uri, task: 'say done' });
  assert.deepEqual(executionArguments(uri, { task: '   ', runtime: '' }), { uri });
  assert.deepEqual(executionArguments(uri, { task: ' keep spaces ', runtime: 'docker' }), {
    uri,
    task: ' keep spaces ',
    runtime: 'docker',
  });
});

test('a command argument gives the manifest URI: a lens {uri}, a string, a Uri, or nothing', () => {
  const uri = 'file:///work/repo/.workbenches/demo/workbench.yml';
  assert.equal(argumentUri({ uri }), uri);
  assert.equal(argumentUri(uri), uri);
  assert.equal(argumentUri(Uri.file('/work/repo/.workbenches/demo/workbench.yml')), uri);
  assert.equal(argumentUri(undefined), undefined);
  assert.equal(argumentUri({ uri: 3 }), undefined);
  assert.equal(argumentUri(42), undefined);
});

test('each event type becomes readable lines', () => {
  assert.deepEqual(formatRunEvent(event('run.started', { workbench: 'demo', version: '0.1.0', runtime: 'local' })), [
    '▶ Run wb_0123456789abcdef01234567 started: demo 0.1.0 on local (opencode)',
  ]);
  assert.deepEqual(formatRunEvent(event('run.ready')), ['  the runner is ready']);
  assert.deepEqual(
    formatRunEvent(event('outcome.available', { outcome_id: 'wbo_abc', changesets: 1, artifacts: 2, links: 0 })),
    ['  outcome wbo_abc (1 changeset, 2 artifacts, 0 links)'],
  );
  assert.deepEqual(formatRunEvent(event('outcome.failed', { message: 'Declared artifact file does not exist: x' })), [
    '  outcome failed: Declared artifact file does not exist: x',
  ]);
  assert.deepEqual(formatRunEvent(event('output.text', { text: 'first\nsecond', id: 't' })), ['first', 'second']);
  assert.deepEqual(formatRunEvent(event('output.text', { text: '' })), []);
  assert.deepEqual(formatRunEvent(event('tool.started', { id: 'c1', name: 'bash', title: 'ls -la' })), [
    '⚙ bash (ls -la) started',
  ]);
  assert.deepEqual(formatRunEvent(event('tool.started', { id: 'c2', name: 'write', target: 'src/a.ts' })), [
    '⚙ write (src/a.ts) started',
  ]);
  assert.deepEqual(formatRunEvent(event('tool.completed', { id: 'c1', name: 'bash', status: 'completed' })), [
    '✓ bash completed',
  ]);
  assert.deepEqual(
    formatRunEvent(event('tool.completed', { id: 'c1', name: 'bash', status: 'failed', message: 'exit 2' })),
    ['✗ bash failed: exit 2'],
  );
  assert.deepEqual(formatRunEvent(event('file.changed', { path: 'src/a.ts', tool: 'write' })), [
    '✎ src/a.ts changed (write)',
  ]);
  assert.deepEqual(
    formatRunEvent(event('usage.updated', { kind: 'delta', input_tokens: 3, output_tokens: 1, cost_usd: 0.00125 })),
    ['  usage: 3 input, 1 output tokens, $0.0013'],
  );
  assert.deepEqual(formatRunEvent(event('usage.updated', { kind: 'delta' })), ['  usage: updated']);
  assert.deepEqual(formatRunEvent(event('run.completed', { duration_ms: 1234 })), ['■ Run completed in 1.2 s']);
  assert.deepEqual(
    formatRunEvent(event('run.failed', { message: 'The runner exited with status 1', duration_ms: 5 })),
    ['■ Run failed in 5 ms: The runner exited with status 1'],
  );
  assert.deepEqual(formatRunEvent(event('run.cancelled', {})), ['■ Run cancelled']);
  assert.deepEqual(formatRunEvent(event('runner.event', { native_type: 'step_start' })), []);
  assert.deepEqual(formatRunEvent(event('something.new', { a: 1 })), ['  something.new {"a":1}']);
});

test('terminal events, durations and the notification check', () => {
  assert.ok(isTerminalEvent(event('run.completed')));
  assert.ok(isTerminalEvent(event('run.failed')));
  assert.ok(isTerminalEvent(event('run.cancelled')));
  assert.ok(!isTerminalEvent(event('output.text')));
  assert.equal(formatDuration(999), '999 ms');
  assert.equal(formatDuration(61_000), '61.0 s');
  assert.equal(formatDuration('x'), undefined);
  assert.ok(isRunEventParams({ event: event('run.ready') }));
  assert.ok(!isRunEventParams({ event: { type: 'run.ready' } }));
  assert.ok(!isRunEventParams(null));
  assert.ok(!isRunEventParams({}));
});

test('a run ending or a failed request becomes a message', () => {
  const result = (status: string, message?: string) => ({
    runId: 'wb_1',
    ending: message === undefined ? { status } : { status, message },
    finalText: 'done',
  });
  assert.deepEqual(runOutcome(result('completed')), { level: 'information', message: 'Workbench: the run completed.' });
  assert.deepEqual(runOutcome(result('cancelled')), { level: 'warning', message: 'Workbench: the run was cancelled.' });
  assert.deepEqual(runOutcome(result('failed', 'The runner exited with status 1')), {
    level: 'error',
    message: 'Workbench: the run failed: The runner exited with status 1',
  });
  assert.deepEqual(runOutcome(undefined, { code: -32800, message: 'request cancelled' }), {
    level: 'warning',
    message: 'Workbench: the run was cancelled.',
  });
  assert.deepEqual(runOutcome(undefined, new Error('No authenticated route is available')), {
    level: 'error',
    message: 'Workbench: the run could not start: No authenticated route is available',
  });
  assert.deepEqual(runOutcome(undefined, new Error('Connection got disposed.'), true), {
    level: 'error',
    message: 'Workbench: the run stopped: Connection got disposed.',
  });
  assert.equal(runOutcome({ runId: 'x' }).level, 'error');
});

const ready = {
  status: 'ready',
  workbench: 'demo',
  version: '0.1.0',
  runtime: 'local',
  runner: { name: 'opencode', path: '/usr/bin/opencode' },
  tools: [{ name: 'git', path: '/usr/bin/git' }],
  authentication: {
    ready: true,
    model: 'openai/gpt-5.6-terra',
    route: 'openai/gpt-5.6-terra',
    variable: 'OPENAI_API_KEY',
  },
  workspaces: [],
  warnings: [],
};

test('smoke reports are written out, and the worst status decides the message', () => {
  assert.deepEqual(formatSmokeReports([ready]), [
    'Smoke demo 0.1.0 on local: ready',
    '  runner: opencode (/usr/bin/opencode)',
    '  tool: git (/usr/bin/git)',
    '  model: openai/gpt-5.6-terra via openai/gpt-5.6-terra with OPENAI_API_KEY',
  ]);
  assert.deepEqual(smokeOutcome([ready]), {
    level: 'information',
    message: 'Workbench: demo is ready to run on local.',
  });
  const needsAuth = {
    ...ready,
    status: 'needs-auth',
    authentication: { ready: false, model: 'openai/gpt-5.6-terra', route: null, variable: null },
    warnings: ['Set OPENAI_API_KEY'],
  };
  assert.deepEqual(formatSmokeReports([needsAuth]).slice(-2), [
    '  model: openai/gpt-5.6-terra (not authenticated)',
    '  warning: Set OPENAI_API_KEY',
  ]);
  assert.deepEqual(smokeOutcome([ready, needsAuth]), {
    level: 'warning',
    message: 'Workbench: demo needs authentication: Set OPENAI_API_KEY',
  });
  const failed = {
    status: 'failed',
    workbench: '',
    version: '',
    runtime: '',
    tools: [],
    workspaces: [],
    warnings: [],
    error: { code: 'smoke_failed', message: 'Runner executable not found: opencode' },
  };
  assert.deepEqual(formatSmokeReports([failed]), [
    'Smoke Workbench: failed',
    '  error: Runner executable not found: opencode',
  ]);
  assert.deepEqual(smokeOutcome([ready, failed]), {
    level: 'error',
    message: 'Workbench: smoke failed for the package: Runner executable not found: opencode',
  });
  assert.equal(smokeOutcome([]).level, 'warning');
  assert.equal(smokeOutcome(null).level, 'warning');
  assert.equal(smokeOutcome([ready, ready]).message, 'Workbench: 2 packages are ready to run.');
});

test('the runtimes a manifest declares, block or flow', () => {
  const block = [
    'spec: 1',
    'name: demo',
    'runtimes:',
    '  # the host',
    '  local: {}',
    '  docker:',
    '    image: node:22',
    '    options:',
    '      network: none',
    '  "e2b": {}',
    'instructions: ./instructions.md',
  ].join('\n');
  assert.deepEqual(declaredRuntimes(block), ['local', 'docker', 'e2b']);
  assert.deepEqual(declaredRuntimes('spec: 1\nruntimes: {local: {}, docker: {image: "a:b"}}  # two\n'), [
    'local',
    'docker',
  ]);
  assert.deepEqual(declaredRuntimes('spec: 1\nruntimes:\n  local: {}\n'), ['local']);
  assert.deepEqual(declaredRuntimes('spec: 0\nruntime: local\n'), []);
  assert.deepEqual(declaredRuntimes('runtimes: *anchor\n'), []);
  assert.deepEqual(declaredRuntimes('runtimes:\r\n  local: {}\r\n  daytona: {}\r\n'), ['local', 'daytona']);
});
