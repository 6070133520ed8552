/**
 * Trials through the controller, with a fake client standing in for wb-lsp and the stub for VS Code: the lenses
 * pointed at the extension's commands, Run Trials (progress, Cancel as the trial's Ctrl-C, the ending with Open
 * Report), Open Trial Report (a webview whose policy runs no script), and the jobs in the Runs view.
 */
import './register';
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, test } from 'node:test';
import type * as vscode from 'vscode';
import { WorkbenchController } from '../src/controller';
import { rewriteLensCommands } from '../src/options';
import { BUTTON_OPEN_REPORT, parseTrialJobs, reportWebviewHtml, type TrialJob } from '../src/trials';
import { FakeClient, type Answer, type Behaviour } from './fake-client';
import { stub } from './vscode-stub';

const REPO = '/work/repo';
const MANIFEST = `${REPO}/.workbenches/demo/workbench.yml`;
const URI = 'file:///work/repo/.workbenches/demo/workbench.yml';
const JOB_ID = 'wbt_00112233aabbccdd';

let clients: FakeClient[];
let behaviour: Behaviour;
let controller: WorkbenchController;
let report: string;

function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function activate(): Promise<FakeClient> {
  await controller.activate({ subscriptions: [] } as unknown as vscode.ExtensionContext);
  const client = clients[0];
  assert.ok(client, 'the server started');
  return client;
}

function job(overrides: Partial<TrialJob> = {}): TrialJob {
  return {
    jobId: JOB_ID,
    kind: 'trial',
    workbench: 'demo',
    version: '0.1.0',
    createdAt: '2026-12-06T23:00:00.000Z',
    total: 4,
    done: 4,
    works: 3,
    spentUsd: 0.04,
    summary: 'trials 0.1.0: 2/2 works · $0.01 per working result · just now',
    reportHtml: report,
    ...overrides,
  };
}

beforeEach(() => {
  stub.reset();
  clients = [];
  behaviour = { answers: {} };
  stub.workspaceFolders = [REPO];
  stub.files = [MANIFEST];
  stub.configuration = { 'wb-lsp.server.path': '' };
  stub.texts.set(MANIFEST, 'spec: 1\nname: demo\nruntimes:\n  local: {}\n');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wb-trial-'));
  report = path.join(dir, 'report.html');
  fs.writeFileSync(report, '<!doctype html><html><head><title>Trial</title></head><body><svg></svg>9/10</body></html>');
  controller = new WorkbenchController(
    (setup) => {
      const client = new FakeClient(setup, behaviour);
      clients.push(client);
      return client;
    },
    { platform: 'linux', env: { PATH: '/usr/bin' }, homedir: '/home/me', isExecutable: (f) => f === '/usr/bin/wb-lsp' },
  );
});

test("the trial lenses run the extension's commands", () => {
  const lenses = rewriteLensCommands([
    { command: { command: 'workbench.trial' } },
    { command: { command: 'workbench.openTrialReport' } },
  ]);
  assert.deepEqual(
    lenses?.map((lens) => lens.command?.command),
    ['wb-lsp.runTrials', 'wb-lsp.openTrialReport'],
  );
});

