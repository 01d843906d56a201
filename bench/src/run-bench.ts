import { freezeIntrinsics } from '@sandbox-scale/kube-runtime';

/** Set to 1, a bench runs with the built-in prototypes frozen, as every app runs (bench:frozen-intrinsics compares). */
export const FREEZE_ENV = 'BENCH_FREEZE_INTRINSICS';

/**
 * Runs a bench's main and ends the process when it settles: with `process.exitCode` (a bench that
 * measured a wrong result sets it) once main resolves, without waiting on the keep-alive sockets
 * and timers of the systems it drove; with 1 and the error's stack when main fails.
 */
export function runBench(main: () => Promise<void> | void): void {
  if (process.env[FREEZE_ENV] === '1') freezeIntrinsics();
  Promise.resolve()
    .then(main)
    .then(
      () => process.exit(process.exitCode ?? 0),
      (err: unknown) => {
        process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
        process.exit(1);
      },
    );
}
