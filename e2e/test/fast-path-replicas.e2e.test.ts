import { Agent, request } from 'undici';
import { FAST_PATH_AUDIENCE } from '@sandbox-scale/scale-core';
import { runSuffix, serviceAccountToken } from '../src/index';
import { CLAIM_CONTROLLER_ARGS, FAST_PATH_CAP } from '../src/installed/installed-values';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCall } from '../src/testing/sandboxd';
import { grantEditRole } from '../src/testing/tenant-role';

// The fast path on the chart's two claim-controller replicas, each called directly: one name
// sent to both at the same moment is handed out once, and a burst over the per-namespace cap
// split across both passes it by none, while a tenant of another namespace is still served.
// Each namespace's fast path is served by one replica (the other hands its claims over), so
// both bounds hold across replicas.

const IMAGE = 'ghcr.io/example/replicas-agent:1.0';
const CAP = FAST_PATH_CAP;
const suffix = runSuffix();
const nameNs = `fpr-n-${suffix}`;
const capNs = `fpr-c-${suffix}`;
const otherNs = `fpr-o-${suffix}`;
// each round delivers one claim, which counts against the cap like any other
const SAME_NAME_ROUNDS = CAP;
const BURST = 4 * CAP;

let sys: SystemUnderTest;
let dispatcher: Agent;
let urls: string[] = [];
const tokens = new Map<string, string>();
/** Each tenant's ordinary ServiceAccount token (the API server's audience). */
const apiTokens = new Map<string, string>();

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function fastClaim(url: string, namespace: string, name: string): Promise<Answer> {
  const r = await request(`${url}/v1/claims`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.get(namespace) ?? ''}` },
    body: JSON.stringify({ namespace, name, warmPool: 'agent' }),
  });
  return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
}

/** VMs the nodes delivered under a claim reference of `namespace`. */
async function nodeDeliveriesIn(namespace: string): Promise<number> {
  let n = 0;
  for (const node of sys.nodes) {
    const rows = ((await (await sandboxdCall(node, '/v1/sandboxes')).json()) as { sandboxes?: { claim_ref?: string }[] }).sandboxes ?? [];
    n += rows.filter((r) => r.claim_ref?.includes(`:${namespace}/`)).length;
  }
  return n;
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [nameNs, capNs, otherNs],
    local: {
      nodes: 2,
      speed: 0,
      publishInterval: '1s',
      // the chart's shape: two replicas, both serving the fast path
      claimControllerReplicas: 2,
      extraArgs: { 'claim-controller': [...CLAIM_CONTROLLER_ARGS, '--fast-path-max-claims-per-namespace', String(CAP)] },
    },
  });
  urls = await sys.fastPathUrls();
  dispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(urls[0] ?? '') } });
  // each namespace's tenant holds exactly the chart's edit role there
  for (const ns of [nameNs, capNs, otherNs]) {
    apiTokens.set(ns, (await sys.tenant(ns, 'agent')).token);
    await grantEditRole(sys.kubeConfig, ns, 'agent');
    tokens.set(ns, await serviceAccountToken(sys.kubeConfig, ns, 'agent', [FAST_PATH_AUDIENCE]));
  }
  const pools = [
    [nameNs, SAME_NAME_ROUNDS + 2],
    [capNs, BURST],
    [otherNs, 2],
  ] as const;
  for (const [ns, replicas] of pools) await applyWarmPool(sys, ns, { image: IMAGE, replicas });
  for (const [ns, replicas] of pools) await waitPoolReady(sys, ns, replicas, { atLeast: true, timeoutMs: 120_000 });
}, 300_000);

afterAll(async () => {
  await dispatcher?.close();
  await sys?.stop();
}, 120_000);

describe('the fast path across claim-controller replicas', () => {
  const figures: Record<string, number> = {};

  it('is served by both replicas, each called directly', () => {
    expect(urls).toHaveLength(2);
    expect(new Set(urls).size).toBe(2);
  });

  it('hands out one name sent to both replicas at the same moment once, and answers the other 409', async () => {
    let once = 0;
    for (let i = 0; i < SAME_NAME_ROUNDS; i++) {
      const answers = await Promise.all(urls.map((u) => fastClaim(u, nameNs, `same-${i}`)));
      const codes = answers.map((a) => a.status).sort();
      expect(codes).toEqual([200, 409]);
      expect(answers.find((a) => a.status === 409)?.body).toMatchObject({ kind: 'Status', reason: 'AlreadyExists', code: 409 });
      once += 1;
    }
    figures.same_name_rounds = SAME_NAME_ROUNDS;
    figures.same_name_answered_once = once;
    expect(await nodeDeliveriesIn(nameNs)).toBe(SAME_NAME_ROUNDS);
  });

  it('passes the per-namespace cap by none with a burst split across both replicas, and serves another tenant meanwhile', async () => {
    const burst = Promise.all(Array.from({ length: BURST }, (_, i) => fastClaim(urls[i % urls.length] ?? '', capNs, `burst-${i}`)));
    // another namespace's tenant, on both replicas, while the burst runs
    const other = Promise.all(urls.map((u, i) => fastClaim(u, otherNs, `other-${i}`)));
    const answers = await burst;
    const admitted = answers.filter((a) => a.status === 200).length;
    const refused = answers.filter((a) => a.status === 429);
    expect(refused.every((a) => String(a.body.message).includes(`the cap is ${CAP}`))).toBe(true);
    expect((await other).map((a) => a.status)).toEqual([200, 200]);
    figures.burst = BURST;
    figures.cap = CAP;
    figures.burst_admitted = admitted;
    figures.burst_refused_429 = refused.length;
    figures.node_deliveries = await nodeDeliveriesIn(capNs);
    expect(figures.burst_admitted).toBe(CAP);
    expect(figures.burst_refused_429).toBe(BURST - CAP);
    expect(figures.node_deliveries).toBe(CAP);
  });

  it('lets only a replica call the peer endpoint: a tenant, a forged user header or no token is refused, and nothing is delivered', async () => {
    const before = await nodeDeliveriesIn(otherNs);
    const peerCall = JSON.stringify({
      op: 'claim',
      username: 'system:admin',
      request: { namespace: otherNs, name: 'via-peer', warmPool: 'agent' },
    });
    const post = async (url: string, headers: Record<string, string>): Promise<number> => {
      const r = await request(`${url}/internal/peers/v1/call`, {
        method: 'POST',
        dispatcher,
        headers: { 'content-type': 'application/json', ...headers },
        body: peerCall,
      });
      await r.body.dump();
      return r.statusCode;
    };
    const codes: Record<string, number[]> = { tenant: [], tenant_fast_path_token: [], forged_header: [], no_token: [] };
    for (const url of urls) {
      codes.tenant?.push(await post(url, { authorization: `Bearer ${apiTokens.get(otherNs) ?? ''}` }));
      codes.tenant_fast_path_token?.push(await post(url, { authorization: `Bearer ${tokens.get(otherNs) ?? ''}` }));
      codes.forged_header?.push(
        await post(url, {
          'X-Remote-User': 'system:serviceaccount:sandbox-system:sandbox-scale-claim-controller',
          'X-Remote-Group': 'system:masters',
        }),
      );
      codes.no_token?.push(await post(url, {}));
    }
    console.log(JSON.stringify({ test: 'fast-path-peer-endpoint-authn', ...codes }));
    expect(codes).toEqual({ tenant: [403, 403], tenant_fast_path_token: [401, 401], forged_header: [401, 401], no_token: [401, 401] });
    expect(await nodeDeliveriesIn(otherNs)).toBe(before);
  });

  it('reports the figures', () => {
    console.log(JSON.stringify({ suite: 'fast-path-replicas', replicas: urls.length, ...figures }));
    expect(figures.same_name_answered_once).toBe(figures.same_name_rounds);
    expect(figures.burst_admitted).toBe(figures.cap);
    expect(figures.node_deliveries).toBe(figures.cap);
  });
});
