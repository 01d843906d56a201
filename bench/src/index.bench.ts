/**
 * Heap bytes per entry of the claim-time index (scale-core ClaimIndex), measured with
 * realistic keys, against the index's own estimate and the ~206 B the reference planned.
 * Prints a table, then ONE JSON line (the last line). Figures only: nothing here fails.
 *
 *   npx nx run bench:index    (tsx with NODE_OPTIONS=--expose-gc: the figures need global.gc)
 */
import { ClaimIndex, estimateClaimIndexEntryBytes, seededRng, type Rng } from '@sandbox-scale/scale-core';
import { runBench } from './run-bench';

const SIZES = [100_000, 1_000_000] as const;
const REFERENCE_BYTES_PER_ENTRY = 206;
const NAMESPACES = 200;
const NODES = 400;
const ALPHANUM = 'bcdfghjklmnpqrstvwxz2456789';
const HEX = '0123456789abcdef';

interface Measurement {
  entries: number;
  measuredBytesPerEntry: number;
  estimateBytesPerEntry: number;
  buildMs: number;
}

function randomChars(rng: Rng, alphabet: string, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(rng() * alphabet.length)];
  return s;
}

/*
 * Names as generateName makes them (`<prefix>-` + 5 chars) in one of a few hundred team
 * namespaces, and sandboxd claim ids (`sb_` + 16 hex). The id is decoded from bytes, as it
 * is when it arrives in a sandboxd reply: a flat string. Concatenating it here would leave a
 * cons string behind and measure a layout the index never sees in production.
 */
function locationAt(rng: Rng): { namespace: string; name: string; node: string; claimId: string } {
  const namespace = `team-${Math.floor(rng() * NAMESPACES)}`;
  const name = `sandbox-${randomChars(rng, ALPHANUM, 5)}`;
  const node = `node-${Math.floor(rng() * NODES)}`;
  const claimId = Buffer.from(`sb_${randomChars(rng, HEX, 16)}`, 'latin1').toString('latin1');
  return { namespace, name, node, claimId };
}

function settledHeap(gc: () => void): number {
  // Several passes: the first ones still free garbage made while building.
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
}

function measure(entries: number, gc: () => void): Measurement {
  const rng = seededRng(entries);
  const before = settledHeap(gc);
  const start = performance.now();
  const index = new ClaimIndex({ maxBytes: Number.MAX_SAFE_INTEGER });
  while (index.size < entries) index.put(locationAt(rng));
  const buildMs = performance.now() - start;
  const after = settledHeap(gc);
  const measuredBytesPerEntry = (after - before) / index.size;
  const estimateBytesPerEntry = index.bytes / index.size;
  // Keeps the index reachable until after the second measurement.
  if (index.size !== entries) throw new Error(`index holds ${index.size} entries, expected ${entries}`);
  return { entries, measuredBytesPerEntry, estimateBytesPerEntry, buildMs };
}

const fmt = (n: number, digits = 1): string => n.toFixed(digits);

function printTable(rows: readonly Measurement[]): void {
  const header = ['entries', 'measured B/entry', 'estimate B/entry', 'reference B/entry', 'measured/reference', 'build ms'];
  const cells = rows.map((m) => [
    String(m.entries),
    fmt(m.measuredBytesPerEntry),
    fmt(m.estimateBytesPerEntry),
    String(REFERENCE_BYTES_PER_ENTRY),
    fmt(m.measuredBytesPerEntry / REFERENCE_BYTES_PER_ENTRY, 2),
    fmt(m.buildMs, 0),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (row: string[]): string => row.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  process.stdout.write(`${line(header)}\n${cells.map(line).join('\n')}\n`);
}

function main(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) {
    process.stderr.write('bench:index needs global.gc: run it with NODE_OPTIONS=--expose-gc (npx nx run bench:index does)\n');
    process.exitCode = 2;
    return;
  }
  const sample = locationAt(seededRng(1));
  process.stdout.write(
    `claim index heap per entry; node ${process.version} ${process.arch}; sample key ${sample.namespace}/${sample.name} -> ${sample.claimId}\n`,
  );
  const rows = SIZES.map((n) => measure(n, gc));
  printTable(rows);
  const largest = rows[rows.length - 1];
  if (largest === undefined) throw new Error('no measurement');
  const result = {
    bytes_per_entry: Math.round(largest.measuredBytesPerEntry),
    entries: largest.entries,
    estimate_bytes_per_entry: Math.round(largest.estimateBytesPerEntry),
    reference_bytes_per_entry: REFERENCE_BYTES_PER_ENTRY,
    ratio_vs_reference: Number((largest.measuredBytesPerEntry / REFERENCE_BYTES_PER_ENTRY).toFixed(2)),
    by_size: rows.map((m) => ({
      entries: m.entries,
      bytes_per_entry: Math.round(m.measuredBytesPerEntry),
      estimate_bytes_per_entry: Math.round(m.estimateBytesPerEntry),
    })),
    sample_estimate_bytes: estimateClaimIndexEntryBytes(sample.namespace, sample.name, sample.claimId),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

runBench(main);
