import { grantEditRole } from '../src/testing/tenant-role';
import { Agent, request } from 'undici';
import { FAST_PATH_AUDIENCE, NODE_NOTICE_PATH } from '@sandbox-scale/scale-core';
import { eventually, kubeconfigForServiceAccount, kubectl, runSuffix, serviceAccountToken } from '../src/index';
import { RELEASE, SYSTEM_NAMESPACE } from '../src/system/local-system';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCall, sandboxdCounters, sandboxdRows } from '../src/testing/sandboxd';

// Keys that name a prototype (__proto__, constructor, prototype), plain, escaped and nested, in
// every body an endpoint of the system accepts, sent by a tenant who holds exactly the chart's
// edit role (patch included): each is refused with a 4xx, nothing is written, no process ends.
// Then the escalation such a key once opened, end to end: a JSON patch onto Object.prototype
// followed by a garbage bearer token straight to sandbox-apiserver, which must stay a 401.

const suffix = runSuffix();
const ns = `proto-${suffix}`;
const IMAGE = 'ghcr.io/example/proto-agent:1.0';
const GROUP_PATH = '/apis/agents.x-k8s.io/v1beta1';
const SANDBOX = 'target';

/** What a polluted process would need to let anyone in: the fields a rejected TokenReview and a denied SubjectAccessReview leave out. */
const POLLUTION = { polluted: 'yes', authenticated: true, username: 'evil', groups: ['system:masters'], allowed: true };

