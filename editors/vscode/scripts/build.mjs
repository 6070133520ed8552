// Builds the extension: copies the repository's v1 schema and license into the package (they are not
// committed twice) and bundles src/extension.ts with its dependencies into dist/extension.js.
// Usage: node scripts/build.mjs [--production]
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const repository = join(here, '..', '..');
const production = process.argv.includes('--production');

/** Files copied from the repository, as [source, destination in the package]. */
export const COPIED = [
  [join(repository, 'schemas', 'v1', 'workbench.schema.json'), join(here, 'schemas', 'workbench.schema.json')],
  [join(repository, 'LICENSE'), join(here, 'LICENSE')],
];

for (const [source, destination] of COPIED) {
  mkdirSync(dirname(destination), { recursive: true });
  copyFileSync(source, destination);
}
// The copy must stay valid JSON (the YAML extension loads it from the package).
JSON.parse(readFileSync(join(here, 'schemas', 'workbench.schema.json'), 'utf8'));

await esbuild.build({
  entryPoints: [join(here, 'src', 'extension.ts')],
  outfile: join(here, 'dist', 'extension.js'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['vscode'],
  minify: production,
  sourcemap: !production,
  logLevel: 'warning',
});
console.log(`built dist/extension.js${production ? ' (production)' : ''}, copied the v1 schema and LICENSE`);
