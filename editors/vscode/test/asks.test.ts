/**
 * What a run asks, through the controller with a fake client and the VS Code stub: a permission asked as a
 * notification with its choices as buttons, questions as quick picks (own words through an input box, several
 * where allowed), the answer sent with `workbench.answer`; a request resolved elsewhere is not answered; the
 * Runs view's Answer asks what a run's record lists as pending.
 */
import './register';
import { strict as assert } from 'node:assert';
import { beforeEach, test } from 'node:test';
import type * as vscode from 'vscode';
import { askQuestions, OWN_WORDS, type InputRequest } from '../src/asks';
import { WorkbenchController } from '../src/controller';
import { runContextValue, runIcon } from '../src/runs';
import { FakeClient, type Behaviour } from './fake-client';
import { stub } from './vscode-stub';

const REPO = '/work/repo';
const MANIFEST = `${REPO}/.workbenches/demo/workbench.yml`;
const RUN = 'wb_00112233445566778899aabb';

let clients: FakeClient[];
let behaviour: Behaviour;
let controller: WorkbenchController;

function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function activate(): Promise<FakeClient> {
  await controller.activate({ subscriptions: [] } as unknown as vscode.ExtensionContext);
  const client = clients[0];
  assert.ok(client, 'the server started');
  return client;
}

const permission: InputRequest = {
  id: 'in_0a1b2c3d',
  kind: 'permission',
  message: 'Bash: rm obsolete.txt',
  options: ['allow', 'deny', 'allow_always'],
  tool: 'Bash',
};

const question: InputRequest = {
  id: 'in_4e5f6a7b',
  kind: 'question',
  questions: [
    { question: 'Which colour?', header: 'Colour', options: [{ label: 'Red' }, { label: 'Blue' }], multiple: false, custom: true },
    { question: 'Which days?', options: [{ label: 'Mon' }, { label: 'Tue' }], multiple: true, custom: false },
  ],
};

beforeEach(() => {
  stub.reset();
  clients = [];
  behaviour = { answers: { 'workbench.answer': { ok: true } } };
  stub.workspaceFolders = [REPO];
  stub.files = [MANIFEST];
  stub.configuration = { 'wb-lsp.server.path': '' };
  stub.texts.set(MANIFEST, 'spec: 1\nname: demo\nruntimes:\n  local: {}\n');
  controller = new WorkbenchController(
    (setup) => {
      const client = new FakeClient(setup, behaviour);
      clients.push(client);
      return client;
    },
    { platform: 'linux', env: { PATH: '/usr/bin' }, homedir: '/home/me', isExecutable: (f) => f === '/usr/bin/wb-lsp' },
  );
});

test('a permission is asked with its choices as buttons and the choice is sent', async () => {
  const client = await activate();
  stub.answer = 'Allow Always';
  client.inputRequests.fire({ runId: RUN, request: permission, text: 'permission · in_0a1b2c3d: Bash: rm obsolete.txt' });
  await settle();
  const shown = stub.messages.find((message) => message.message.startsWith('Workbench asks: permission'));
  assert.deepEqual(shown?.items, ['Allow', 'Deny', 'Allow Always']);
  assert.deepEqual(client.sent, [
    { command: 'workbench.answer', args: [{ runId: RUN, requestId: 'in_0a1b2c3d', answer: 'allow_always' }] },
  ]);
});

test('questions are quick picks: own words through an input box, several where allowed, one answer per question', async () => {
  stub.picks.push(OWN_WORDS, 'Mon');
  stub.inputs.push('Green, please');
  assert.equal(await askQuestions(question.kind === 'question' ? question.questions : []), JSON.stringify([['Green, please'], ['Mon']]));
  assert.deepEqual(stub.quickPicks[0]?.items, ['Red', 'Blue', OWN_WORDS]);
  assert.deepEqual(stub.quickPicks[1]?.items, ['Mon', 'Tue'], 'no own words where the question takes none');
  assert.equal(stub.quickPicks[1]?.options.canPickMany, true);
  stub.picks.push('Blue');
  const one = await askQuestions([{ question: 'Which colour?', options: [{ label: 'Red' }, { label: 'Blue' }], multiple: false, custom: false }]);
  assert.equal(one, 'Blue', 'one question, one answer: the label itself');
  assert.equal(await askQuestions([{ question: 'Q?', options: [{ label: 'A' }], multiple: false, custom: false }]), undefined, 'dismissed');
});

test('a request resolved elsewhere before the choice is not answered', async () => {
  const client = await activate();
  let choose: (value: string | undefined) => void = () => undefined;
  const original = stub.answer;
  // The notification stays open until the test chooses.
  const showInformationMessage = (await import('./vscode-stub')).window.showInformationMessage;
  (await import('./vscode-stub')).window.showInformationMessage = (message: string, ...items: unknown[]) => {
    void showInformationMessage(message, ...items);
    return new Promise((resolve) => {
      choose = resolve;
    });
  };
  try {
    client.inputRequests.fire({ runId: RUN, request: permission, text: 'permission · in_0a1b2c3d: …' });
    await settle();
    client.inputResolutions.fire({ runId: RUN, id: 'in_0a1b2c3d', how: 'answered', answer: 'deny' });
    choose('Allow');
    await settle();
    assert.deepEqual(client.sent, [], 'nothing sent');
    assert.ok(stub.messages.some((m) => m.message === 'Workbench: request in_0a1b2c3d was already answered.'));
  } finally {
    (await import('./vscode-stub')).window.showInformationMessage = showInformationMessage;
    stub.answer = original;
  }
});

test("the Runs view marks a run that needs input, and Answer asks what its record lists", async () => {
  const record = { run_id: RUN, workbench: 'demo', state: 'needs_input' as const, pending: [permission] };
  assert.equal(runContextValue(record), 'workbenchRun running needsInput attachable');
  assert.equal(runIcon('needs_input'), 'bell-dot');
  behaviour.answers['workbench.runs'] = [record];
  const client = await activate();
  stub.answer = 'Deny';
  await stub.commands.get('wb-lsp.answerRun')?.({ runId: RUN });
  await settle();
  assert.deepEqual(client.sent.filter((r) => r.command === 'workbench.answer'), [
    { command: 'workbench.answer', args: [{ runId: RUN, requestId: 'in_0a1b2c3d', answer: 'deny' }] },
  ]);
});

test('Answer from the command palette asks which run first', async () => {
  const record = { run_id: RUN, workbench: 'demo', state: 'needs_input' as const, pending: [permission] };
  behaviour.answers['workbench.runs'] = [record, { run_id: 'wb_ffeeddccbbaa998877665544', workbench: 'x', state: 'running' }];
  const client = await activate();
  stub.picks.push(RUN);
  stub.answer = 'Allow';
  await stub.commands.get('wb-lsp.answerRun')?.();
  await settle();
  assert.deepEqual(stub.quickPicks[0]?.items, [RUN], 'only the runs that wait for an answer');
  assert.deepEqual(client.sent.filter((r) => r.command === 'workbench.answer').length, 1);
});

