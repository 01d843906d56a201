/**
 * Runs a bench's main and ends the process when it settles: with `process.exitCode` (a bench that
 * measured a wrong result sets it) once main resolves, without waiting on the keep-alive sockets
 * and timers of the systems it drove; with 1 and the error's stack when main fails.
 */
export function runBench(main: () => Promise<void> | void): void {
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
