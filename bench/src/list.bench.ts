// bench:list — `kubectl get sandboxes -A -o json` through the APIService vs reading the
// NodeInventory objects raw, on a control plane this bench starts. Prints a table, then JSON.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { applyObject, createLogger } from '@sandbox-scale/kube-runtime';
import { applyCrds, createCA, createLeaf, freePort, startControlPlane } from '@sandbox-scale/e2e';
import { startSandboxApiserver } from '@sandbox-scale/sandbox-apiserver';

const run = promisify(execFile);
const NODES = Number(process.env.BENCH_NODES ?? 40);
const SANDBOXES = Number(process.env.BENCH_SANDBOXES ?? 100_000);
const RUNS = 5;
const RESOURCE = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1', plural: 'nodeinventories', kind: 'NodeInventory', namespaced: false };

const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

async function main(): Promise<void> {
  const cp = await startControlPlane({ controllerManager: false });
  const kubectl = (args: string[]) => run(join(cp.binDir, 'kubectl'), args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath }, maxBuffer: 1 << 30 });
  try {
    await applyCrds(cp.kubeConfig, 'charts/sandbox-scale/crds');
    const perNode = Math.ceil(SANDBOXES / NODES);
    for (let n = 0; n < NODES; n++) {
      const node = `bench-node-${n}`;
      const entries = Array.from({ length: perNode }, (_, i) => ({ name: `team-${i % 20}/sb-${n}-${i}`, id: `sb_${n.toString(16)}${i.toString(16).padStart(8, '0')}`, phase: 'Running', claimRef: `team-${i % 20}/sb-${n}-${i}`, addr: `10.${n}.${(i >> 8) & 255}.${i & 255}:7777`, deadline: '2030-01-01T00:00:00Z', claimedAt: '2026-01-01T00:00:00Z' }));
      await applyObject(cp.kubeConfig, { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'NodeInventory', metadata: { name: node }, node, address: `127.0.0.1:1`, entries }, { fieldManager: 'bench', force: true, resource: RESOURCE });
    }
    const ca = await createCA('bench-ca');
    const leaf = await createLeaf(ca, { commonName: 'sandbox-apiserver', dnsNames: ['sandbox-apiserver.default.svc', 'localhost'], server: true });
    const cert = join(tmpdir(), 'bench-list.crt');
    const key = join(tmpdir(), 'bench-list.key');
    writeFileSync(cert, leaf.cert);
    writeFileSync(key, leaf.key);
    const port = await freePort();
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const server = await startSandboxApiserver({ kubeConfig: cp.kubeConfig, securePort: port, bindAddress: '127.0.0.1', tlsCertFile: cert, tlsPrivateKeyFile: key, log: createLogger({ name: 'bench', level: 'silent' }) });
    await server.synced;
    gc();
    const heapAfter = process.memoryUsage().heapUsed;
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'sandbox-apiserver', namespace: 'default' }, spec: { type: 'ExternalName', externalName: 'localhost' } };
    const apisvc = { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: 'v1beta1.agents.x-k8s.io' }, spec: { group: 'agents.x-k8s.io', version: 'v1beta1', groupPriorityMinimum: 1000, versionPriority: 15, service: { namespace: 'default', name: 'sandbox-apiserver', port }, caBundle: Buffer.from(ca.cert).toString('base64') } };
    const manifest = join(tmpdir(), 'bench-list-apiservice.json');
    writeFileSync(manifest, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [svc, apisvc] }));
    await kubectl(['apply', '-f', manifest]);
    for (let i = 0; ; i++) {
      const ok = await kubectl(['get', '--raw', '/apis/agents.x-k8s.io/v1beta1']).then(() => true, () => false);
      if (ok) break;
      if (i > 120) throw new Error('APIService never became available');
      await new Promise((r) => setTimeout(r, 500));
    }
    const timed = async (args: string[]): Promise<{ ms: number; bytes: number }> => {
      const t0 = performance.now();
      const out = await kubectl(args);
      return { ms: performance.now() - t0, bytes: out.stdout.length };
    };
    const list: number[] = [];
    const raw: number[] = [];
    let count = 0;
    for (let i = 0; i < RUNS; i++) {
      const l = await timed(['get', 'sandboxes', '-A', '-o', 'json']);
      list.push(l.ms);
      if (i === 0) count = (JSON.parse((await kubectl(['get', 'sandboxes', '-A', '-o', 'json'])).stdout) as { items: unknown[] }).items.length;
      raw.push((await timed(['get', 'nodeinventories', '-o', 'json'])).ms);
    }
    await server.stop();
    const listP50 = p50(list);
    const rawP50 = p50(raw);
    const heapPer = Math.round((heapAfter - heapBefore) / Math.max(1, count));
    console.log(`sandboxes listed   ${count} (${NODES} nodes x ${perNode})`);
    console.log(`list p50 (ms)      ${listP50.toFixed(0)}   runs ${list.map((x) => x.toFixed(0)).join(' ')}`);
    console.log(`raw read p50 (ms)  ${rawP50.toFixed(0)}   runs ${raw.map((x) => x.toFixed(0)).join(' ')}`);
    console.log(`ratio              ${(listP50 / rawP50).toFixed(2)}`);
    console.log(`heap / sandbox (B) ${heapPer}`);
    console.log(JSON.stringify({ sandboxes: count, ratio: Number((listP50 / rawP50).toFixed(3)), list_p50_ms: Math.round(listP50), heap_bytes_per_sandbox: heapPer }));
  } finally {
    await cp.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