let sys: SystemUnderTest;
let dispatcher: Agent;
let tenant: { kubeconfig: string; token: string; fastPathToken: string };

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Defines `key` on `o` as an own property (an assignment to `__proto__` would set the prototype instead). */
function withKey(o: { [k: string]: Json }, key: string, value: Json): { [k: string]: Json } {
  const copy = JSON.parse(JSON.stringify(o)) as { [k: string]: Json };
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** Every object inside a value, with a setter that replaces it there. */
function objectSlots(v: Json, replace: (o: { [k: string]: Json }) => Json, out: Array<() => Json>): void {
  if (typeof v !== 'object' || v === null) return;
  if (Array.isArray(v)) {
    v.forEach((item, i) => objectSlots(item, (o) => v.map((x, j) => (j === i ? replace(o) : x)), out));
    return;
  }
  out.push(() => replace(v));
  for (const [k, child] of Object.entries(v)) objectSlots(child, (o) => replace({ ...v, [k]: o } as { [k: string]: Json }), out);
}

/**
 * The hostile texts of one body: each prototype key (and `constructor.prototype`) at every object
 * of it, the root included, plus the key written with a JSON escape, which decodes to the same key.
 */
function hostileBodies(base: Json): string[] {
  const out = new Set<string>();
  const payloads: Array<[string, Json]> = [
    ['__proto__', POLLUTION],
    ['constructor', { prototype: POLLUTION }],
    ['prototype', POLLUTION],
  ];
  for (const [key, value] of payloads) {
    const slots: Array<() => Json> = [];
    objectSlots(base, (o) => withKey(o, key, value), slots);
    for (const make of slots) out.add(JSON.stringify(make()));
  }
  for (const text of [...out]) if (text.includes('"__proto__"')) out.add(text.replace('"__proto__"', '"\\u005f_proto__"'));
  return [...out];
}

async function kube(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return kubectl(args, { kubeconfig: tenant.kubeconfig, ...(input !== undefined ? { input } : {}) });
}

/** A raw call through kube-apiserver as the tenant. */
async function viaKube(method: string, path: string, contentType: string, body: string): Promise<{ status: number; text: string }> {
  const cluster = sys.kubeConfig.getCurrentCluster();
  const r = await request(`${cluster?.server ?? ''}${path}`, {
    method: method as 'POST',
    dispatcher: kubeDispatcher,
    headers: { authorization: `Bearer ${tenant.token}`, 'content-type': contentType },
    body,
  });
  return { status: r.statusCode, text: await r.body.text() };
}
let kubeDispatcher: Agent;

interface Attempt {
  readonly endpoint: string;
  readonly status: number;
  readonly text: string;
}
const attempts: Attempt[] = [];

const sandboxBody = (name: string): { [k: string]: Json } => ({
  apiVersion: 'agents.x-k8s.io/v1beta1',
  kind: 'Sandbox',
  metadata: { name, namespace: ns, labels: { team: 'a' } },
  spec: { podTemplate: { spec: { containers: [{ name: 'agent', image: IMAGE, resources: { requests: { cpu: '1', memory: '1Gi' } } }] } } },
});

async function sandboxNames(): Promise<string[]> {
  const r = await kube(['get', 'sandboxes', '-n', ns, '-o', 'jsonpath={.items[*].metadata.name}']);
  if (r.code !== 0) throw new Error(`kubectl get sandboxes: ${r.stderr}`);
  return r.stdout.split(/\s+/).filter(Boolean).sort();
}

async function targetLabels(): Promise<Record<string, string>> {
  const r = await kube(['get', 'sandbox', SANDBOX, '-n', ns, '-o', 'json']);
  if (r.code !== 0) throw new Error(`kubectl get sandbox: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { metadata: { labels?: Record<string, string> } }).metadata.labels ?? {};
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [ns],
    local: {
      nodes: 1,
      speed: 0,
      publishInterval: '1s',
      // the chart's two claim-controller replicas, which serve each other's peer endpoint
      claimControllerReplicas: 2,
      // the notice endpoint, as the chart serves it: only the publisher ServiceAccount may tell of its node
      extraArgs: {
        'sandbox-apiserver': ['--notice-publisher', `system:serviceaccount:${SYSTEM_NAMESPACE}:${RELEASE}-inventory-publisher`],
      },
    },
  });
  const cluster = sys.kubeConfig.getCurrentCluster();
  kubeDispatcher = new Agent({ connect: { ca: sys.clusterCa.cert, ...(cluster?.skipTLSVerify ? { rejectUnauthorized: false } : {}) } });
  dispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.fastPathUrl) } });
  const user = await sys.tenant(ns, 'editor');
  tenant = {
    kubeconfig: user.path,
    token: user.token,
    fastPathToken: await serviceAccountToken(sys.kubeConfig, ns, 'editor', [FAST_PATH_AUDIENCE]),
  };
  await grantEditRole(sys.kubeConfig, ns, 'editor');
  await applyWarmPool(sys, ns, { image: IMAGE, replicas: 3 });
  await waitPoolReady(sys, ns, 3, { atLeast: true, timeoutMs: 120_000 });
  // the aggregated edit role reaches the tenant once kube-controller-manager has folded it in
  await eventually(
    async () => {
      const r = await kube(['create', '--validate=false', '-f', '-'], JSON.stringify(sandboxBody(SANDBOX)));
      if (r.code !== 0) throw new Error(r.stderr);
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}, 300_000);

afterAll(async () => {
  await dispatcher?.close();
  await kubeDispatcher?.close();
  await sys?.stop();
}, 120_000);

describe('keys that name a prototype, in every body, from a namespace editor', () => {
  it('are refused with a 4xx by every endpoint of every app, and nothing is written or ended', async () => {
    const labelsBefore = await targetLabels();
    const sandboxesBefore = await sandboxNames();
    const countersBefore = await sandboxdCounters(sys.nodes);
    const sb = `${GROUP_PATH}/namespaces/${ns}/sandboxes`;
    const record = (endpoint: string, status: number, text: string): void => {
      attempts.push({ endpoint, status, text: text.slice(0, 300) });
    };

    // create
    for (const body of hostileBodies(sandboxBody('made-by-proto'))) {
      const r = await viaKube('POST', sb, 'application/json', body);
      record('create sandboxes', r.status, r.text);
    }
    // the three patch types
    const patchPaths = [
      '/__proto__/x1',
      '/constructor/prototype/x1',
      '/metadata/__proto__/x1',
      '/metadata/labels/__proto__',
      '/metadata/labels/constructor',
      '/spec/prototype',
      '/metadata/labels/__proto__~1x',
    ];
    for (const path of patchPaths)
      for (const op of ['add', 'replace', 'remove', 'move', 'copy', 'test']) {
        const ops = [{ op, path, value: 1, from: '/metadata/labels/team' }];
        const r = await viaKube('PATCH', `${sb}/${SANDBOX}`, 'application/json-patch+json', JSON.stringify(ops));
        record('patch sandboxes (json)', r.status, r.text);
      }
    for (const body of hostileBodies([{ op: 'add', path: '/metadata/labels/ok', value: { nested: { deeper: 'v' } } }] as Json)) {
      const r = await viaKube('PATCH', `${sb}/${SANDBOX}`, 'application/json-patch+json', body);
      record('patch sandboxes (json value)', r.status, r.text);
    }
    for (const type of ['application/merge-patch+json', 'application/strategic-merge-patch+json'])
      for (const body of hostileBodies({
        metadata: { labels: { ok: 'v' }, annotations: { a: 'b' } },
        spec: { operatingMode: 'Running' },
      })) {
        const r = await viaKube('PATCH', `${sb}/${SANDBOX}`, type, body);
        record(`patch sandboxes (${type.split('/')[1]?.split('+')[0] ?? type})`, r.status, r.text);
      }
    // every subresource that takes a JSON body, as discovery advertises it: a file's body is its
    // bytes (whatever keys they spell) and a port-forward takes none, so those two are left out
    const discovery = JSON.parse((await kube(['get', '--raw', GROUP_PATH])).stdout) as { resources: { name: string; verbs: string[] }[] };
    const rawBodies = new Set(['sandboxes/files', 'sandboxes/portforward']);
    const posting = discovery.resources
      .filter((r) => r.name.startsWith('sandboxes/') && r.verbs.includes('create') && !rawBodies.has(r.name))
      .map((r) => r.name);
    expect(posting.length).toBeGreaterThanOrEqual(4);
    for (const sub of posting) {
      const kind = `Sandbox${sub.slice('sandboxes/'.length).replace(/^./, (c) => c.toUpperCase())}Options`;
      for (const body of hostileBodies({ apiVersion: 'agents.x-k8s.io/v1beta1', kind, template: 'x', count: 1, label: 'l' })) {
        const r = await viaKube('POST', `${sb}/${SANDBOX}/${sub.slice('sandboxes/'.length)}`, 'application/json', body);
        record(`create ${sub}`, r.status, r.text);
      }
    }
    // a delete whose options hold one does not delete
    for (const body of hostileBodies({ apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: 'x' } })) {
      const r = await viaKube('DELETE', `${sb}/${SANDBOX}`, 'application/json', body);
      record('delete sandboxes', r.status, r.text);
    }
    // the fast path
    for (const body of hostileBodies({ namespace: ns, name: 'fast-proto', warmPoolRef: { name: 'agent' } })) {
      const r = await request(`${sys.fastPathUrl}/v1/claims`, {
        method: 'POST',
        dispatcher,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.fastPathToken}` },
        body,
      });
      record('fast path claims', r.statusCode, await r.body.text());
    }
    // the node's own endpoints, under the fleet token: every one that reads a body
    const node = sys.nodes[0];
    if (node === undefined) throw new Error('no node');
    const id = (await sandboxdRows(node))[0]?.id ?? 'sb_0000000000000000';
    const nodeBodies: Array<[string, string, Json]> = [
      ['POST', '/v1/claim', { template: IMAGE, net: 'default', size: 'small', claim_ref: 'x/y', labels: { a: 'b' } }],
      ['PUT', '/v1/pools', { pools: [{ template: IMAGE, net: 'default', size: 'small', warm: 1 }] }],
      ['POST', `/v1/sandboxes/${id}/fork`, { token: '', count: 1 }],
      ['POST', `/v1/sandboxes/${id}/promote`, { token: '', name: 'p' }],
      ['POST', `/v1/sandboxes/${id}/checkpoint`, { token: '', label: 'l' }],
      ['POST', `/v1/sandboxes/${id}/renew`, { seconds: 60 }],
      ['POST', '/v1/checkpoints/ck_0000000000000000/claim', { claim_ref: 'x/y' }],
      ['DELETE', '/v1/templates', { name: 'p', net: 'default', size: 'small' }],
      ['POST', '/_sim/faults', { latencyMs: 0 }],
    ];
    for (const [method, path, base] of nodeBodies)
      for (const body of hostileBodies(base)) {
        const res = await fetch(`${node.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${node.token}`, 'content-type': 'application/json' },
          body,
        });
        record(`sandboxd ${method} ${path.replace(id, '{id}')}`, res.status, await res.text());
      }

    // what only a node's publisher and a peer replica send: their own identities, minted here by
    // the admin (the publisher's bound to the node, as its pod's is), so the body is what is refused
    const publisher = await kubeconfigForServiceAccount(
      sys.kubeConfig,
      sys.publisherNamespace,
      `${RELEASE}-inventory-publisher`,
      600,
      node.name,
    );
    const peer = await kubeconfigForServiceAccount(sys.kubeConfig, SYSTEM_NAMESPACE, `${RELEASE}-sandbox-apiserver`, 600);
    const internal: Array<[string, string, string | undefined, Json]> = [
      [
        'node notices',
        NODE_NOTICE_PATH,
        publisher.getCurrentUser()?.token,
        { node: node.name, seq: Date.now(), entries: [{ name: `${ns}/x`, id: 'sb_1', phase: 'Running' }] },
      ],
      [
        'peer calls',
        '/internal/peers/v1/call',
        peer.getCurrentUser()?.token,
        { op: 'create', namespace: ns, body: sandboxBody('peer-proto'), dryRun: false },
      ],
    ];
    // claim-controller's replicas hand each other claims of the namespaces each serves
    const fastPeer = await kubeconfigForServiceAccount(sys.kubeConfig, SYSTEM_NAMESPACE, `${RELEASE}-claim-controller`, 600);
    const fastPeerCalls: Array<[string, string, string | undefined, Json]> = [
      [
        'fast-path peer calls',
        '/internal/peers/v1/call',
        fastPeer.getCurrentUser()?.token,
        { op: 'claim', username: 'u', request: { namespace: ns, name: 'fast-peer-proto', warmPool: 'agent' } },
      ],
    ];
    const targets: Array<[string, typeof internal]> = [
      ...sys.apiserverUrls.map((url): [string, typeof internal] => [url, internal]),
      ...(await sys.fastPathUrls()).map((url): [string, typeof internal] => [url, fastPeerCalls]),
    ];
    for (const [url, calls] of targets) {
      const d = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(url) } });
      try {
        for (const [what, path, token, base] of calls)
          for (const body of hostileBodies(base)) {
            const r = await request(`${url}${path}`, {
              method: 'POST',
              dispatcher: d,
              headers: { authorization: `Bearer ${token ?? ''}`, 'content-type': 'application/json' },
              body,
            });
            record(what, r.statusCode, await r.body.text());
          }
      } finally {
        await d.close();
      }
    }

    const byEndpoint = new Map<string, number[]>();
    for (const a of attempts) byEndpoint.set(a.endpoint, [...(byEndpoint.get(a.endpoint) ?? []), a.status]);
    const accepted = attempts.filter((a) => a.status < 400 || a.status >= 500);
    const exits = await sys.appsThatExited();
    const sandboxesAfter = await sandboxNames();
    const countersAfter = await sandboxdCounters(sys.nodes);
    const faults = (await (await sandboxdCall(node, '/_sim/faults')).json()) as Record<string, unknown>;
    console.log(
      JSON.stringify({
        test: 'security-prototype',
        attempts: attempts.length,
        endpoints: byEndpoint.size,
        statuses: Object.fromEntries([...byEndpoint].map(([e, s]) => [e, [...new Set(s)].sort()])),
        accepted: accepted.length,
        process_exits: exits.length,
        new_sandboxes: sandboxesAfter.filter((s) => !sandboxesBefore.includes(s)).length,
        node_claims: countersAfter.claims - countersBefore.claims,
      }),
    );
    if (accepted.length > 0) console.log(JSON.stringify(accepted.slice(0, 10)));

    expect(byEndpoint.size).toBeGreaterThanOrEqual(14 + posting.length);
    // the internal endpoints read the bodies: the identities were let in
    for (const what of ['node notices', 'peer calls', 'fast-path peer calls'])
      expect(byEndpoint.get(what)?.every((s) => s === 422)).toBe(true);
    expect(accepted).toEqual([]);
    // the aggregated API names the key it refused
    for (const a of attempts.filter(
      (x) => x.endpoint.includes('sandboxes') || x.endpoint.includes('notices') || x.endpoint.includes('peer'),
    ))
      expect({ endpoint: a.endpoint, names: /__proto__|constructor|prototype/.test(a.text) }).toEqual({
        endpoint: a.endpoint,
        names: true,
      });
    expect(exits).toEqual([]);
    expect(sandboxesAfter).toEqual(sandboxesBefore);
    expect(countersAfter.claims - countersBefore.claims).toBe(0);
    expect(await targetLabels()).toEqual(labelsBefore);
    expect(faults['latencyMs'] ?? 0).toBe(0);
  }, 600_000);

  it('the escalation stays shut: a patch onto Object.prototype is a 422, and a garbage bearer token is then still a 401', async () => {
    const escalation = [
      [{ op: 'add', path: '/__proto__/x1', value: 1 }],
      Object.entries(POLLUTION).map(([k, value]) => ({ op: 'add', path: `/__proto__/${k}`, value })),
      Object.entries(POLLUTION).map(([k, value]) => ({ op: 'add', path: `/constructor/prototype/${k}`, value })),
    ];
    const answers: string[] = [];
    for (const ops of escalation) {
      const r = await kube(['patch', 'sandbox', SANDBOX, '-n', ns, '--type=json', '-p', JSON.stringify(ops)]);
      answers.push(`${r.code} ${r.stderr.trim()}`);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/is invalid|Invalid/);
      expect(r.stderr).toMatch(/__proto__|constructor/);
    }
    // a bearer token kube-apiserver rejects, straight to each replica and to the fast path
    const garbage = { authorization: 'Bearer garbage-token-that-authenticates-nobody' };
    const statuses: number[] = [];
    for (const url of sys.apiserverUrls) {
      const d = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(url) } });
      try {
        for (const path of [`${GROUP_PATH}/sandboxes`, `${GROUP_PATH}/namespaces/kube-system/sandboxes`, '/metrics']) {
          const r = await request(`${url}${path}`, { dispatcher: d, headers: garbage });
          await r.body.text();
          statuses.push(r.statusCode);
        }
      } finally {
        await d.close();
      }
    }
    const fast = await request(`${sys.fastPathUrl}/v1/claims`, {
      method: 'POST',
      dispatcher,
      headers: { ...garbage, 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: ns, name: 'x', warmPoolRef: { name: 'agent' } }),
    });
    await fast.body.text();
    statuses.push(fast.statusCode);
    // still serving the tenant, after the patches and the scrapes their metrics took
    const names = await sandboxNames();
    const exits = await sys.appsThatExited();
    console.log(
      JSON.stringify({ test: 'prototype-escalation', patches: answers.length, garbage_token_statuses: statuses, process_exits: exits }),
    );
    expect(statuses.length).toBe(sys.apiserverUrls.length * 3 + 1);
    expect(statuses.every((s) => s === 401)).toBe(true);
    expect(names).toContain(SANDBOX);
    expect(exits).toEqual([]);
  }, 300_000);
});
