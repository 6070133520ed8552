// Runs after `npm run package` and scripts/package-platform.mjs: checks that the .vsix holds what the extension
// needs, and nothing else. Reads the zip's central directory itself (no dependency).
//
// Usage: node scripts/verify-vsix.mjs [FILE.vsix] [--target TARGET]
// Without a file: the plain package, workbench-VERSION.vsix, which must carry no server and no target platform.
// A platform package (its manifest names a TargetPlatform; --target must agree) must carry extension/server/wb-lsp
// (wb-lsp.exe for win32-*) as a regular file with the executable bits in the zip entry's external attributes
// (VS Code extracts with those modes); when the target is this machine's, the binary is extracted, with PATH not
// containing any wb-lsp, and must answer `--version` and an LSP `initialize` over stdio.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const manifest = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
const argv = process.argv.slice(2);
let file = join(here, `${manifest.name}-${manifest.version}.vsix`);
let expectedTarget;
for (let i = 0; i < argv.length; i += 1) {
  if (argv[i] === '--target') {
    expectedTarget = argv[i + 1];
    i += 1;
  } else {
    file = resolve(argv[i]);
  }
}
const zip = readFileSync(file);

/** name -> { method, compressedSize, local, mode, madeBy } from the central directory. */
function entries(buffer) {
  const end = buffer.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error(`${file} is not a zip file`);
  const count = buffer.readUInt16LE(end + 10);
  let offset = buffer.readUInt32LE(end + 16);
  const result = new Map();
  for (let i = 0; i < count; i += 1) {
    if (buffer.readUInt32LE(offset) !== 0x02014b50) throw new Error('bad central directory');
    const madeBy = buffer.readUInt16LE(offset + 4) >> 8; // 3: Unix, whose modes are in the external attributes
    const method = buffer.readUInt16LE(offset + 10);
    const compressedSize = buffer.readUInt32LE(offset + 20);
    const nameLength = buffer.readUInt16LE(offset + 28);
    const extraLength = buffer.readUInt16LE(offset + 30);
    const commentLength = buffer.readUInt16LE(offset + 32);
    const external = buffer.readUInt32LE(offset + 38);
    const local = buffer.readUInt32LE(offset + 42);
    const name = buffer.toString('utf8', offset + 46, offset + 46 + nameLength);
    result.set(name, { method, compressedSize, local, madeBy, mode: external >>> 16 });
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return result;
}

function content(buffer, entry) {
  const nameLength = buffer.readUInt16LE(entry.local + 26);
  const extraLength = buffer.readUInt16LE(entry.local + 28);
  const start = entry.local + 30 + nameLength + extraLength;
  const data = buffer.subarray(start, start + entry.compressedSize);
  return entry.method === 0 ? data : inflateRawSync(data);
}

const found = entries(zip);
const names = [...found.keys()].sort();
const problems = [];
const required = [
  'extension/package.json',
  'extension/dist/extension.js',
  'extension/schemas/workbench.schema.json',
  'extension/readme.md',
  'extension/changelog.md',
  'extension.vsixmanifest',
];
for (const name of required) {
  if (!found.has(name)) problems.push(`missing ${name}`);
}
if (!names.some((name) => /^extension\/LICENSE(\.txt|\.md)?$/i.test(name))) problems.push('missing the LICENSE');

// The target platform, from the package's manifest.
const vsixManifest = found.has('extension.vsixmanifest') ? content(zip, found.get('extension.vsixmanifest')).toString('utf8') : '';
const target = /TargetPlatform="([^"]+)"/.exec(vsixManifest)?.[1];
if (expectedTarget !== undefined && target !== expectedTarget) {
  problems.push(`the manifest's target platform is ${target ?? 'none'}, not ${expectedTarget}`);
}
const serverEntry = target === undefined ? undefined : `extension/server/${target.startsWith('win32-') ? 'wb-lsp.exe' : 'wb-lsp'}`;

const allowed = /^(\[Content_Types\]\.xml|extension\.vsixmanifest|extension\/(package\.json|readme\.md|changelog\.md|LICENSE(\.txt)?|dist\/extension\.js|schemas\/workbench\.schema\.json))$/i;
for (const name of names) {
  if (name === serverEntry) continue;
  if (!allowed.test(name)) {
    problems.push(
      name.startsWith('extension/server/')
        ? `unexpected ${name} (${target === undefined ? 'the plain package carries no server: remove server/ and package again' : `a ${target} package carries ${serverEntry} only`})`
        : `unexpected ${name} (sources, maps and node_modules stay out; see .vscodeignore)`,
    );
  }
}

let server;
if (serverEntry !== undefined) {
  server = found.get(serverEntry);
  if (server === undefined) {
    problems.push(`missing ${serverEntry}: a ${target} package bundles the server (scripts/package-platform.mjs)`);
  } else if (!target.startsWith('win32-')) {
    const mode = server.mode;
    if (server.madeBy !== 3 || (mode & 0o170000) !== 0o100000) {
      problems.push(`${serverEntry} has no Unix file mode in its zip entry (made by ${server.madeBy}, mode 0${mode.toString(8)})`);
    } else if ((mode & 0o111) !== 0o111) {
      problems.push(`${serverEntry} is not executable: mode 0${(mode & 0o7777).toString(8)} in its zip entry`);
    }
  }
}

