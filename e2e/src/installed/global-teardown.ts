/** Stops the installed run's cluster and says how long the install and the suites took. */
export default async function globalTeardown(): Promise<void> {
  const run = globalThis.__sandboxScaleInstalled;
  globalThis.__sandboxScaleInstalled = undefined;
  if (!run) return;
  const suitesS = (Date.now() - run.readyAt) / 1000;
  await run.system.stop();
  process.stderr.write(
    `[installed] install ${(run.setupMs / 1000).toFixed(0)} s, suites against it ${suitesS.toFixed(0)} s, total ${(run.setupMs / 1000 + suitesS).toFixed(0)} s\n`,
  );
}
