// `npm start`: the whole system locally — control plane, chart (CRDs, RBAC, APIService), simulated
// sandboxd nodes, the four apps as their own processes, the examples, and the kubectl-sandbox
// plugin's package in dist/sandbox-sdk — until Ctrl-C.
import { startLocalSystem } from '../system/local-system';
import { buildSdkPackage, LOCAL_SDK_PACKAGE_DIR } from '../testing/sdk-package';
import { stableKubeconfigPath, waitForSignal } from './foreground';

async function main(): Promise<void> {
  const started = Date.now();
  const log = (m: string): void => {
    process.stderr.write(`[start] ${m}\n`);
  };
  const stopping = waitForSignal();
  // the kubectl-sandbox plugin, built as its package is published, while the system starts: the
  // README puts its bin directory on PATH
  const sdk = buildSdkPackage(LOCAL_SDK_PACKAGE_DIR).then((p) => log(`kubectl-sandbox plugin built in ${p.bin}`));
  const [system] = await Promise.race([
    Promise.all([startLocalSystem({ log }), sdk]),
    stopping.then(() => {
      throw new Error('interrupted while starting');
    }),
  ]);
  const kubeconfig = stableKubeconfigPath(system.kubeconfigPath);
  log(
    `ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${system.nodes.length} nodes (${system.nodes.map((n) => n.name).join(', ')}), app logs in ${system.logDir}`,
  );
  process.stdout.write(`export KUBECONFIG=${kubeconfig}\n`);
  // the fast path is a port on loopback here, not the chart's Service: the plugin and the SDK read
  // where it is, and the CA its certificate chains to, from these two variables
  process.stdout.write(`export SANDBOX_SCALE_FAST_PATH_URL=${system.fastPathUrl}\n`);
  process.stdout.write(`export SANDBOX_SCALE_FAST_PATH_CA_FILE=${system.servingCaPath}\n`);
  // e2b's SDKs: its control-plane API and envd on one loopback listener, plain HTTP here
  process.stdout.write(`export E2B_API_URL=${system.e2bUrls[0] ?? ''}\n`);
  process.stdout.write(`export E2B_SANDBOX_URL=${system.e2bUrls[0] ?? ''}\n`);
  // the sandbox router agent-sandbox's Python client takes as api_url in Direct mode (with a
  // Kubernetes bearer token), and the CA its certificate chains to (the client's ca_cert); the
  // URL printed last, so a reader of these lines knows they are all out
  process.stdout.write(`export SANDBOX_SCALE_ROUTER_CA_FILE=${system.servingCaPath}\n`);
  process.stdout.write(`export SANDBOX_SCALE_ROUTER_URL=${system.routerUrls[0] ?? ''}\n`);
  process.stderr.write(
    [
      '',
      'Next, in another shell (after the export lines above):',
      '  kubectl get sandboxwarmpools,sandboxclaims,sandboxes -A',
      '  kubectl describe sandboxclaim agent-1',
      '  kubectl scale sandboxwarmpool/python-agent --replicas=20',
      '  kubectl get nodeinventories',
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  await stopping;
  log('stopping');
  await system.stop();
}

main().catch((err: unknown) => {
  process.stderr.write(`[start] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
