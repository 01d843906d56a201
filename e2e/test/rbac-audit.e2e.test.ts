import { FAST_PATH_AUDIENCE } from '@sandbox-scale/scale-core';
import { Agent, request } from 'undici';
import { eventually, kubectl, kubectlJson, kubectlOk, runSuffix, serviceAccountToken, type RunResult } from '../src/index';
import { installedSuiteHelmArgs, CLAIM_CONTROLLER_ARGS } from '../src/installed/installed-values';
import { RELEASE, SYSTEM_NAMESPACE } from '../src/system/local-system';
import { applyWarmPool, itWhere, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import { e2eTarget } from '../src/system/system-under-test';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { apiUses, chartServiceAccountUsers, readAuditLog, useLabel, type ApiUse } from '../src/testing/audit-log';
import { chartGrants, grantCovers, renderChartRbac, type Grant } from '../src/testing/chart-grants';
import type { ChartApp } from '../src/testing/chart-rbac';
import { sandboxManifest } from '../src/testing/sandbox-manifests';
import { grantEditRole, grantTenantRole } from '../src/testing/tenant-role';

// The chart grants each app exactly what its code uses: kube-apiserver's audit log of every
// request the chart's ServiceAccounts made while a workload drove every path of the apps that
// touches the API is compared with the chart's RBAC as `helm template` renders it. A refused
// request fails (a grant missing), and so does a grant no request used (a grant too many) unless
// it is one of the few exceptions below, each saying why this run cannot reach it.

const ns = `rbac-audit-${runSuffix()}`;
const IMAGE = 'ghcr.io/example/rbac-audit:1.0';
const EXT = 'extensions.agents.x-k8s.io';
/** The chart's ServiceAccounts as users (the publisher's in its own namespace where the system puts it there). */
let users: Map<ChartApp, string>;
let appOf: Map<string, ChartApp>;
let sys: SystemUnderTest;
let grants: Grant[];
/** Grants every authenticated identity has (system:basic-user, system:discovery, system:public-info-viewer). */
let baseline: Grant[];
/** Where this suite's own requests begin in a log other suites share (installed: one log for the whole run). */
let startedAt: string;
let tenantKubeconfig: string;
let tenantToken: string;

/**
 * Grants no request of this run uses, by app, with the reason. Keys are useLabel's names.
 * Only the local target lacks the paths marked local-only; every entry must stay unused, so a
 * path that comes into reach removes its entry.
 */
function exceptions(target: SystemUnderTest['target']): Record<ChartApp, Record<string, string>> {
  return {
    'claim-controller': {
      // OwnerReferencesPermissionEnforcement (where a cluster enables it) checks it when the
      // token Secret names its claim with blockOwnerDeletion: an authorization check inside the
      // Secret's create, never a request of its own, so no audit event can show it
      [`${EXT}/sandboxclaims/finalizers update (cluster)`]: 'checked by admission on the Secret create, not a request',
    },
    'warmpool-driver': {},
    'inventory-publisher': {
      // only a node whose inventory shrinks from several objects (over ~3,700 sandboxes) to fewer deletes its parts
      [`${EXT}/nodeinventories delete (cluster)`]: 'a split inventory shrinking back; nodes here hold a few sandboxes',
      ...(target === 'local'
        ? {
            // notices find the replicas from the Service's EndpointSlices; the local system runs
            // the publishers without --notice-service (the installed chart turns notices on)
            [`discovery.k8s.io/endpointslices list (${SYSTEM_NAMESPACE})`]: 'local publishers run without notices',
            [`discovery.k8s.io/endpointslices watch (${SYSTEM_NAMESPACE})`]: 'local publishers run without notices',
          }
        : {}),
    },
    'sandbox-apiserver': {},
  };
}

const k = (args: string[], input?: string): Promise<RunResult> => kubectlOk(args, { kubeconfig: sys.kubeconfigPath, input });
const asTenant = (args: string[], input?: string): Promise<RunResult> => kubectlOk(args, { kubeconfig: tenantKubeconfig, input });

/** Every request of the chart's ServiceAccounts the log holds (installed: since this suite began, for the refusals). */
function uses(since?: string): ApiUse[] {
  return apiUses(readAuditLog(sys.auditLogPath as string), new Set(users.values()), since);
}

interface Usage {
  app: ChartApp;
  granted: Grant[];
  used: Grant[];
  excepted: Grant[];
  unused: Grant[];
  /** Exceptions some request did use after all: stale entries. */
  usedExceptions: string[];
  /** Allowed requests no chart grant covers, each covered by a grant every authenticated identity has. */
  beyondChart: ApiUse[];
  /** Allowed requests neither the chart nor the baseline covers (none can exist: RBAC allowed them). */
  uncovered: ApiUse[];
  requests: number;
}

const grantLabel = (g: Grant): string => `${useLabel(g)}${g.resourceNames ? ` [${g.resourceNames.join(',')}]` : ''}`;

function usage(all: ApiUse[]): Usage[] {
  const except = exceptions(sys.target);
  return [...users].map(([app, user]) => {
    const mine = all.filter((u) => u.user === user && !u.denied);
    const granted = grants.filter((g) => g.user === user);
    const isUsed = (g: Grant): boolean => mine.some((u) => grantCovers(g, u));
    const excepted = granted.filter((g) => except[app][grantLabel(g)] !== undefined);
    const beyond = mine.filter((u) => !granted.some((g) => grantCovers(g, u)));
    return {
      app,
      granted,
      used: granted.filter(isUsed),
      excepted: excepted.filter((g) => !isUsed(g)),
      unused: granted.filter((g) => !isUsed(g) && !excepted.includes(g)),
      usedExceptions: excepted.filter(isUsed).map(grantLabel),
      beyondChart: beyond.filter((u) => baseline.some((g) => g.user === user && grantCovers(g, u))),
      uncovered: beyond.filter((u) => !baseline.some((g) => g.user === user && grantCovers(g, u))),
      requests: all.filter((u) => u.user === user).length,
    };
  });
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [ns],
    auditLog: true,
    // the chart's two claim-controller replicas, which find each other through their Service's EndpointSlices
    local: {
      nodes: 2,
      speed: 0,
      publishInterval: '1s',
      metrics: true,
      claimControllerReplicas: 2,
      extraArgs: { 'claim-controller': CLAIM_CONTROLLER_ARGS },
    },
  });
  startedAt = new Date().toISOString();
  users = chartServiceAccountUsers(SYSTEM_NAMESPACE, RELEASE, sys.publisherNamespace);
  appOf = new Map([...users].map(([app, user]) => [user, app]));
  const namespaces = [SYSTEM_NAMESPACE, sys.publisherNamespace];
  // the values the system was installed with (locally the chart without workloads, the apps as processes)
  const rendered = await renderChartRbac({
    release: RELEASE,
    namespace: SYSTEM_NAMESPACE,
    args: sys.target === 'installed' ? installedSuiteHelmArgs() : ['--set', 'workloads=false'],
  });
  grants = await chartGrants(sys.kubeConfig, rendered, namespaces);
  // what kube-apiserver grants every authenticated identity, bound here to the chart's ServiceAccounts to be matched the same way
  const everyone = ['system:basic-user', 'system:discovery', 'system:public-info-viewer'].map((role) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: role },
    roleRef: { kind: 'ClusterRole', name: role },
    subjects: [...users.values()].map((user) => {
      const [, , namespace, name] = user.split(':');
      return { kind: 'ServiceAccount', name, namespace };
    }),
  }));
  baseline = await chartGrants(sys.kubeConfig, everyone, namespaces);
  const tenant = await sys.tenant(ns, 'editor');
  tenantKubeconfig = tenant.path;
  tenantToken = tenant.token;
  await grantEditRole(sys.kubeConfig, ns, 'editor');
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

