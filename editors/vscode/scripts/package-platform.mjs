// Packages the platform-specific .vsix that carries the wb-lsp binary, so that the extension needs nothing else
// installed (as rust-analyzer and ruff do): copies the binary to server/wb-lsp (server/wb-lsp.exe for win32-*),
// mode 0755, runs `vsce package --target TARGET --no-dependencies` (which names the file
// workbench-TARGET-VERSION.vsix), removes server/ again so that the plain package never carries a stale binary,
// then checks the result with scripts/verify-vsix.mjs.
//
// Usage: node scripts/package-platform.mjs --target linux-x64 --server ../../target/release/wb-lsp [--out FILE]
// The binary must be built for the target: `cargo build --release --locked -p wb-lsp` on that platform, or
// `cargo build --release --locked -p wb-lsp --target aarch64-unknown-linux-gnu` (and so on) when cross-compiling.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readSync, closeSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));

/** vsce's targets (`web` aside: it has no server), with the binary format each one runs. */
export const TARGETS = {
  'linux-x64': { format: 'elf', machine: 62 },
  'linux-arm64': { format: 'elf', machine: 183 },
  'linux-armhf': { format: 'elf', machine: 40 },
  'alpine-x64': { format: 'elf', machine: 62 },
  'alpine-arm64': { format: 'elf', machine: 183 },
  'darwin-x64': { format: 'macho', cpu: 0x01000007 },
  'darwin-arm64': { format: 'macho', cpu: 0x0100000c },
  'win32-x64': { format: 'pe', machine: 0x8664 },
  'win32-arm64': { format: 'pe', machine: 0xaa64 },
};

/** The name of the server in the package for a target: `wb-lsp`, or `wb-lsp.exe` for Windows. */
export function serverName(target) {
  return target.startsWith('win32-') ? 'wb-lsp.exe' : 'wb-lsp';
}

function fail(message) {
  console.error(`package-platform: ${message}`);
  process.exit(1);
}

function parseArguments(argv) {
  const options = {};
  for (let i = 0; i < argv.length; i += 1) {
    const name = argv[i];
    if (!['--target', '--server', '--out'].includes(name)) fail(`unknown argument ${name}`);
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) fail(`${name} needs a value`);
    options[name.slice(2)] = value; // the last one wins: `npm run package:linux-x64 -- --server X` overrides
    i += 1;
  }
  if (options.target === undefined || options.server === undefined) {
    fail('usage: node scripts/package-platform.mjs --target TARGET --server PATH-TO-WB-LSP [--out FILE.vsix]');
  }
  if (!(options.target in TARGETS)) fail(`unknown target ${options.target} (one of ${Object.keys(TARGETS).join(', ')})`);
  return options;
}

/** Reads the first bytes of the binary and says what it is built for, or why it does not fit the target. */
function checkBinary(file, target) {
  const header = Buffer.alloc(64);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  const want = TARGETS[target];
  if (header.readUInt32BE(0) === 0x7f454c46) {
    const machine = header[5] === 2 ? header.readUInt16BE(18) : header.readUInt16LE(18);
    if (want.format !== 'elf' || want.machine !== machine) return `an ELF binary for machine ${machine}, not for ${target}`;
    return undefined;
  }
  const magic = header.readUInt32LE(0);
  if (magic === 0xfeedfacf) {
    const cpu = header.readUInt32LE(4);
    if (want.format !== 'macho' || want.cpu !== cpu) return `a Mach-O binary for cpu type 0x${cpu.toString(16)}, not for ${target}`;
    return undefined;
  }
  if (magic === 0xbebafeca) return want.format === 'macho' ? undefined : `a universal Mach-O binary, not for ${target}`;
  if (header.toString('latin1', 0, 2) === 'MZ') {
    if (want.format !== 'pe') return `a Windows binary, not for ${target}`;
    const pe = header.readUInt32LE(0x3c);
    const buffer = readFileSync(file).subarray(pe, pe + 6);
    if (buffer.toString('latin1', 0, 4) !== 'PE\0\0' || buffer.readUInt16LE(4) !== want.machine) {
      return `a Windows binary for another machine, not for ${target}`;
    }
    return undefined;
  }
  return `not an executable (no ELF, Mach-O or PE header)`;
}

const options = parseArguments(process.argv.slice(2));
const server = resolve(options.server);
if (!existsSync(server) || !statSync(server).isFile()) {
  fail(`${server} is not a file: build it first (cargo build --release --locked -p wb-lsp)`);
}
const mismatch = checkBinary(server, options.target);
if (mismatch !== undefined) fail(`${server} is ${mismatch}`);

const manifest = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
const out = resolve(options.out ?? join(here, `${manifest.name}-${options.target}-${manifest.version}.vsix`));
const serverDirectory = join(here, 'server');
const vsce = join(here, 'node_modules', '.bin', process.platform === 'win32' ? 'vsce.cmd' : 'vsce');
if (!existsSync(vsce)) fail(`${vsce} is missing: run npm ci first`);

rmSync(serverDirectory, { recursive: true, force: true });
let status = 1;
try {
  mkdirSync(serverDirectory);
  const bundled = join(serverDirectory, serverName(options.target));
  copyFileSync(server, bundled);
  chmodSync(bundled, 0o755);
  console.log(`bundling ${server} as server/${serverName(options.target)} for ${options.target}`);
  const result = spawnSync(vsce, ['package', '--target', options.target, '--no-dependencies', '--out', out], {
    cwd: here,
    stdio: 'inherit',
    shell: process.platform === 'win32',
  });
  status = result.status ?? 1;
  if (result.error !== undefined) console.error(result.error.message);
} finally {
  // The plain package (`npm run package`) must never pick the binary up.
  rmSync(serverDirectory, { recursive: true, force: true });
}
if (status !== 0) fail(`vsce package --target ${options.target} failed (exit ${status})`);

const verify = spawnSync(process.execPath, [join(here, 'scripts', 'verify-vsix.mjs'), out, '--target', options.target], {
  cwd: here,
  stdio: 'inherit',
});
process.exit(verify.status ?? 1);
