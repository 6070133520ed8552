import './register';
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import {
  argumentUri,
  declaredRuntimes,
  executionArguments,
  isRunEventParams,
  isTerminalEvent,
  runOutcome,
  smokeLines,
  smokeOutcome,
  textLines,
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

test("an event's lines are the server's text, strings only", () => {
  assert.deepEqual(textLines(['▶ Run wb_1 started: demo (opencode)', '  more']), [
    '▶ Run wb_1 started: demo (opencode)',
    '  more',
  ]);
  assert.deepEqual(textLines([]), [], 'runner.event has no line');
  assert.deepEqual(textLines(undefined), []);
  assert.deepEqual(textLines(['a', 3, null, 'b']), ['a', 'b']);
  assert.deepEqual(textLines('not a list'), []);
});

test('terminal events and the notification check', () => {
  assert.ok(isTerminalEvent(event('run.completed')));
  assert.ok(isTerminalEvent(event('run.failed')));
  assert.ok(isTerminalEvent(event('run.cancelled')));
  assert.ok(!isTerminalEvent(event('output.text')));
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
  text: ['demo is ready', '  runner /usr/bin/opencode', '  1 tool(s)', '  auth ready (openai)'],
};

test("smoke reports are the server's text, and the worst status decides the message", () => {
  assert.deepEqual(smokeLines([ready]), ready.text);
  assert.deepEqual(smokeOutcome([ready]), { level: 'information', message: 'Workbench: demo is ready.' });
  const needsAuth = {
    ...ready,
    status: 'needs-auth',
    text: ['demo needs a connection', '  auth required (set OPENAI_API_KEY)'],
  };
  assert.deepEqual(smokeLines([ready, needsAuth]), [...ready.text, ...needsAuth.text]);
  assert.deepEqual(smokeOutcome([ready, needsAuth]), {
    level: 'warning',
    message: 'Workbench: demo needs a connection.',
  });
  const failed = {
    status: 'failed',
    workbench: 'beta',
    error: { code: 'smoke_failed', message: 'Runner executable not found: opencode' },
    text: ['beta cannot start: Runner executable not found: opencode'],
  };
  assert.deepEqual(smokeOutcome([ready, failed, needsAuth]), {
    level: 'error',
    message: 'Workbench: beta cannot start: Runner executable not found: opencode.',
  });
  assert.deepEqual(smokeLines([]), ['Smoke: the server reported no package.']);
  assert.equal(smokeOutcome([]).level, 'warning');
  assert.equal(smokeOutcome(null).level, 'warning');
  assert.deepEqual(smokeOutcome([{ status: 'ready', workbench: 'old' }]), {
    level: 'information',
    message: 'Workbench: old: ready.',
  });
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
