// Drives the official Daytona SDK against the fake named by DAYTONA_API_URL / DAYTONA_API_KEY and prints one
// JSON line with what each call returned (the Rust test asserts on it). Polling, not socket.io events.
import { Daytona } from '@daytonaio/sdk';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const out = {};
const daytona = new Daytona({
  apiKey: process.env.DAYTONA_API_KEY,
  apiUrl: process.env.DAYTONA_API_URL,
  target: 'us',
  useDeprecatedPolling: true,
});
const labels = { 'dev.workbenches.managed': 'true', 'dev.workbenches.run': 'wb_0123456789abcdef0123' };
const sandbox = await daytona.create(
  {
    image: 'ghcr.io/acme/agent:1',
    labels,
    envVars: { WORKBENCH_OUTPUT_DIR: '/outbox' },
    resources: { cpu: 2, memory: 4, disk: 10 },
    autoStopInterval: 0,
    ttlMinutes: 60,
  },
  { timeout: 60 },
);
out.create = { id: sandbox.id, state: sandbox.state, cpu: sandbox.cpu, memory: sandbox.memory, disk: sandbox.disk };

const executed = await sandbox.process.executeCommand('{\necho hello\n} 2>&1', '/tmp', undefined, 60);
out.execute = { exitCode: executed.exitCode, result: executed.result };

const session = 'wb-0123456789abcdef0123456789abcdef';
await sandbox.process.createSession(session);
const started = await sandbox.process.executeSessionCommand(session, {
  command: '(\necho out; echo err >&2\n)',
  runAsync: true,
  suppressInputEcho: true,
});
let command;
for (let i = 0; i < 200; i++) {
  command = await sandbox.process.getSessionCommand(session, started.cmdId);
  if (command.exitCode !== undefined && command.exitCode !== null) break;
  await sleep(50);
}
const logs = await sandbox.process.getSessionCommandLogs(session, started.cmdId);
out.session = { cmdId: started.cmdId, exitCode: command.exitCode, stdout: logs.stdout, stderr: logs.stderr };
await sandbox.process.deleteSession(session);

await sandbox.fs.uploadFile(Buffer.from('TARBYTES'), '/tmp/wb/x.bin');
out.download = (await sandbox.fs.downloadFile('/tmp/wb/x.bin')).toString();

const found = [];
for await (const listed of daytona.list({ labels })) found.push(listed.id);
out.list = found;
await sandbox.delete();
console.log(JSON.stringify(out));
process.exit(0);
