import { CustomObjectsApi } from '@kubernetes/client-node';
import { kubeApiClient } from '@sandbox-scale/kube-runtime';
import { NodeInfoSchema } from '@sandbox-scale/sandboxd-client';
import { eventually, kubectl, runSuffix } from '../src/index';
import { MAX_REPLICAS_PER_NAMESPACE, MAX_REPLICAS_PER_POOL, WARMPOOL_DRIVER_ARGS } from '../src/installed/installed-values';
import { startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCall } from '../src/testing/sandboxd';
import { grantEditRole } from '../src/testing/tenant-role';

// What one tenant can keep warm of the nodes every tenant shares is bounded: a namespace editor
// (the chart's edit role, nothing more) sets spec.replicas of its pools far over warmpool-driver's
// limits, with kubectl and through the scale subresource; the nodes are asked for no more than the
// limits, each pool says why in a condition naming spec.replicas and the limit, and another
// tenant's pool fills to Ready meanwhile.

const suffix = runSuffix();
const busyNs = `tpb-${suffix}`;
const otherNs = `tpo-${suffix}`;
const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' };
const FLOOD = 1_000_000;
const OTHER_REPLICAS = 5;
/** What the namespace limit leaves the second pool once the first holds the per-pool limit. */
const SECOND_SHARE = MAX_REPLICAS_PER_NAMESPACE - MAX_REPLICAS_PER_POOL;

let sys: SystemUnderTest;
const kubeconfigs = new Map<string, string>();

interface PoolCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface PoolObject {
  spec: { replicas: number };
  status?: { readyReplicas?: number; poolKey?: { template: string; net?: string; size?: string }; conditions?: PoolCondition[] };
}

const manifests = (namespace: string, pools: { name: string; replicas: number }[]): string =>
  pools
    .flatMap(({ name, replicas }) => [
      {
        apiVersion: `${EXT.group}/${EXT.version}`,
        kind: 'SandboxTemplate',
        metadata: { name, namespace },
        spec: {
          podTemplate: {
            spec: {
              containers: [
                {
                  name: 'agent',
                  image: `ghcr.io/example/bounds-${name}-${suffix}:1`,
                  resources: { requests: { cpu: '1', memory: '1Gi' } },
                },
              ],
            },
          },
        },
      },
      {
        apiVersion: `${EXT.group}/${EXT.version}`,
        kind: 'SandboxWarmPool',
        metadata: { name, namespace },
        spec: { replicas, sandboxTemplateRef: { name } },
      },
    ])
    .map((o) => JSON.stringify(o))
    .join('\n');

