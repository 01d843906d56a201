// Writes charts/sandbox-scale/crds/*.yaml from the zod schemas; removes CRD files no longer generated.
// Run with `npx nx run scale-core:crds`; the crds test fails when the committed files differ.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CRD_OUTPUT_DIR, renderCrdFiles } from '../src/crds/render-crds';

const root = resolve(__dirname, '../../..');
const outDir = join(root, CRD_OUTPUT_DIR);
mkdirSync(outDir, { recursive: true });

const files = renderCrdFiles();
const wanted = new Set(files.map((f) => f.fileName));
for (const name of readdirSync(outDir)) {
  if (name.endsWith('.yaml') && !wanted.has(name)) rmSync(join(outDir, name));
}
for (const f of files) writeFileSync(join(outDir, f.fileName), f.content);
process.stdout.write(`wrote ${files.length} CRDs to ${CRD_OUTPUT_DIR}: ${[...wanted].join(', ')}\n`);