describe("the chart's RBAC is exactly what the apps use", () => {
  it('drives every path of the apps that reaches the API', async () => {
    // a warm pool, scaled up: warmpool-driver writes its status and events, publishers their inventories
    await applyWarmPool(sys, ns, { image: IMAGE, replicas: 2 });
    const template = await kubectlJson<{ apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: unknown }>(
      ['-n', ns, 'get', 'sandboxtemplate', 'agent'],
      { kubeconfig: sys.kubeconfigPath },
    );
    const templateBody = {
      apiVersion: template.apiVersion,
      kind: template.kind,
      metadata: { name: 'agent', namespace: ns },
      spec: template.spec,
    };
    await waitPoolReady(sys, ns, 2);
    // its template gone twice: the second TemplateNotFound is a repeat, which warmpool-driver
    // writes as the first event's series (a patch) within its flush interval
    for (let i = 0; i < 2; i++) {
      await k(['-n', ns, 'delete', 'sandboxtemplate', 'agent']);
      await eventually(
        async () => {
          const pool = await kubectlJson<{ status?: { conditions?: { type: string; status: string; reason?: string }[] } }>(
            ['-n', ns, 'get', 'sandboxwarmpool', 'agent'],
            { kubeconfig: sys.kubeconfigPath },
          );
          expect(pool.status?.conditions?.find((c) => c.type === 'Degraded')).toMatchObject({ status: 'True', reason: 'TemplateNotFound' });
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      await k(['apply', '-f', '-'], JSON.stringify(templateBody));
      await waitPoolReady(sys, ns, 2);
    }
    await k(['-n', ns, 'scale', 'sandboxwarmpool/agent', '--replicas=4']);
    await waitPoolReady(sys, ns, 4);

    // claims bound (status, finalizer, token Secret, a series event of the pool), one released,
    // one deleted by claim-controller at its shutdownTime (shutdownPolicy Delete)
    const claim = (name: string, lifecycle?: Record<string, string>): Record<string, unknown> => ({
      apiVersion: `${EXT}/v1beta1`,
      kind: 'SandboxClaim',
      metadata: { name, namespace: ns },
      spec: { warmPoolRef: { name: 'agent' }, ...(lifecycle ? { lifecycle } : {}) },
    });
    // a Secret of the token's name that no claim owns: claim-controller's create meets it, and
    // its owner-checked patch is refused by the patch's own test (422), so it is never taken over
    await k(['-n', ns, 'create', 'secret', 'generic', 'squat-sandbox-token', '--from-literal=token=not-yours']);
    const shutdownTime = new Date(Date.now() + 8_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    await k(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [claim('c1'), claim('c2'), claim('squat'), claim('expires', { shutdownTime, shutdownPolicy: 'Delete' })],
      }),
    );
    await eventually(
      async () => {
        const list = await kubectlJson<{
          items: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }[];
        }>(['-n', ns, 'get', 'sandboxclaims'], { kubeconfig: sys.kubeconfigPath });
        const bound = list.items.filter((c) => c.status?.conditions?.some((x) => x.type === 'Bound' && x.status === 'True'));
        expect(bound.map((c) => c.metadata.name).sort()).toEqual(expect.arrayContaining(['c1', 'c2']));
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );

    // a fast-path claim: TokenReview and SubjectAccessReview of the caller, the claim created and recorded
    await grantTenantRole(sys.kubeConfig, ns, 'agent', [{ apiGroups: [EXT], resources: ['sandboxclaims'], verbs: ['create'] }]);
    const token = await serviceAccountToken(sys.kubeConfig, ns, 'agent', [FAST_PATH_AUDIENCE]);
    const dispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.fastPathUrl) } });
    try {
      await eventually(
        async () => {
          const r = await request(`${sys.fastPathUrl}/v1/claims`, {
            method: 'POST',
            dispatcher,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            body: JSON.stringify({ namespace: ns, name: 'fast', warmPool: 'agent' }),
          });
          const body = await r.body.text();
          // the RoleBinding reaches the authorizer's cache a moment after it is written
          if (r.statusCode !== 200 && r.statusCode !== 201) throw new Error(`fast path ${r.statusCode}: ${body}`);
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
    } finally {
      await dispatcher.close();
    }

    // sandboxes through the aggregated API, as a namespace editor: list, get, watch, labels (sandbox-apiserver's
    // metadata ConfigMap, created then patched), a Sandbox of its own created and deleted
    await eventually(async () => expect((await asTenant(['-n', ns, 'get', 'sandboxes', '-o', 'name'])).stdout).toContain('/c1'), {
      timeoutMs: 30_000,
      intervalMs: 500,
    });
    await asTenant(['-n', ns, 'get', 'sandbox', 'c1']);
    await asTenant(['get', '--raw', `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?watch=true&timeoutSeconds=1`]);
    await asTenant(['-n', ns, 'label', 'sandbox', 'c1', 'team=a']);
    await asTenant(['-n', ns, 'label', 'sandbox', 'c1', 'team=b', '--overwrite']);
    await eventually(
      async () => {
        const r = await kubectl(['create', '--validate=false', '-f', '-'], {
          kubeconfig: tenantKubeconfig,
          input: JSON.stringify(sandboxManifest('direct', IMAGE, ns)),
        });
        if (r.code !== 0 && !r.stderr.includes('AlreadyExists')) throw new Error(r.stderr);
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await asTenant(['-n', ns, 'delete', 'sandbox', 'direct', '--wait=false']);
    // a client with a bearer token straight to sandbox-apiserver (not through kube-apiserver's
    // front proxy): its token is reviewed (TokenReview), its access asked of RBAC
    const direct = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.apiserverUrl) } });
    try {
      const r = await request(`${sys.apiserverUrl}/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`, {
        dispatcher: direct,
        headers: { authorization: `Bearer ${tenantToken}` },
      });
      expect({ status: r.statusCode, body: r.statusCode === 200 ? '' : await r.body.text() }).toEqual({ status: 200, body: '' });
      await r.body.dump();
    } finally {
      await direct.close();
    }

    // every app's /metrics, as the chart's ServiceMonitors scrape it: the scraper's token
    // reviewed (TokenReview) and its access asked of RBAC (SubjectAccessReview) by the app itself
    await eventually(
      async () => {
        const endpoints = [...(await sys.metricsEndpoints()).keys()];
        for (const app of ['claim-controller', 'warmpool-driver', 'inventory-publisher'])
          expect({ app, listed: endpoints.some((e) => e.startsWith(app)) }).toEqual({ app, listed: true });
        for (const app of endpoints) {
          const page = await sys.scrapeMetrics(app);
          expect({ app, status: page.status }).toEqual({ app, status: 200 });
        }
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );

    // a claim released (the finalizer comes off), and the one that expires gone by itself
    await k(['-n', ns, 'delete', 'sandboxclaim', 'c2', '--wait=true', '--timeout=60s']);
    await eventually(
      async () => {
        const r = await kubectl(['-n', ns, 'get', 'sandboxclaim', 'expires'], { kubeconfig: sys.kubeconfigPath });
        expect(r.stderr).toContain('NotFound');
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  }, 300_000);

  // warmpool-driver's leader keeps the certificates on the installed chart (locally they are files)
  itWhere(e2eTarget() === 'installed', 'the local system makes its certificates as files; no keeper runs')(
    "repairs a serving Secret whose CA bundle drifted: warmpool-driver's leader writes it back, woken by its watch of the CA Secret",
    async () => {
      const secret = `${RELEASE}-claim-controller-serving`;
      const read = () =>
        kubectlJson<{ data: Record<string, string> }>(['-n', SYSTEM_NAMESPACE, 'get', 'secret', secret], {
          kubeconfig: sys.kubeconfigPath,
        });
      const kept = (await read()).data['ca.crt'] ?? '';
      // the same CA without its last newline: another bundle to the keeper, the same trust to every reader
      const drifted = Buffer.from(Buffer.from(kept, 'base64').toString('utf8').trimEnd()).toString('base64');
      await k(['-n', SYSTEM_NAMESPACE, 'patch', 'secret', secret, '--type=merge', '-p', JSON.stringify({ data: { 'ca.crt': drifted } })]);
      await k(['-n', SYSTEM_NAMESPACE, 'annotate', 'secret', `${RELEASE}-ca`, `rbac-audit/touched=${Date.now()}`, '--overwrite']);
      await eventually(
        async () => {
          expect((await read()).data['ca.crt']).toBe(kept);
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
    },
    120_000,
  );

  it('uses every grant of the chart, but the listed exceptions, and is refused nothing', async () => {
    // the requests come as the apps get to them (an event series is written within 30 s): wait until every grant is used
    const report = await eventually(
      () => {
        const all = uses();
        const u = usage(all);
        const unused = u.flatMap((x) => x.unused.map((g) => `${x.app}: ${grantLabel(g)}`));
        if (unused.length > 0) throw new Error(`grants no request used:\n${unused.join('\n')}`);
        return u;
      },
      { timeoutMs: 90_000, intervalMs: 1000 },
    ).catch((err: unknown) => {
      // the table says what was used when it did not all arrive
      process.stdout.write(table(usage(uses())));
      throw err;
    });
    process.stdout.write(table(report));

    // refused: a grant missing (on the installed cluster the log is the run's: other suites' refusals are theirs)
    const denied = uses(sys.target === 'installed' ? startedAt : undefined).filter((u) => u.denied);
    expect(denied.map((u) => `${appOf.get(u.user)}: ${useLabel(u)} ${u.code} ${u.requestURI}`)).toEqual([]);
    for (const r of report) {
      expect({
        app: r.app,
        unused: r.unused.map(grantLabel),
        staleExceptions: r.usedExceptions,
        uncovered: r.uncovered.map(useLabel),
      }).toEqual({
        app: r.app,
        unused: [],
        staleExceptions: [],
        uncovered: [],
      });
      // the figures printed
      expect(r.used.length + r.excepted.length).toBe(r.granted.length);
      expect(r.excepted.length).toBe(Object.keys(exceptions(sys.target)[r.app]).length);
      expect(r.requests).toBeGreaterThan(0);
    }
  }, 120_000);
});

function table(report: Usage[]): string {
  const lines = ['app                  granted  used  excepted  unused  requests  beyond-chart'];
  for (const r of report)
    lines.push(
      `${r.app.padEnd(20)} ${String(r.granted.length).padStart(7)} ${String(r.used.length).padStart(5)} ${String(r.excepted.length).padStart(9)} ${String(r.unused.length).padStart(7)} ${String(r.requests).padStart(9)}  ${[...new Set(r.beyondChart.map(useLabel))].join(', ')}`,
    );
  for (const r of report) {
    lines.push(`${r.app}:`);
    for (const g of r.granted)
      lines.push(
        `  ${r.used.includes(g) ? 'used    ' : r.excepted.includes(g) ? 'excepted' : 'UNUSED  '} ${grantLabel(g)}  <- ${g.source}`,
      );
  }
  return `${lines.join('\n')}\n`;
}
