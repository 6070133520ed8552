/**
 * The schema as Red Hat's YAML extension uses it: the real yaml-language-server (the engine of that extension,
 * a dev dependency) validates manifests with the schema this extension ships (its `yamlValidation`, associated
 * the way the YAML extension does it), with schemas/catalog.json served on loopback as a SchemaStore catalog,
 * and with a `# yaml-language-server: $schema=` modeline.
 */
import './register';
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';

const extensionRoot = join(__dirname, '..', '..');
const repository = join(extensionRoot, '..', '..');
const SCHEMA_BASE = 'https://raw.githubusercontent.com/wb-lsp/wb-lsp/main/';

interface Diagnostic {
  range: { start: { line: number; character: number } };
  message: string;
}
interface Message {
  id?: number;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: { message: string };
}

/** yaml-language-server over stdio, with just enough of a client. */
class YamlLanguageServer {
  private readonly process: ChildProcessWithoutNullStreams;
  private buffer = Buffer.alloc(0);
  private nextId = 0;
  private readonly pending = new Map<number, (message: Message) => void>();
  readonly diagnostics = new Map<string, Diagnostic[][]>();
  private readonly listeners: Array<() => void> = [];

  constructor(private readonly settings: Record<string, unknown>) {
    const main = require.resolve('yaml-language-server/bin/yaml-language-server');
    this.process = spawn(process.execPath, [main, '--stdio'], { stdio: 'pipe' });
    this.process.stdout.on('data', (chunk: Buffer) => this.receive(chunk));
    this.process.stderr.resume();
  }

  private send(message: Record<string, unknown>): void {
    const text = JSON.stringify({ jsonrpc: '2.0', ...message });
    this.process.stdin.write(`Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
  }

  private receive(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const headerEnd = this.buffer.indexOf('\r\n\r\n');
      if (headerEnd < 0) return;
      const length = Number(/Content-Length: (\d+)/i.exec(this.buffer.subarray(0, headerEnd).toString())?.[1]);
      if (this.buffer.length < headerEnd + 4 + length) return;
      const message = JSON.parse(this.buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString()) as Message;
      this.buffer = this.buffer.subarray(headerEnd + 4 + length);
      this.handle(message);
    }
  }

  private handle(message: Message): void {
    if (message.method !== undefined && message.id !== undefined) {
      // A request from the server: configuration gets the settings, everything else null.
      if (message.method === 'workspace/configuration') {
        const { items } = message.params as { items: Array<{ section?: string }> };
        this.send({
          id: message.id,
          result: items.map((item) => (item.section === 'yaml' ? this.settings : null)),
        });
      } else {
        this.send({ id: message.id, result: null });
      }
      return;
    }
    if (message.id !== undefined) {
      this.pending.get(message.id)?.(message);
      this.pending.delete(message.id);
      return;
    }
    if (message.method === 'textDocument/publishDiagnostics') {
      const { uri, diagnostics } = message.params as { uri: string; diagnostics: Diagnostic[] };
      this.diagnostics.set(uri, [...(this.diagnostics.get(uri) ?? []), diagnostics]);
      for (const listener of this.listeners) listener();
    }
  }

  request(method: string, params: unknown): Promise<unknown> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, (message) =>
        message.error !== undefined ? reject(new Error(message.error.message)) : resolve(message.result),
      );
      this.send({ id, method, params });
    });
  }

  notify(method: string, params: unknown): void {
    this.send({ method, params });
  }

  async initialize(root: string): Promise<void> {
    await this.request('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(root).toString(),
      capabilities: { workspace: { configuration: true }, textDocument: { publishDiagnostics: {} } },
    });
    this.notify('initialized', {});
    this.notify('workspace/didChangeConfiguration', { settings: { yaml: this.settings } });
  }

  /**
   * Opens a document and returns its diagnostics once they satisfy `done` and nothing newer arrived for a
   * moment (the server may publish before its schema is loaded).
   */
  async open(file: string, text: string, done: (diagnostics: Diagnostic[]) => boolean): Promise<Diagnostic[]> {
    const uri = pathToFileURL(file).toString();
    this.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'yaml', version: 1, text } });
    const latest = (): Diagnostic[] | undefined => this.diagnostics.get(uri)?.at(-1);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const current = latest();
      if (current !== undefined && done(current)) {
        const count = this.diagnostics.get(uri)?.length;
        await new Promise((resolve) => setTimeout(resolve, 400));
        if (this.diagnostics.get(uri)?.length === count) return current;
        continue;
      }
      if (Date.now() > deadline) {
        assert.fail(`no matching diagnostics for ${file}; the last ones: ${JSON.stringify(current)}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.listeners.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.listeners.length = 0;
    }
  }

  async stop(): Promise<void> {
    try {
      await Promise.race([this.request('shutdown', null), new Promise((resolve) => setTimeout(resolve, 2000))]);
      this.notify('exit', null);
    } finally {
      this.process.kill();
    }
  }
}

function summary(diagnostics: Diagnostic[]): string[] {
  return diagnostics.map((d) => `${d.range.start.line + 1}:${d.range.start.character + 1} ${d.message}`);
}

let work: string;
let docsWriter: string;
let docsWriterText: string;
let legacy: string;
let legacyText: string;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'wb-yaml-ls-'));
  const copy = (name: string): [string, string] => {
    const source = join(repository, 'fixtures', 'example-repo', '.workbenches', name, 'workbench.yml');
    const directory = join(work, 'repo', '.workbenches', name);
    mkdirSync(directory, { recursive: true });
    const file = join(directory, 'workbench.yml');
    const text = readFileSync(source, 'utf8');
    writeFileSync(file, text);
    return [file, text];
  };
  [docsWriter, docsWriterText] = copy('docs-writer');
  [legacy, legacyText] = copy('legacy-release');
});

