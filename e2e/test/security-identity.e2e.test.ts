import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { FAST_PATH_AUDIENCE } from '@sandbox-scale/scale-core';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { createCA, createLeaf, type CertPair } from '../src/control-plane/pki';
import { SYSTEM_NAMESPACE, RELEASE } from '../src/system/local-system';
import { startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { eventually, kubectl, runSuffix, serviceAccountToken } from '../src/index';

// Every way of passing for someone else that this suite knows, sent to the deployed shape (the
// chart's RBAC, apps as their own processes under their chart ServiceAccounts): comma names
// through kube-apiserver and straight from a front-proxy certificate, identity headers without
// a front-proxy certificate, tokens minted for another audience, and no credentials at all.

const ns = `sec-id-${runSuffix()}`;
const BASE = '/apis/agents.x-k8s.io/v1beta1';
const SBAPI_USER = `system:serviceaccount:${SYSTEM_NAMESPACE}:${RELEASE}-sandbox-apiserver`;
let sys: SystemUnderTest;
let servingCa: string;
let clusterCa: string;
let frontProxy: CertPair;
let apiserverToken: string;
let fastPathToken: string;

interface Attempt {
  kind: string;
  what: string;
  status: number;
  body: string;
}
const attempts: Attempt[] = [];
const identitiesIntact: string[] = [];
const controls: string[] = [];

interface Reply {
  status: number;
  body: string;
}

/** One HTTPS request; header arrays go out as one line per value, as a front proxy sends them. */
function send(
  url: string,
  o: { method?: string; headers?: Record<string, string | string[]>; ca: string; client?: CertPair; body?: unknown },
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const body = o.body === undefined ? undefined : JSON.stringify(o.body);
    const req = request(
      {
        hostname: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: o.method ?? 'GET',
        ca: o.ca,
        servername: sys.servernameOf(url),
        headers: { Accept: 'application/json', ...(body ? { 'Content-Type': 'application/json' } : {}), ...o.headers },
        ...(o.client ? { cert: o.client.cert, key: o.client.key } : {}),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Records a forged-identity attempt; it counts as refused only with the expected 401/403. */
function record(kind: string, what: string, r: Reply): void {
  attempts.push({ kind, what, status: r.status, body: r.body });
}

const bearer = (t: string): Record<string, string> => ({ Authorization: `Bearer ${t}` });
const sandboxYaml = {
  apiVersion: 'agents.x-k8s.io/v1beta1',
  kind: 'Sandbox',
  metadata: { name: 'forged', namespace: ns },
  spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'registry.local/forged:1' }] } } },
};

/** SubjectAccessReviews sandbox-apiserver sent for `user`, from kube-apiserver's audit log. */
function sarsFor(user: string): Array<{ user: string; groups: string[] }> {
  const text = readFileSync(sys.auditLogPath as string, 'utf8');
  return text
    .split('\n')
    .filter((l) => l.includes('subjectaccessreviews'))
    .map(
      (l) =>
        JSON.parse(l) as { stage?: string; user?: { username?: string }; requestObject?: { spec?: { user?: string; groups?: string[] } } },
    )
    .filter((e) => e.stage === 'ResponseComplete' && e.user?.username === SBAPI_USER && e.requestObject?.spec?.user === user)
    .map((e) => ({ user: e.requestObject?.spec?.user ?? '', groups: e.requestObject?.spec?.groups ?? [] }));
}

