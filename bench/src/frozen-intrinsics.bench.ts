/**
 * What freezing the built-in prototypes costs (every app freezes them at start, in runApp): the
 * gateway bench (a claim through ClaimGateway and undici against a sandboxd-sim node, and the
 * same claim straight through sandboxd-client) run in its own process four times, in the order
 * open, frozen, frozen, open, so neither setting always runs first on a cold machine. Prints a
 * table, then ONE JSON line (the last line): the p50 of each setting (the median of its runs) and
 * frozen ÷ open. Figures only: nothing passes or fails on time.
 *
 *   npx nx run bench:frozen-intrinsics        (GATEWAY_ITERS=1000 for a shorter run)
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FREEZE_ENV, runBench } from './run-bench';

const run = promisify(execFile);
const ITERS = process.env.GATEWAY_ITERS ?? '2000';
const ORDER = [false, true, true, false] as const;

interface GatewayFigures {
  gateway_p50_ms: number;
  direct_p50_ms: number;
  claims: number;
  records_written: number;
}

async function gatewayRun(frozen: boolean): Promise<GatewayFigures> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', join(__dirname, 'gateway.bench.ts')], {
    env: { ...process.env, GATEWAY_ITERS: ITERS, GATEWAY_WARMUP: '200', [FREEZE_ENV]: frozen ? '1' : '0' },
    maxBuffer: 1 << 24,
  });
  const last = stdout.trim().split('\n').pop() ?? '';
  const figures = JSON.parse(last) as GatewayFigures;
  if (figures.claims !== Number(ITERS) || figures.records_written < figures.claims)
    throw new Error(`a gateway run did not finish its claims: ${last}`);
  return figures;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
};

async function main(): Promise<void> {
  const runs: Array<{ frozen: boolean; figures: GatewayFigures }> = [];
  for (const frozen of ORDER) runs.push({ frozen, figures: await gatewayRun(frozen) });
  const of = (frozen: boolean, k: 'gateway_p50_ms' | 'direct_p50_ms'): number =>
    median(runs.filter((r) => r.frozen === frozen).map((r) => r.figures[k]));
  const out = {
    open_gateway_p50_ms: +of(false, 'gateway_p50_ms').toFixed(4),
    frozen_gateway_p50_ms: +of(true, 'gateway_p50_ms').toFixed(4),
    gateway_ratio_p50: +(of(true, 'gateway_p50_ms') / of(false, 'gateway_p50_ms')).toFixed(3),
    open_direct_p50_ms: +of(false, 'direct_p50_ms').toFixed(4),
    frozen_direct_p50_ms: +of(true, 'direct_p50_ms').toFixed(4),
    direct_ratio_p50: +(of(true, 'direct_p50_ms') / of(false, 'direct_p50_ms')).toFixed(3),
    runs: runs.length,
    claims_per_run: Number(ITERS),
  };
  console.log('prototypes   path      p50 ms (median of runs)');
  for (const frozen of [false, true])
    for (const k of ['gateway_p50_ms', 'direct_p50_ms'] as const)
      console.log(`${(frozen ? 'frozen' : 'open').padEnd(12)} ${k.split('_')[0]?.padEnd(9)} ${of(frozen, k).toFixed(4).padStart(8)}`);
  console.log(`frozen ÷ open: gateway ${out.gateway_ratio_p50}, direct ${out.direct_ratio_p50}`);
  console.log(JSON.stringify(out));
}

runBench(main);
