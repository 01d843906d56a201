import { EXTENSIONS_API_VERSION, type NodeInventory, type SandboxClaim, type SandboxWarmPool } from '@sandbox-scale/scale-core';
import { Registry } from 'prom-client';
import { normalizeCreatedBy, UPSTREAM_CLAIM_LATENCY_BUCKETS_MS, upstreamClaimMetrics } from './metrics';

const T0 = Date.parse('2026-01-01T00:00:10Z');

function claim(name: string, opts: { pool?: string; createdBy?: string; coldStarting?: boolean; created?: string } = {}): SandboxClaim {
  return {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxClaim',
    metadata: {
      name,
      namespace: 'team-a',
      uid: `uid-${name}`,
      creationTimestamp: opts.created ?? '2026-01-01T00:00:10Z',
      ...(opts.createdBy ? { labels: { 'agents.x-k8s.io/created-by': opts.createdBy } } : {}),
    },
    spec: { warmPoolRef: { name: opts.pool ?? 'python' } },
    ...(opts.coldStarting
      ? {
          status: {
            conditions: [{ type: 'Bound', status: 'False', reason: 'ColdStart', message: '', lastTransitionTime: '2026-01-01T00:00:10Z' }],
          },
        }
      : {}),
  } as SandboxClaim;
}

const pool = (name: string, template: string): SandboxWarmPool =>
  ({
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxWarmPool',
    metadata: { name, namespace: 'team-a' },
    spec: { replicas: 1, sandboxTemplateRef: { name: template }, coldStart: 'Never' },
  }) as SandboxWarmPool;

const assignment = (id: string) => ({ claimId: id, node: 'node-a', address: '10.0.0.1:7000', token: 't' });

function setup() {
  const registry = new Registry();
  const claims = new Map<string, SandboxClaim>();
  const pools = new Map([['team-a/python', pool('python', 'python-template')]]);
  const inventories: NodeInventory[] = [];
  const state = { leader: true, now: T0 };
  const m = upstreamClaimMetrics(registry, {
    claims: { get: (ns, n) => claims.get(`${ns}/${n}`) },
    pools: { get: (ns, n) => pools.get(`${ns}/${n}`) },
    inventories: () => inventories,
    isLeader: () => state.leader,
    now: () => state.now,
  });
  return { registry, claims, inventories, state, m };
}

interface Sample {
  name: string;
  labels: Record<string, string | number>;
  value: number;
}

async function values(registry: Registry, name: string): Promise<Sample[]> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`${name} is not registered`);
  return (await metric.get()).values.map((v) => ({
    name: (v as { metricName?: string }).metricName ?? name,
    labels: v.labels as Record<string, string | number>,
    value: v.value,
  }));
}

const sortKey = (s: Omit<Sample, 'name'>): string =>
  ['created_by', 'launch_type', 'warmpool_name'].map((k) => String(s.labels[k] ?? '')).join('/');

const withoutName = (s: Sample[]): Omit<Sample, 'name'>[] => s.map(({ labels, value }) => ({ labels, value }));