after(() => {
  rmSync(work, { recursive: true, force: true });
});

const TYPO = 'descripton: a typo\n';
const typoLine = (text: string): number => text.split('\n').length - 1; // text ends with the typo's newline
const onlyTypo = (text: string) => (diagnostics: Diagnostic[]) =>
  diagnostics.length > 0 && summary(diagnostics).every((d) => d === `${typoLine(text)}:1 Property descripton is not allowed.`);

test('the yamlValidation schema: a valid spec 1 manifest passes, an unknown key is reported', async () => {
  const manifest = JSON.parse(readFileSync(join(extensionRoot, 'package.json'), 'utf8')) as {
    contributes: { yamlValidation: Array<{ fileMatch: string | string[]; url: string }> };
  };
  // What Red Hat's YAML extension sends for each extension's yamlValidation (json/schemaAssociations): a
  // file URL for `./` paths, and `/` in front of patterns that start with neither a scheme, `/` nor `!`.
  const associations = manifest.contributes.yamlValidation.map(({ fileMatch, url }) => ({
    fileMatch: (typeof fileMatch === 'string' ? [fileMatch] : fileMatch).map((pattern) =>
      /^(\w+:\/\/|\/|!)/.test(pattern) ? pattern : `/${pattern}`,
    ),
    uri: url.startsWith('./') ? pathToFileURL(join(extensionRoot, url)).toString() : url,
  }));
  const packaged = join(extensionRoot, 'schemas', 'workbench.schema.json');
  assert.equal(
    readFileSync(packaged, 'utf8'),
    readFileSync(join(repository, 'schemas', 'v1', 'workbench.schema.json'), 'utf8'),
    'npm test builds first: the packaged schema is the repository\'s v1 schema',
  );

  const server = new YamlLanguageServer({ validate: true, schemaStore: { enable: false } });
  try {
    await server.initialize(join(work, 'repo'));
    // vscode-jsonrpc sends a lone array parameter wrapped in the positional params array.
    server.notify('json/schemaAssociations', [associations]);
    const text = docsWriterText + TYPO;
    const diagnostics = await server.open(docsWriter, text, onlyTypo(text));
    assert.deepEqual(summary(diagnostics), [`${typoLine(text)}:1 Property descripton is not allowed.`]);

    // Spec 0 against the spec 1 schema: the legacy fields are reported (docs/editors/yaml-language-server.md).
    const legacyDiagnostics = await server.open(legacy, legacyText, (d) => d.length > 0);
    const messages = summary(legacyDiagnostics).join('\n');
    assert.match(messages, /Property runtime is not allowed/);
  } finally {
    await server.stop();
  }
});

test('schemas/catalog.json works as a SchemaStore catalog', async () => {
  // Serve the catalog and the schemas on loopback, with the catalog's URLs pointing there.
  const requests: string[] = [];
  const catalogText = readFileSync(join(repository, 'schemas', 'catalog.json'), 'utf8');
  let base = '';
  const http: Server = createServer((request, response) => {
    const path = request.url ?? '/';
    requests.push(path);
    let body: string | undefined;
    if (path === '/schemas/catalog.json') {
      body = catalogText.split(SCHEMA_BASE).join(base);
    } else if (/^\/schemas\/v[01]\/workbench\.schema\.json$/.test(path)) {
      body = readFileSync(join(repository, path), 'utf8');
    }
    response.writeHead(body === undefined ? 404 : 200, { 'Content-Type': 'application/json' });
    response.end(body ?? '');
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;

  const server = new YamlLanguageServer({
    validate: true,
    schemaStore: { enable: true, url: `${base}schemas/catalog.json` },
  });
  try {
    await server.initialize(join(work, 'repo'));
    const text = docsWriterText + TYPO;
    const diagnostics = await server.open(docsWriter, text, onlyTypo(text));
    assert.deepEqual(summary(diagnostics), [`${typoLine(text)}:1 Property descripton is not allowed.`]);
    assert.ok(requests.includes('/schemas/catalog.json'), `the catalog was fetched: ${requests.join(', ')}`);
    assert.ok(requests.includes('/schemas/v1/workbench.schema.json'), `the v1 schema was fetched: ${requests.join(', ')}`);
  } finally {
    await server.stop();
    http.close();
  }
});

test('a modeline selects a schema: spec 0 manifests validate against the v0 schema', async () => {
  const server = new YamlLanguageServer({ validate: true, schemaStore: { enable: false } });
  try {
    await server.initialize(join(work, 'repo'));
    const v0 = join(repository, 'schemas', 'v0', 'workbench.schema.json');
    const text = `# yaml-language-server: $schema=${v0}\n${legacyText}${TYPO}`;
    const diagnostics = await server.open(legacy, text, onlyTypo(text));
    assert.deepEqual(summary(diagnostics), [`${typoLine(text)}:1 Property descripton is not allowed.`]);

    // A relative path is taken from the manifest's directory.
    const local = join(work, 'repo', '.workbenches', 'workbench.schema.json');
    writeFileSync(local, readFileSync(v0, 'utf8'));
    const copy = join(work, 'repo', '.workbenches', 'legacy-copy', 'workbench.yml');
    mkdirSync(dirname(copy), { recursive: true });
    const relative = `# yaml-language-server: $schema=../workbench.schema.json\n${legacyText}${TYPO}`;
    const relativeDiagnostics = await server.open(copy, relative, onlyTypo(relative));
    assert.deepEqual(summary(relativeDiagnostics), [`${typoLine(relative)}:1 Property descripton is not allowed.`]);
  } finally {
    await server.stop();
  }
});
