export default async function globalTeardown(): Promise<void> {
  const cp = globalThis.__sandboxScaleControlPlane;
  globalThis.__sandboxScaleControlPlane = undefined;
  if (cp) await cp.stop();
}