/** kubectl as the namespace's editor; a failure throws with its stderr. */
async function as(namespace: string, args: string[], input?: string): Promise<string> {
  const r = await kubectl(['-n', namespace, ...args], {
    kubeconfig: kubeconfigs.get(namespace) ?? '',
    ...(input !== undefined ? { input } : {}),
  });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} as the editor of ${namespace}: ${r.stderr}`);
  return r.stdout;
}

async function readPool(namespace: string, name: string): Promise<PoolObject> {
  return (await kubeApiClient(sys.kubeConfig, CustomObjectsApi).getNamespacedCustomObject({
    ...EXT,
    namespace,
    plural: 'sandboxwarmpools',
    name,
  })) as PoolObject;
}

const conditionOf = (p: PoolObject, type: string): PoolCondition | undefined => p.status?.conditions?.find((c) => c.type === type);

/** Waits until the pool's condition has this status and reason; returns it. */
async function waitCondition(namespace: string, name: string, type: string, status: string, reason: string): Promise<PoolCondition> {
  return eventually(
    async () => {
      const c = conditionOf(await readPool(namespace, name), type);
      if (c?.status !== status || c.reason !== reason) throw new Error(`${namespace}/${name} ${type}: ${JSON.stringify(c)}`);
      return c;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/** The target and warm count every node reports for the pool's recorded key, summed. */
async function heldOnNodes(namespace: string, name: string): Promise<{ target: number; warm: number }> {
  const key = (await readPool(namespace, name)).status?.poolKey;
  if (!key) throw new Error(`${namespace}/${name} records no pool key yet`);
  const out = { target: 0, warm: 0 };
  for (const node of sys.nodes) {
    const res = await sandboxdCall(node, '/v1/info');
    if (res.status !== 200) throw new Error(`GET ${node.url}/v1/info: ${res.status}`);
    for (const p of NodeInfoSchema.parse(await res.json()).pools)
      if (p.key.template === key.template && p.key.net === (key.net ?? 'none') && p.key.size === (key.size ?? 'small')) {
        out.target += p.target;
        out.warm += p.warm;
      }
  }
  return out;
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [busyNs, otherNs],
    local: { nodes: 2, speed: 0, publishInterval: '1s', extraArgs: { 'warmpool-driver': WARMPOOL_DRIVER_ARGS } },
  });
  for (const ns of [busyNs, otherNs]) {
    kubeconfigs.set(ns, (await sys.tenant(ns, 'editor')).path);
    await grantEditRole(sys.kubeConfig, ns, 'editor');
  }
  // the busy tenant's two pools, small at first; "first" is the older (or, made in the same second, first by name)
  await eventually(
    () =>
      as(
        busyNs,
        ['apply', '-f', '-'],
        manifests(busyNs, [
          { name: 'first', replicas: 2 },
          { name: 'second', replicas: 2 },
        ]),
      ),
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  await waitPoolReady(sys, busyNs, 2, { name: 'first', timeoutMs: 120_000 });
  await waitPoolReady(sys, busyNs, 2, { name: 'second', timeoutMs: 120_000 });
}, 300_000);

afterAll(async () => {
  // the nodes are shared with the suites after this one (installed): their warm VMs go with the pools
  if (sys)
    for (const ns of [busyNs, otherNs])
      await kubeApiClient(sys.kubeConfig, CustomObjectsApi)
        .deleteCollectionNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxwarmpools' })
        .catch(() => undefined);
  await sys?.stop();
}, 120_000);

describe("one tenant cannot take every node's warm capacity", () => {
  it("holds a namespace editor's pools to the per-pool and per-namespace limits, says so on each pool, and another tenant's pool fills meanwhile", async () => {
    // spec.replicas far over the limits: once by apply, once through the scale subresource
    await as(
      busyNs,
      ['apply', '-f', '-'],
      manifests(busyNs, [
        { name: 'first', replicas: FLOOD },
        { name: 'second', replicas: 2 },
      ]),
    );
    await as(busyNs, ['scale', 'sandboxwarmpool/second', `--replicas=${FLOOD}`]);
    // the API server took both: the limit is the driver's policy, not a refusal
    expect((await readPool(busyNs, 'first')).spec.replicas).toBe(FLOOD);
    expect((await readPool(busyNs, 'second')).spec.replicas).toBe(FLOOD);

    const first = await waitCondition(busyNs, 'first', 'ReplicasLimited', 'True', 'ReplicasOverPoolLimit');
    expect(first.message).toBe(
      `spec.replicas ${FLOOD} is over the per-pool limit ${MAX_REPLICAS_PER_POOL} (warmpool-driver --max-replicas-per-pool); ${MAX_REPLICAS_PER_POOL} are kept warm`,
    );
    const second = await waitCondition(busyNs, 'second', 'ReplicasLimited', 'True', 'ReplicasOverNamespaceLimit');
    expect(second.message).toContain(`spec.replicas ${FLOOD}`);
    expect(second.message).toContain(`per-namespace limit ${MAX_REPLICAS_PER_NAMESPACE} (warmpool-driver --max-replicas-per-namespace)`);
    expect(second.message).toContain(`hold ${MAX_REPLICAS_PER_POOL}; ${SECOND_SHARE} are kept warm`);

    // another tenant's pool, made while the busy namespace holds all it may: it fills to Ready
    await eventually(() => as(otherNs, ['apply', '-f', '-'], manifests(otherNs, [{ name: 'other', replicas: OTHER_REPLICAS }])), {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    await waitPoolReady(sys, otherNs, OTHER_REPLICAS, { name: 'other', timeoutMs: 120_000 });
    const otherReady = await waitCondition(otherNs, 'other', 'Ready', 'True', 'PoolWarm');
    const otherLimited = await waitCondition(otherNs, 'other', 'ReplicasLimited', 'False', 'WithinLimits');

    // the nodes are asked for the limits and fill to them, never past
    let most = { first: 0, second: 0 };
    const held = await eventually(
      async () => {
        const h = { first: await heldOnNodes(busyNs, 'first'), second: await heldOnNodes(busyNs, 'second') };
        most = {
          first: Math.max(most.first, h.first.target, h.first.warm),
          second: Math.max(most.second, h.second.target, h.second.warm),
        };
        if (h.first.warm !== MAX_REPLICAS_PER_POOL || h.second.warm !== SECOND_SHARE) throw new Error(`nodes hold ${JSON.stringify(h)}`);
        return h;
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    expect(held).toEqual({
      first: { target: MAX_REPLICAS_PER_POOL, warm: MAX_REPLICAS_PER_POOL },
      second: { target: SECOND_SHARE, warm: SECOND_SHARE },
    });
    expect(most).toEqual({ first: MAX_REPLICAS_PER_POOL, second: SECOND_SHARE });
    await waitPoolReady(sys, busyNs, MAX_REPLICAS_PER_POOL, { name: 'first', timeoutMs: 60_000 });
    await waitPoolReady(sys, busyNs, SECOND_SHARE, { name: 'second', timeoutMs: 60_000 });
    // full to the limit, yet not Ready: the spec asks for more than is kept warm
    const firstReady = await waitCondition(busyNs, 'first', 'Ready', 'False', 'ReplicasOverLimit');
    expect(firstReady.message).toContain(`spec.replicas ${FLOOD}`);

    // the tenant sees it in `kubectl describe`: the condition, and the Warning event
    const described = await eventually(
      async () => {
        const out = await as(busyNs, ['describe', 'sandboxwarmpool', 'first']);
        if (!/Warning\s+ReplicasOverPoolLimit/.test(out)) throw new Error(`no ReplicasOverPoolLimit event yet:\n${out}`);
        return out;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(described).toContain('ReplicasLimited');
    expect(described).toContain(`per-pool limit ${MAX_REPLICAS_PER_POOL}`);

    // the first pool comes back under: its condition clears and the second gets its share
    await as(busyNs, ['scale', 'sandboxwarmpool/first', '--replicas=2']);
    const cleared = await waitCondition(busyNs, 'first', 'ReplicasLimited', 'False', 'WithinLimits');
    const secondNow = await waitCondition(busyNs, 'second', 'ReplicasLimited', 'True', 'ReplicasOverPoolLimit');
    const after = await eventually(
      async () => {
        const h = await heldOnNodes(busyNs, 'second');
        if (h.target !== MAX_REPLICAS_PER_POOL) throw new Error(`second's targets sum to ${h.target}`);
        return h;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(after.target).toBe(MAX_REPLICAS_PER_POOL);
    expect(secondNow.message).toContain(`${MAX_REPLICAS_PER_POOL} are kept warm`);

    const figures = {
      test: 'tenant-bounds-pools',
      per_pool_limit: MAX_REPLICAS_PER_POOL,
      per_namespace_limit: MAX_REPLICAS_PER_NAMESPACE,
      spec_replicas: FLOOD,
      first_held: held.first.warm,
      second_held: held.second.warm,
      second_target_after_first_shrank: after.target,
      other_ready: otherReady.status,
    };
    expect(figures).toEqual({
      test: 'tenant-bounds-pools',
      per_pool_limit: MAX_REPLICAS_PER_POOL,
      per_namespace_limit: MAX_REPLICAS_PER_NAMESPACE,
      spec_replicas: FLOOD,
      first_held: MAX_REPLICAS_PER_POOL,
      second_held: SECOND_SHARE,
      second_target_after_first_shrank: MAX_REPLICAS_PER_POOL,
      other_ready: 'True',
    });
    expect([cleared.reason, otherLimited.reason]).toEqual(['WithinLimits', 'WithinLimits']);
    console.log(JSON.stringify(figures));
  }, 600_000);
});