const schema = found.get('extension/schemas/workbench.schema.json');
if (schema !== undefined) {
  const packaged = content(zip, schema).toString('utf8');
  const source = readFileSync(join(here, '..', '..', 'schemas', 'v1', 'workbench.schema.json'), 'utf8');
  if (packaged !== source) problems.push('the packaged schema differs from schemas/v1/workbench.schema.json');
}
const packagedManifest = found.get('extension/package.json');
if (packagedManifest !== undefined) {
  const packaged = JSON.parse(content(zip, packagedManifest).toString('utf8'));
  for (const { url } of packaged.contributes.yamlValidation) {
    if (!found.has(`extension/${url.replace(/^\.\//, '')}`)) problems.push(`yamlValidation names ${url}, not in the package`);
  }
  if (!found.has(`extension/${packaged.main.replace(/^\.\//, '')}`)) problems.push(`main ${packaged.main} is not in the package`);
}

const stray = readdirSync(here).filter((name) => name.endsWith('.vsix'));
if (problems.length > 0) {
  console.error(`${file}:\n  ${problems.join('\n  ')}\ncontents:\n  ${names.join('\n  ')}`);
  process.exit(1);
}

/** This machine as a vsce target (linux-x64, darwin-arm64, ...). */
function hostTarget() {
  const arch = { x64: 'x64', arm64: 'arm64', arm: 'armhf' }[process.arch] ?? process.arch;
  const musl = process.platform === 'linux' && existsSync('/etc/alpine-release');
  return `${musl ? 'alpine' : process.platform}-${arch}`;
}

/** Sends `initialize`, waits for its answer, then `shutdown` and `exit`; resolves with the server's info. */
function initialize(binary, env) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(binary, ['--stdio'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error('no answer to initialize within 30 s'));
    }, 30_000);
    let buffered = Buffer.alloc(0);
    let stderr = '';
    const send = (message) => {
      const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...message }), 'utf8');
      child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
      child.stdin.write(body);
    };
    child.stderr.on('data', (chunk) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`wb-lsp --stdio exited (${code}) before answering initialize: ${stderr.trim()}`));
    });
    child.stdout.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/Content-Length: (\d+)/i.exec(buffered.toString('latin1', 0, end))?.[1]);
        if (buffered.length < end + 4 + length) return;
        const message = JSON.parse(buffered.toString('utf8', end + 4, end + 4 + length));
        buffered = buffered.subarray(end + 4 + length);
        if (message.method !== undefined) continue; // the server's own notifications and requests
        if (message.id === 1) {
          if (message.result?.capabilities === undefined) {
            clearTimeout(timer);
            child.kill();
            reject(new Error(`initialize answered ${JSON.stringify(message)}`));
            return;
          }
          info = message.result.serverInfo;
          send({ id: 2, method: 'shutdown', params: null });
        } else if (message.id === 2) {
          child.removeAllListeners('exit');
          child.on('exit', () => {
            clearTimeout(timer);
            resolvePromise(info);
          });
          send({ method: 'exit', params: null });
        }
      }
    });
    let info;
    send({ id: 1, method: 'initialize', params: { processId: process.pid, rootUri: null, capabilities: {} } });
  });
}

const lines = [`verified ${file} (${zip.length} bytes): ${names.length} files${target === undefined ? '' : `, target ${target}`}`];
if (server !== undefined) {
  lines.push(`  ${serverEntry}: mode 0${(server.mode & 0o7777).toString(8)}`);
  if (target === hostTarget()) {
    // Extracted as VS Code does (the mode from the zip entry), and run with a PATH that has no wb-lsp.
    const directory = mkdtempSync(join(tmpdir(), 'wb-vsix-'));
    try {
      const binary = join(directory, serverEntry.slice('extension/server/'.length));
      writeFileSync(binary, content(zip, server), { mode: server.mode & 0o7777 });
      const path = (process.env.PATH ?? '')
        .split(delimiter)
        .filter((entry) => entry.length > 0 && !existsSync(join(entry, 'wb-lsp')))
        .join(delimiter);
      const env = { ...process.env, PATH: path };
      const version = spawnSync(binary, ['--version'], { env, encoding: 'utf8', timeout: 30_000 });
      if (version.status !== 0 || !/^wb-lsp \S+/.test(version.stdout)) {
        console.error(`${file}: the bundled wb-lsp --version failed (${version.status ?? version.error}): ${version.stdout}${version.stderr}`);
        process.exit(1);
      }
      lines.push(`  the bundled server answers --version: ${version.stdout.trim()} (PATH without wb-lsp)`);
      try {
        const info = await initialize(binary, env);
        lines.push(`  ... and initialize over stdio: ${info?.name ?? '?'} ${info?.version ?? ''}`.trimEnd());
      } catch (error) {
        console.error(`${file}: the bundled wb-lsp --stdio failed: ${error.message}`);
        process.exit(1);
      }
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  } else {
    lines.push(`  (not run: the package is for ${target}, this machine is ${hostTarget()})`);
  }
}
console.log(`${lines.join('\n')}\n  ${names.join('\n  ')}`);
if (stray.length > 1) console.log(`note: other .vsix files here: ${stray.join(', ')}`);
