import './register';
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import type { ConfigurationParams } from 'vscode-languageclient/node';
import type { OutputChannel } from 'vscode';
import {
  clientOptions,
  codeLensMiddleware,
  configurationMiddleware,
  DOCUMENT_SELECTOR,
  rewriteLensCommands,
  serverExecutable,
} from '../src/options';
import type { ServerSettings } from '../src/settings';
import { window } from './vscode-stub';

const settings: ServerSettings = { modelCatalog: null, severity: { 'unknown-model': 'hint' }, runTimeWarnings: false, inlayHints: { context: true, route: true, env: true }, format: { fieldOrder: false } };

test('the server runs as `wb-lsp --stdio`', () => {
  assert.deepEqual(serverExecutable('/usr/bin/wb-lsp'), { command: '/usr/bin/wb-lsp', args: ['--stdio'] });
  // A transport would make the client append its own arguments; none means plain stdio pipes.
  assert.equal('transport' in serverExecutable('wb-lsp'), false);
});

test('the document selector covers manifests (YAML), a package\'s Markdown (instructions, skills) and its trial tasks', () => {
  assert.deepEqual(DOCUMENT_SELECTOR, [
    { scheme: 'file', language: 'yaml', pattern: '**/.workbenches/*/workbench.yml' },
    { scheme: 'file', pattern: '**/.workbenches/*/**/*.md' },
    { scheme: 'file', pattern: '**/.workbenches/*/trials/*/task.json' },
  ]);
});

test('the client options synchronize the wb-lsp and the old workbench sections and send the settings at initialization', () => {
  const output = window.createOutputChannel('Workbench') as unknown as OutputChannel;
  const options = clientOptions({ outputChannel: output, settings: () => settings });
  assert.equal(options.outputChannel, output);
  // A change under either notifies the server, which asks again for its `workbench` section.
  assert.deepEqual(options.synchronize, { configurationSection: ['wb-lsp', 'workbench'] });
  assert.deepEqual(options.initializationOptions, settings);
  assert.equal(options.documentSelector, DOCUMENT_SELECTOR);
  assert.equal(typeof options.middleware?.workspace?.configuration, 'function');
  assert.equal(typeof options.middleware?.provideCodeLenses, 'function');
  assert.equal(typeof options.middleware?.resolveCodeLens, 'function');
});

function lens(command: string) {
  const uri = 'file:///r/.workbenches/d/workbench.yml';
  return { range: {}, command: { title: command, command, arguments: [{ uri }] } };
}

test("the server's lenses run the extension's commands, with their {uri} argument", async () => {
  const middleware = codeLensMiddleware();
  const provide = middleware.provideCodeLenses;
  assert.ok(provide);
  const fromServer = [lens('workbench.dryRun'), lens('workbench.smoke'), lens('workbench.run'), lens('other.command')];
  const lenses = (await provide({} as never, {} as never, () => fromServer as never)) as unknown as typeof fromServer;
  assert.deepEqual(
    lenses.map((l) => l.command.command),
    ['wb-lsp.dryRun', 'wb-lsp.smoke', 'wb-lsp.run', 'other.command'],
  );
  assert.deepEqual(lenses[0]?.command.arguments, [{ uri: 'file:///r/.workbenches/d/workbench.yml' }]);
  assert.equal(await provide({} as never, {} as never, () => null), null);
  assert.equal(rewriteLensCommands(undefined), undefined);
  assert.deepEqual(rewriteLensCommands([{ command: undefined }]), [{ command: undefined }]);

  const resolve = middleware.resolveCodeLens;
  assert.ok(resolve);
  const resolved = (await resolve(
    {} as never,
    {} as never,
    () => lens('workbench.run') as never,
  )) as unknown as ReturnType<typeof lens>;
  assert.equal(resolved.command.command, 'wb-lsp.run');
});

test('workspace/configuration answers carry the mapped settings for the workbench and wb-lsp sections only', async () => {
  const middleware = configurationMiddleware(() => settings);
  const params: ConfigurationParams = {
    items: [
      { section: 'workbench' },
      { section: 'editor' },
      { scopeUri: 'file:///r', section: 'workbench' },
      { section: 'wb-lsp' },
    ],
  };
  const raw = [{ colorTheme: 'Dark', server: { path: '/x' } }, { tabSize: 2 }, { modelCatalog: 'm.json' }, {}];
  const configuration = middleware.configuration;
  assert.ok(configuration);
  const answer = await configuration(params, {} as never, () => raw);
  assert.deepEqual(answer, [settings, { tabSize: 2 }, settings, settings]);
});

test('an error answer passes through the configuration middleware unchanged', async () => {
  const middleware = configurationMiddleware(() => settings);
  const failure = { code: -32603, message: 'no workspace' };
  const configuration = middleware.configuration;
  assert.ok(configuration);
  const answer = await configuration({ items: [{ section: 'workbench' }] }, {} as never, () => failure as never);
  assert.equal(answer, failure);
});
