#!/usr/bin/env node
// Reads `go build -v` / `go install -v` output on stdin and reports progress on stderr: the
// package lines (one import path each) are counted, not echoed; every other line (downloads,
// compiler errors) passes through; a heartbeat names the count and the last package every
// interval, also while the linker runs silently, so a build of several minutes never looks stuck.
// Usage: go build -v ... 2>&1 | node build-progress.mjs LABEL [INTERVAL_SECONDS]
import { createInterface } from 'node:readline';

const label = process.argv[2] ?? 'go build';
const intervalMs = Number(process.argv[3] ?? '15') * 1000;
const started = Date.now();
let packages = 0;
let last = '';

const elapsed = () => {
  const s = Math.round((Date.now() - started) / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
};
const say = (msg) => process.stderr.write(`[tools] ${label}: ${msg}\n`);

const timer = setInterval(() => say(`${packages} packages compiled${last ? `, last ${last}` : ''} (${elapsed()})`), intervalMs);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  // a package line is a bare import path; anything with a space or a colon is a message
  if (/^[\w.\-/~]+$/.test(line)) {
    packages++;
    last = line;
  } else if (line.trim() !== '') process.stderr.write(`${line}\n`);
});
lines.on('close', () => {
  clearInterval(timer);
  say(`${packages} packages compiled in ${elapsed()}`);
});