describe("agent-sandbox's metrics", () => {
  it('counts each bound claim once under its pool, template, launch type and creator', async () => {
    const { registry, m, state } = setup();
    state.now = T0 + 400;
    m.onClaimBound(claim('a', { createdBy: 'python-client' }), assignment('sb_1'), false);
    m.onClaimBound(claim('b'), assignment('sb_2'), true);
    m.onClaimBound(claim('c', { coldStarting: true, createdBy: 'someone-else' }), assignment('sb_3'), false);
    m.onClaimBound(claim('d', { pool: 'no-such-pool' }), assignment('sb_4'), false);
    const base = { namespace: 'team-a', pod_condition: 'ready' };
    expect(
      withoutName(await values(registry, 'agent_sandbox_claim_creation_total')).sort((x, y) => sortKey(x).localeCompare(sortKey(y))),
    ).toEqual([
      {
        labels: { ...base, sandbox_template: 'python-template', launch_type: 'warm', warmpool_name: 'python', created_by: 'python-client' },
        value: 1,
      },
      {
        labels: { ...base, sandbox_template: 'python-template', launch_type: 'cold', warmpool_name: 'python', created_by: 'unknown' },
        value: 1,
      },
      {
        labels: { ...base, sandbox_template: 'unknown', launch_type: 'warm', warmpool_name: 'no-such-pool', created_by: 'unknown' },
        value: 1,
      },
      {
        labels: { ...base, sandbox_template: 'python-template', launch_type: 'warm', warmpool_name: 'python', created_by: 'unknown' },
        value: 1,
      },
    ]);
  });

  it("observes SandboxClaims' creation-to-Bound latency in upstream's millisecond buckets, not fast-path claims", async () => {
    const { registry, m, state } = setup();
    state.now = T0 + 400;
    m.onClaimBound(claim('a'), assignment('sb_1'), false);
    m.onClaimBound(claim('fast'), assignment('sb_2'), true);
    state.now = T0 + 3_000;
    m.onClaimBound(claim('cold', { coldStarting: true }), assignment('sb_3'), false);
    const v = await values(registry, 'agent_sandbox_claim_startup_latency_ms');
    const of = (series: string, launch: string, le?: number): number | undefined =>
      v.find(
        (s) =>
          s.name === `agent_sandbox_claim_startup_latency_ms_${series}` &&
          s.labels.launch_type === launch &&
          s.labels.sandbox_template === 'python-template' &&
          s.labels.le === le,
      )?.value;
    const warmBuckets = v.filter((s) => s.name.endsWith('_bucket') && s.labels.launch_type === 'warm' && s.labels.le !== '+Inf');
    expect(warmBuckets.map((s) => s.labels.le)).toEqual(UPSTREAM_CLAIM_LATENCY_BUCKETS_MS);
    expect({
      count: of('count', 'warm'),
      sum: of('sum', 'warm'),
      le250: of('bucket', 'warm', 250),
      le500: of('bucket', 'warm', 500),
    }).toEqual({
      count: 1,
      sum: 400,
      le250: 0,
      le500: 1,
    });
    expect({
      count: of('count', 'cold'),
      sum: of('sum', 'cold'),
      le2500: of('bucket', 'cold', 2500),
      le5000: of('bucket', 'cold', 5000),
    }).toEqual({
      count: 1,
      sum: 3000,
      le2500: 0,
      le5000: 1,
    });
  });

  it("reports the live sandboxes by upstream's labels on the leader only", async () => {
    const { registry, m, state, claims, inventories } = setup();
    const bound = claim('a', { createdBy: 'go-client' });
    claims.set('team-a/a', bound);
    m.onClaimBound(bound, assignment('sb_1'), false);
    inventories.push({
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'NodeInventory',
      metadata: { name: 'node-a' },
      node: 'node-a',
      entries: [
        { name: 'team-a/a', id: 'sb_1', phase: 'Running', claimRef: 'claim:uid-a:team-a/a' },
        { name: 'team-b/made', id: 'sb_9', phase: 'Booting', claimRef: 'sandbox:uid-9:team-b/made', deadline: '2026-01-01T00:00:00Z' },
        { name: 'team-b/other', id: 'sb_8', phase: 'Booting', claimRef: 'sandbox:uid-8:team-b/other', deadline: '2026-01-01T00:00:00Z' },
      ],
    });
    expect(withoutName(await values(registry, 'agent_sandboxes'))).toEqual([
      {
        labels: {
          namespace: 'team-a',
          ready_condition: 'true',
          expired: 'false',
          launch_type: 'warm',
          sandbox_template: 'python-template',
          owned_by: 'SandboxClaim',
          created_by: 'go-client',
        },
        value: 1,
      },
      {
        labels: {
          namespace: 'team-b',
          ready_condition: 'false',
          expired: 'true',
          launch_type: 'unknown',
          sandbox_template: 'unknown',
          owned_by: 'None',
          created_by: 'unknown',
        },
        value: 2,
      },
    ]);
    // a follower caches the same inventories: a sum over replicas would count every sandbox twice
    state.leader = false;
    expect(await values(registry, 'agent_sandboxes')).toEqual([]);
  });

  it('keeps created_by to the values upstream keeps', () => {
    expect(['go-client', 'python-client', 'controller', 'kubectl', undefined].map(normalizeCreatedBy)).toEqual([
      'go-client',
      'python-client',
      'controller',
      'unknown',
      'unknown',
    ]);
  });
});