test('Run Trials shows the progress, ends with the trial line and opens the report on request', async () => {
  const running: Answer = async (_args, options, client) => {
    await settle();
    const token = options?.workDoneToken ?? '';
    client.reportProgress(token, { kind: 'begin', title: 'Workbench trial', message: 'starting' });
    client.reportProgress(token, { kind: 'report', message: '2/4 · 1 works · $0.02' });
    client.reportProgress(token, { kind: 'report', message: '4/4 · 3 works · $0.04' });
    client.reportProgress(token, { kind: 'end', message: 'done' });
    return { job: job(), exitCode: 0 };
  };
  behaviour.answers['workbench.trial'] = running;
  behaviour.answers['workbench.openTrialReport'] = job();
  const client = await activate();
  stub.answer = BUTTON_OPEN_REPORT;
  await stub.commands.get('wb-lsp.runTrials')?.({ uri: URI });
  assert.deepEqual(client.sent[0], { command: 'workbench.trial', args: [{ uri: URI }] });
  const options = client.requestOptions[client.requests.findIndex((r) => r.command === 'workbench.trial')];
  assert.match(String(options?.workDoneToken), /^wb-lsp-trial-\d+$/);
  const progress = stub.progress.find((p) => p.options.title === 'Workbench: trial');
  assert.ok(progress, 'a notification while the trial runs');
  assert.equal(progress.options.cancellable, true);
  assert.deepEqual(
    progress.reports.map((r) => r.message),
    ['starting', '2/4 · 1 works · $0.02', '4/4 · 3 works · $0.04', 'done'],
  );
  const ending = stub.messages.find((m) => m.message.startsWith('Workbench: trials'));
  assert.deepEqual(ending, {
    level: 'information',
    message: `Workbench: ${job().summary}`,
    items: [BUTTON_OPEN_REPORT],
  });
  // Open Report: the job's report in a webview that runs no script.
  assert.deepEqual(client.sent.at(-1), {
    command: 'workbench.openTrialReport',
    args: [{ open: false, jobId: JOB_ID }],
  });
  assert.equal(stub.webviews.length, 1);
  const panel = stub.webviews[0];
  assert.equal(panel?.title, 'Trial report · demo');
  assert.equal(panel?.options.enableScripts, false);
  assert.match(panel?.webview.html ?? '', /Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'/);
  assert.match(panel?.webview.html ?? '', /<svg><\/svg>9\/10/);
});

test("Cancel is the trial's Ctrl-C: its work-done progress is cancelled and the answer still shown", async () => {
  const cancellable: Answer = (_args, options, client) =>
    new Promise((resolve) => {
      const token = options?.workDoneToken ?? '';
      const poll = setInterval(() => {
        if (client.cancelledProgress.includes(token)) {
          clearInterval(poll);
          resolve({ job: job({ done: 2, summary: 'trials 0.1.0: 1/1 works (2/4 done) · just now' }), exitCode: 130 });
        }
      }, 1);
    });
  behaviour.answers['workbench.trial'] = cancellable;
  const client = await activate();
  const running = stub.commands.get('wb-lsp.runTrials')?.({ uri: URI }) as Promise<void>;
  await settle();
  const progress = stub.progress.find((p) => p.options.title === 'Workbench: trial');
  assert.ok(progress);
  progress.cancel();
  await running;
  assert.equal(client.cancelledProgress.length, 1);
  const ending = stub.messages.find((m) => m.message.includes('2/4 done'));
  assert.equal(ending?.level, 'warning', 'a trial stopped before its end is a warning');
});

test('Open Trial Report without a job asks for the active manifest, and a failure is said', async () => {
  behaviour.answers['workbench.openTrialReport'] = new Error('no trial has been run for this package: run one first');
  const client = await activate();
  await stub.commands.get('wb-lsp.openTrialReport')?.({ uri: URI });
  assert.deepEqual(client.sent.at(-1), { command: 'workbench.openTrialReport', args: [{ open: false, uri: URI }] });
  assert.equal(stub.webviews.length, 0);
  assert.match(stub.messages.at(-1)?.message ?? '', /cannot open the trial's report: no trial has been run/);
});

test('the Runs view lists the jobs after the runs; a trial opens its report', async () => {
  behaviour.answers['workbench.runs'] = [];
  behaviour.answers['workbench.trials'] = [job(), job({ jobId: 'wbt_ffee', kind: 'batch', done: 1, total: 3 }), { nonsense: 1 }];
  await activate();
  await controller.runs.refresh(true);
  const view = stub.treeViews.find((v) => v.id === 'wb-lsp.runs');
  assert.ok(view);
  const items = view.items();
  assert.deepEqual(
    items.map((item) => [item.label, item.description]),
    [
      ['trial · demo', job().summary],
      ['batch · demo', '1/3 done'],
    ],
  );
  assert.deepEqual(items[0]?.command?.arguments, [{ jobId: JOB_ID }]);
  assert.equal(items[1]?.command, undefined, 'a batch has no report');
});

test('what is not a job is left out, and the report keeps its own head', () => {
  assert.deepEqual(parseTrialJobs([{ jobId: '../x', summary: 's' }, 'x', null]), []);
  assert.equal(parseTrialJobs([job()]).length, 1);
  assert.match(reportWebviewHtml('<p>bare</p>'), /^<meta http-equiv="Content-Security-Policy"/);
});
