// `npm start`: the whole system locally. Grows with each component; today: the control plane.
import { startControlPlane } from '../control-plane/control-plane';
import { stableKubeconfigPath, waitForSignal } from './foreground';

async function main(): Promise<void> {
  const started = Date.now();
  const cp = await startControlPlane({ log: (m) => process.stderr.write(`[cluster] ${m}\n`) });
  const kubeconfig = stableKubeconfigPath(cp.kubeconfigPath);
  process.stderr.write(`[cluster] control plane ready in ${Date.now() - started} ms (${cp.server}); binaries in ${cp.binDir}\n`);
  process.stdout.write(`export KUBECONFIG=${kubeconfig}\n`);
  process.stderr.write(`[cluster] try: kubectl get --raw /readyz   (Ctrl-C stops everything)\n`);
  await waitForSignal();
  process.stderr.write('[cluster] stopping\n');
  await cp.stop();
}

main().catch((err: unknown) => {
  process.stderr.write(`[cluster] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