beforeAll(async () => {
  // kube-apiserver's audit log says which identities sandbox-apiserver asked about (locally a
  // control plane of the suite's own: the log and the APIService are cluster-wide)
  sys = await startSuiteSystem({ namespaces: [ns], auditLog: true, local: { nodes: 1, speed: 0 } });
  servingCa = sys.servingCa;
  clusterCa = sys.clusterCa.cert;
  frontProxy = sys.frontProxyClient;
  // the names with commas may read sandboxes in the namespace, and nothing else
  const rbac = sys.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace: ns,
    body: {
      metadata: { name: 'sandbox-reader' },
      rules: [{ apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list'] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'sandbox-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'sandbox-reader' },
      subjects: [
        { kind: 'Group', name: 'x,system:masters', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'User', name: 'alice,bob', apiGroup: 'rbac.authorization.k8s.io' },
      ],
    },
  });
  // a client ServiceAccount with no rights: a token for the API server and one for the fast path
  apiserverToken = await serviceAccountToken(sys.kubeConfig, ns, 'client', []);
  fastPathToken = await serviceAccountToken(sys.kubeConfig, ns, 'client', [FAST_PATH_AUDIENCE]);
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

describe('identities are never forged or widened', () => {
  it('passes comma names through kube-apiserver intact: x,system:masters stays that group, alice,bob that user', async () => {
    const as = (user: string, group?: string): string[] => [
      '--kubeconfig',
      sys.kubeconfigPath,
      `--as=${user}`,
      ...(group ? [`--as-group=${group}`] : []),
    ];
    const status = (stderr: string, code: number): number =>
      code === 0 ? 200 : /Forbidden|forbidden/.test(stderr) ? 403 : /Unauthorized/.test(stderr) ? 401 : 500;
    // what RBAC grants the literal names works: the aggregator forwarded them and sandbox-apiserver agreed
    await eventually(
      async () => {
        const mallory = await kubectl([...as('mallory', 'x,system:masters'), 'get', 'sandboxes', '-n', ns, '-o', 'name']);
        expect(mallory.code).toBe(0);
        const alice = await kubectl([...as('alice,bob'), 'get', 'sandboxes', '-n', ns, '-o', 'name']);
        expect(alice.code).toBe(0);
      },
      { timeoutMs: 30_000 },
    );
    // sandbox-apiserver asked about exactly those identities, so it neither split them nor took x,system:masters for system:masters
    await eventually(() => {
      expect(sarsFor('mallory').length).toBeGreaterThan(0);
      for (const s of sarsFor('mallory')) expect(s.groups).toEqual(['x,system:masters', 'system:authenticated']);
      expect(sarsFor('alice,bob').length).toBeGreaterThan(0);
    });
    expect(sarsFor('alice')).toEqual([]);
    identitiesIntact.push('mallory/x,system:masters', 'alice,bob');

    // anything beyond that grant is refused
    for (const [what, args] of [
      ['delete a sandbox', ['delete', 'sandbox', 'victim', '-n', ns]],
      ['list sandboxes in kube-system', ['get', 'sandboxes', '-n', 'kube-system']],
      ['list sandboxes in every namespace', ['get', 'sandboxes', '-A']],
      ['create a sandbox', ['create', '-f', '-']],
    ] as const) {
      const r = await kubectl([...as('mallory', 'x,system:masters'), ...args], {
        kubeconfig: sys.kubeconfigPath,
        input: JSON.stringify(sandboxYaml),
      });
      record('comma_group_via_kube_apiserver', what, { status: status(r.stderr, r.code), body: r.stderr });
    }
    const r = await kubectl([...as('system:admin,x', 'x,system:masters'), 'delete', 'sandbox', 'victim', '-n', ns], {
      kubeconfig: sys.kubeconfigPath,
    });
    record('comma_group_via_kube_apiserver', 'delete as user system:admin,x', { status: status(r.stderr, r.code), body: r.stderr });
  });

  it('refuses comma names sent straight to sandbox-apiserver with the front-proxy client certificate', async () => {
    // control: the front proxy's own certificate with a real system:masters group is believed
    const control = await send(`${sys.apiserverUrl}${BASE}/namespaces/${ns}/sandboxes`, {
      ca: servingCa,
      client: frontProxy,
      headers: { 'X-Remote-User': 'admin', 'X-Remote-Group': ['dev', 'system:masters'] },
    });
    expect(control.status).toBe(200);
    controls.push('front-proxy system:masters lists sandboxes');

    const forged: Array<[string, Record<string, string | string[]>]> = [
      ['group x,system:masters', { 'X-Remote-User': 'mallory', 'X-Remote-Group': 'x,system:masters' }],
      ['group system:masters,x', { 'X-Remote-User': 'mallory', 'X-Remote-Group': 'system:masters,x' }],
      ['groups dev and x,system:masters', { 'X-Remote-User': 'mallory', 'X-Remote-Group': ['dev', 'x,system:masters'] }],
      ['user system:admin,mallory', { 'X-Remote-User': 'system:admin,mallory', 'X-Remote-Group': 'x,system:masters' }],
    ];
    for (const [what, headers] of forged) {
      record(
        'comma_group_front_proxy',
        `${what}: list in kube-system`,
        await send(`${sys.apiserverUrl}${BASE}/namespaces/kube-system/sandboxes`, { ca: servingCa, client: frontProxy, headers }),
      );
      record(
        'comma_group_front_proxy',
        `${what}: delete`,
        await send(`${sys.apiserverUrl}${BASE}/namespaces/${ns}/sandboxes/victim`, {
          method: 'DELETE',
          ca: servingCa,
          client: frontProxy,
          headers,
        }),
      );
      record(
        'comma_group_front_proxy',
        `${what}: create`,
        await send(`${sys.apiserverUrl}${BASE}/namespaces/${ns}/sandboxes`, {
          method: 'POST',
          ca: servingCa,
          client: frontProxy,
          headers,
          body: sandboxYaml,
        }),
      );
      record(
        'comma_group_front_proxy',
        `${what}: metrics`,
        await send(`${sys.apiserverUrl}/metrics`, { ca: servingCa, client: frontProxy, headers }),
      );
    }
  });

  it('ignores identity headers that do not come with the front-proxy client certificate', async () => {
    const headers = { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' };
    const url = `${sys.apiserverUrl}${BASE}/namespaces/${ns}/sandboxes`;
    const selfMadeCa = await createCA('not-the-front-proxy-ca');
    const lookalike = await createLeaf(selfMadeCa, { commonName: 'front-proxy-client', client: true });
    const clusterClient = await createLeaf(sys.clusterCa, { commonName: 'mallory', client: true });
    record('headers_without_front_proxy_cert', 'no client certificate', await send(url, { ca: servingCa, headers }));
    record(
      'headers_without_front_proxy_cert',
      'look-alike certificate from another CA',
      await send(url, { ca: servingCa, client: lookalike, headers }),
    );
    record(
      'headers_without_front_proxy_cert',
      'a cluster client certificate',
      await send(url, { ca: servingCa, client: clusterClient, headers }),
    );
    record(
      'headers_without_front_proxy_cert',
      'a bearer token',
      await send(url, { ca: servingCa, headers: { ...headers, ...bearer(apiserverToken) } }),
    );
    record(
      'headers_without_front_proxy_cert',
      'fast path with a bearer token',
      await send(`${sys.fastPathUrl}/v1/claims`, {
        method: 'POST',
        ca: servingCa,
        headers: { ...headers, ...bearer(fastPathToken) },
        body: { namespace: ns, warmPool: 'any' },
      }),
    );
  });

  it('refuses tokens minted for another audience', async () => {
    // control: a token for the fast path's audience authenticates (and is then denied: no RBAC)
    const control = await send(`${sys.fastPathUrl}/v1/claims`, {
      method: 'POST',
      ca: servingCa,
      headers: bearer(fastPathToken),
      body: { namespace: ns, name: 'c1', warmPool: 'any' },
    });
    expect(control.status).toBe(403);
    expect(control.body).toContain(`system:serviceaccount:${ns}:client`);
    controls.push('fast-path-audience token authenticates');
    const other = await serviceAccountToken(sys.kubeConfig, ns, 'client', ['some-other-service']);
    const claim = { namespace: ns, name: 'c1', warmPool: 'any' };
    record(
      'wrong_audience',
      'fast path, API server token',
      await send(`${sys.fastPathUrl}/v1/claims`, { method: 'POST', ca: servingCa, headers: bearer(apiserverToken), body: claim }),
    );
    record(
      'wrong_audience',
      'fast path, another service token',
      await send(`${sys.fastPathUrl}/v1/claims`, { method: 'POST', ca: servingCa, headers: bearer(other), body: claim }),
    );
    record(
      'wrong_audience',
      'sandbox-apiserver, fast-path token',
      await send(`${sys.apiserverUrl}${BASE}/namespaces/${ns}/sandboxes`, { ca: servingCa, headers: bearer(fastPathToken) }),
    );
    record(
      'wrong_audience',
      'sandbox-apiserver, another service token',
      await send(`${sys.apiserverUrl}${BASE}/namespaces/${ns}/sandboxes`, { ca: servingCa, headers: bearer(other) }),
    );
    record(
      'wrong_audience',
      'kube-apiserver, fast-path token',
      await send(`${sys.kubeConfig.getCurrentCluster()?.server ?? ''}${BASE}/namespaces/${ns}/sandboxes`, {
        ca: clusterCa,
        headers: bearer(fastPathToken),
      }),
    );
  });

  it('refuses unauthenticated requests', async () => {
    const claim = { namespace: ns, name: 'c2', warmPool: 'any' };
    record(
      'unauthenticated',
      'fast path, no token',
      await send(`${sys.fastPathUrl}/v1/claims`, { method: 'POST', ca: servingCa, body: claim }),
    );
    record(
      'unauthenticated',
      'fast path, garbage token',
      await send(`${sys.fastPathUrl}/v1/claims`, { method: 'POST', ca: servingCa, headers: bearer('garbage'), body: claim }),
    );
    record(
      'unauthenticated',
      'sandbox-apiserver, nothing',
      await send(`${sys.apiserverUrl}${BASE}/namespaces/${ns}/sandboxes`, { ca: servingCa }),
    );
    record(
      'unauthenticated',
      'sandbox-apiserver, garbage token',
      await send(`${sys.apiserverUrl}${BASE}/namespaces/${ns}/sandboxes`, { ca: servingCa, headers: bearer('garbage') }),
    );
    record(
      'unauthenticated',
      'kube-apiserver, nothing',
      await send(`${sys.kubeConfig.getCurrentCluster()?.server ?? ''}${BASE}/namespaces/${ns}/sandboxes`, { ca: clusterCa }),
    );
  });

  it('refused every attempt, with a Status that carries no internal text', () => {
    const kinds = [...new Set(attempts.map((a) => a.kind))];
    const byKind = Object.fromEntries(
      kinds.map((k) => {
        const of = attempts.filter((a) => a.kind === k);
        return [k, { sent: of.length, refused: of.filter((a) => a.status === 401 || a.status === 403).length }];
      }),
    );
    const refused = attempts.filter((a) => a.status === 401 || a.status === 403);
    const leaky = attempts.filter((a) => /https?:\/\/|\n\s+at |ECONNREFUSED|stack/.test(a.body));
    const fig = {
      suite: 'security-identity',
      forged_identity_attempts: attempts.length,
      refused: refused.length,
      accepted: attempts.length - refused.length,
      by_kind: byKind,
      identities_intact_via_kube_apiserver: identitiesIntact.length,
      controls_passed: controls.length,
      bodies_with_internal_text: leaky.length,
    };
    console.log(JSON.stringify(fig));
    expect(
      attempts
        .filter((a) => a.status !== 401 && a.status !== 403)
        .map((a) => `${a.kind}: ${a.what} -> ${a.status} ${a.body.slice(0, 200)}`),
    ).toEqual([]);
    expect(fig.forged_identity_attempts).toBe(5 + 16 + 5 + 5 + 5);
    expect(fig.refused).toBe(fig.forged_identity_attempts);
    expect(fig.accepted).toBe(0);
    expect(byKind).toEqual({
      comma_group_via_kube_apiserver: { sent: 5, refused: 5 },
      comma_group_front_proxy: { sent: 16, refused: 16 },
      headers_without_front_proxy_cert: { sent: 5, refused: 5 },
      wrong_audience: { sent: 5, refused: 5 },
      unauthenticated: { sent: 5, refused: 5 },
    });
    expect(fig.identities_intact_via_kube_apiserver).toBe(2);
    expect(fig.controls_passed).toBe(2);
    expect(fig.bodies_with_internal_text).toBe(0);
  });
});
