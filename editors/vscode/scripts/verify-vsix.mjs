// Runs after `npm run package`: checks that the .vsix holds what the extension needs, and nothing else.
// Reads the zip's central directory itself (no dependency).
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const manifest = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
const file = join(here, `${manifest.name}-${manifest.version}.vsix`);
const zip = readFileSync(file);

/** name -> { method, compressedSize, offset } from the central directory. */
function entries(buffer) {
  const end = buffer.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error(`${file} is not a zip file`);
  const count = buffer.readUInt16LE(end + 10);
  let offset = buffer.readUInt32LE(end + 16);
  const result = new Map();
  for (let i = 0; i < count; i += 1) {
    if (buffer.readUInt32LE(offset) !== 0x02014b50) throw new Error('bad central directory');
    const method = buffer.readUInt16LE(offset + 10);
    const compressedSize = buffer.readUInt32LE(offset + 20);
    const nameLength = buffer.readUInt16LE(offset + 28);
    const extraLength = buffer.readUInt16LE(offset + 30);
    const commentLength = buffer.readUInt16LE(offset + 32);
    const local = buffer.readUInt32LE(offset + 42);
    const name = buffer.toString('utf8', offset + 46, offset + 46 + nameLength);
    result.set(name, { method, compressedSize, local });
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
const allowed = /^(\[Content_Types\]\.xml|extension\.vsixmanifest|extension\/(package\.json|readme\.md|changelog\.md|LICENSE(\.txt)?|dist\/extension\.js|schemas\/workbench\.schema\.json))$/i;
for (const name of names) {
  if (!allowed.test(name)) problems.push(`unexpected ${name} (sources, maps and node_modules stay out; see .vscodeignore)`);
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
console.log(`verified ${file} (${zip.length} bytes): ${names.length} files\n  ${names.join('\n  ')}`);
if (stray.length > 1) console.log(`note: other .vsix files here: ${stray.join(', ')}`);
