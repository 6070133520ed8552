// Drives the official E2B SDK (e2b@2.51.0, resolved from NODE_PATH / the given node_modules) against our Rust
// fake, making the calls the remote runtime makes. Every step asserts its result; the first failure exits 1.
// Environment: E2B_FAKE_URL, E2B_FAKE_KEY, WB_SDK_CTX (an empty directory for the Dockerfile build context),
// WB_SDK_MODULES (the node_modules directory holding e2b).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.WB_SDK_MODULES;
const { E2B, CommandExitError } = await import(pathToFileURL(path.join(modules, 'e2b', 'dist', 'index.mjs')).href);

const BASE = process.env.E2B_FAKE_URL;
const client = new E2B({ apiKey: process.env.E2B_FAKE_KEY, apiUrl: BASE, sandboxUrl: BASE });
const ctx = process.env.WB_SDK_CTX;

const check = (cond, what, got) => {
  if (!cond) {
    console.error(`FAILED: ${what}: got ${JSON.stringify(got)}`);
    process.exit(1);
  }
};
const step = async (name, fn) => {
  try {
    const r = await fn();
    console.log('OK', name);
    return r;
  } catch (e) {
    console.error(`FAILED: ${name}: ${e?.constructor?.name}: ${e?.message}`);
    process.exit(1);
  }
};

// The same files the Rust test hashes: one file, fixed content and mode.
fs.writeFileSync(path.join(ctx, 'hello.txt'), 'hi\n');
fs.chmodSync(path.join(ctx, 'hello.txt'), 0o644);
fs.writeFileSync(path.join(ctx, 'Dockerfile'), 'FROM debian:bookworm\nCOPY hello.txt /opt/app/hello.txt\nENV FOO=bar\n');

const IMAGE_NAME = 'workbench-oracle-image';
const DOCKERFILE_NAME = 'workbench-oracle-dockerfile';
const metadata = { 'dev.workbenches.managed': 'true', 'dev.workbenches.run': 'wb_oracle', 'dev.workbenches.scope': 'oracle' };

check((await step('Template.exists (absent)', () => client.Template.exists(IMAGE_NAME))) === false, 'exists before build');
const built = await step('Template.build fromImage + runCmd', () =>
  client.Template.build(client.Template().fromImage('debian:bookworm').runCmd('echo built > /tmp/built-marker', { user: 'root' }), IMAGE_NAME));
check(typeof built.templateId === 'string' && built.templateId.length > 0, 'templateId', built);
check((await step('Template.exists (present)', () => client.Template.exists(IMAGE_NAME))) === true, 'exists after build');
check((await step('Template.exists (Dockerfile template, absent)', () => client.Template.exists(DOCKERFILE_NAME))) === false, 'exists before the Dockerfile build');
const fromDockerfile = await step('Template.build fromDockerfile', () =>
  client.Template.build(client.Template({ fileContextPath: ctx }).fromDockerfile(path.join(ctx, 'Dockerfile')), DOCKERFILE_NAME));

const sbx = await step('Sandbox.create', () => client.Sandbox.create(built.templateId, {
  metadata,
  timeoutMs: 3_600_000,
  allowInternetAccess: true,
  secure: true,
  lifecycle: { onTimeout: 'kill' },
}));

const hello = await step('commands.run echo', () => sbx.commands.run('echo hello', { timeoutMs: 0 }));
check(hello.stdout === 'hello\n' && hello.exitCode === 0, 'echo', hello);

const rooted = await step('commands.run as root with cwd and envs', () =>
  sbx.commands.run('echo "$A"; pwd; cat /tmp/built-marker; echo oops >&2', { user: 'root', cwd: '/tmp', envs: { A: '1' }, timeoutMs: 0 }));
check(rooted.stdout === '1\n/tmp\nbuilt\n' && rooted.stderr === 'oops\n', 'env/cwd/template step', rooted);

const failed = await step('commands.run exit 3', async () => {
  try { return await sbx.commands.run('exit 3', { timeoutMs: 0 }); } catch (e) { if (e instanceof CommandExitError) return { exitCode: e.exitCode }; throw e; }
});
check(failed.exitCode === 3, 'exit code', failed);

const streamed = await step('commands.run background + kill', async () => {
  const chunks = [];
  const handle = await sbx.commands.run('echo started; sleep 30', { background: true, timeoutMs: 0, onStdout: (d) => chunks.push(d) });
  for (let i = 0; i < 100 && !chunks.join('').includes('started'); i++) await new Promise((r) => setTimeout(r, 50));
  const killed = await handle.kill();
  const end = await handle.wait().then((r) => r, (e) => e);
  return { chunks, killed, exitCode: end?.exitCode };
});
check(streamed.chunks.join('') === 'started\n' && streamed.killed === true, 'background output and kill', streamed);

// A process followed again by another client (an adoption reattaches like this): its events from then on.
const followed = await step('commands.connect', async () => {
  const handle = await sbx.commands.run('sleep 1; echo later', { background: true, timeoutMs: 0 });
  const chunks = [];
  const again = await sbx.commands.connect(handle.pid, { timeoutMs: 0, onStdout: (d) => chunks.push(d) });
  const end = await again.wait();
  return { chunks, exitCode: end.exitCode };
});
check(followed.chunks.join('') === 'later\n' && followed.exitCode === 0, 'connect follows the process', followed);

await step('files.write (octet stream)', () =>
  sbx.files.write('/tmp/transfer/data.bin', new Blob([Buffer.from('payload bytes')]).stream(), { useOctetStream: true }));
const read = await step('files.read', () => sbx.files.read('/tmp/transfer/data.bin'));
check(read === 'payload bytes', 'read back', read);

// Pause, then connect again: the sandbox resumes with its files (a recovery reconnects like this).
check((await step('pause', () => sbx.pause())) === true, 'pause');
check((await step('pause (already paused)', () => sbx.pause())) === false, 'pause again');
const paused = await step('Sandbox.list (paused)', () => client.Sandbox.list({ query: { metadata: { 'dev.workbenches.run': 'wb_oracle' } } }).nextItems());
check(paused.length === 1 && paused[0].state === 'paused', 'listed paused', paused);
const again = await step('Sandbox.connect (resume)', () => client.Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 }));
const kept = await step('files.read after resume', () => again.files.read('/tmp/transfer/data.bin'));
check(kept === 'payload bytes', 'files kept across the pause', kept);
await step('Sandbox.connect (running)', () => client.Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 }));

const info = await step('getInfo', () => sbx.getInfo());
check(info.cpuCount === 2 && info.memoryMB === 512 && info.metadata['dev.workbenches.run'] === 'wb_oracle', 'info', info);

const listed = await step('Sandbox.list by metadata', () => client.Sandbox.list({ query: { metadata: { 'dev.workbenches.run': 'wb_oracle' } } }).nextItems());
check(listed.length === 1 && listed[0].sandboxId === sbx.sandboxId, 'list', listed);

check((await step('kill', () => sbx.kill())) === true, 'kill');

const other = await step('Sandbox.create from the Dockerfile template', () => client.Sandbox.create(fromDockerfile.templateId, { metadata, timeoutMs: 60_000 }));
const copied = await step('commands.run cat copied file', () => other.commands.run('cat /opt/app/hello.txt', { timeoutMs: 0 }));
check(copied.stdout === 'hi\n', 'COPY step reached the sandbox', copied);
await step('kill (second)', () => other.kill());
console.log('DONE');
