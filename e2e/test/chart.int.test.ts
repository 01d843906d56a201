import {
  AppsV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1ResourceAttributes,
} from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { isHelp, parseFlags } from '@sandbox-scale/kube-runtime';
import { apiResourceList, configFromFlags, SandboxApiserverFlagsSchema } from '@sandbox-scale/sandbox-apiserver';
import { OwnerRefKey } from '@sandbox-scale/scale-core';
import {
  createTestNamespace,
  deleteNamespace,
  eventually,
  kubeconfigForServiceAccount,
  kubectl,
  runSuffix,
  runTool,
  testKubeConfig,
} from '../src/index';

// The Helm chart as users install it: lint, render, a server-side dry run of everything it
// renders (APIService included), a real install with the APIService off (another suite
// registers the real one, and its name is fixed), then what each app's ServiceAccount may do.
const kc = testKubeConfig();
const chartDir = join(__dirname, '..', '..', 'charts', 'sandbox-scale');
const chartHome = (parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { home: string }).home;
const operationsDoc = readFileSync(join(chartDir, '..', '..', 'docs', 'operations.md'), 'utf8');
const release = `ss-${runSuffix()}`;
const fullname = `${release}-sandbox-scale`;
let ns: string;
let installed = false;

interface Rendered {
  kind: string;
  apiVersion?: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

interface AlertRule {
  alert?: string;
  expr?: unknown;
  for?: unknown;
  labels?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** What Prometheus (and prometheus-operator) require of an alerting rule, plus what the chart promises: severity and a runbook_url. */
function ruleProblems(groups: unknown): string[] {
  const problems: string[] = [];
  if (!Array.isArray(groups) || groups.length === 0) return ['groups: must be a non-empty list'];
  const seen = new Set<string>();
  for (const [gi, g] of (groups as { name?: unknown; rules?: unknown }[]).entries()) {
    if (typeof g.name !== 'string' || g.name === '') problems.push(`groups[${gi}].name: required`);
    if (!Array.isArray(g.rules) || g.rules.length === 0) problems.push(`groups[${gi}].rules: must be a non-empty list`);
    for (const [ri, r] of ((g.rules ?? []) as AlertRule[]).entries()) {
      const at = `groups[${gi}].rules[${ri}]`;
      if (typeof r.alert !== 'string' || !/^[A-Z][A-Za-z0-9]*$/.test(r.alert)) problems.push(`${at}.alert: a CamelCase name`);
      else if (seen.has(r.alert)) problems.push(`${at}.alert: ${r.alert} twice`);
      else seen.add(r.alert);
      if (typeof r.expr !== 'string' || r.expr.trim() === '') problems.push(`${at}.expr: required`);
      if (typeof r.for !== 'string' || !/^\d+(ms|s|m|h)$/.test(r.for)) problems.push(`${at}.for: a duration`);
      if (!['critical', 'warning', 'info'].includes(String(r.labels?.severity)))
        problems.push(`${at}.labels.severity: critical, warning or info`);
      for (const a of ['summary', 'description', 'runbook_url'])
        if (typeof r.annotations?.[a] !== 'string' || (r.annotations[a] as string).trim() === '')
          problems.push(`${at}.annotations.${a}: required`);
      // each runbook is the alert's own section of docs/operations.md in the chart's home repository
      if (typeof r.alert === 'string' && typeof r.annotations?.runbook_url === 'string') {
        const want = `${chartHome}/blob/main/docs/operations.md#${r.alert.toLowerCase()}`;
        if (r.annotations.runbook_url !== want) problems.push(`${at}.annotations.runbook_url: ${want}`);
        else if (!operationsDoc.includes(`\n### ${r.alert}\n`)) problems.push(`${at}: docs/operations.md has no section ${r.alert}`);
      }
      const unknown = Object.keys(r).filter((key) => !['alert', 'expr', 'for', 'labels', 'annotations'].includes(key));
      if (unknown.length > 0) problems.push(`${at}: unknown fields ${unknown.join(', ')}`);
    }
  }
  return problems;
}

function renderedDocs(yamlText: string): Rendered[] {
  return parseAllDocuments(yamlText)
    .map((d) => d.toJSON() as Rendered | null)
    .filter((d): d is Rendered => d !== null);
}

/**
 * stderr lines of `kubectl apply` other than its last-applied warning, which objects another
 * suite created by server-side apply (the CRDs, the APIService) draw and which is harmless.
 */
function complaints(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l.trim() !== '' && !/missing the kubectl\.kubernetes\.io\/last-applied-configuration annotation/.test(l));
}

/** The spec of the one ValidatingAdmissionPolicy `out` renders, after checking it comes with its binding (Deny) and nothing else. */
function policySpecOf(out: string, policyName: string): Record<string, unknown> {
  const docs = renderedDocs(out);
  expect(docs.map((d) => `${d.apiVersion ?? ''} ${d.kind} ${d.metadata.name}`)).toEqual([
    `admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy ${policyName}`,
    `admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding ${policyName}`,
  ]);
  expect((docs[1]?.spec as { policyName?: string; validationActions?: string[] }).validationActions).toEqual(['Deny']);
  return docs[0]?.spec ?? {};
}

/** What a cluster with cert-manager's CRDs reports to `helm template`. */
const CERT_MANAGER_API = ['--api-versions', 'cert-manager.io/v1/Certificate', '--api-versions', 'cert-manager.io/v1/Issuer'];

interface KeptObjects {
  namespace: string;
  caSecret?: string;
  serving?: { secret: string; dnsNames: string[] }[];
  claimRefKeySecret?: string;
  apiService?: string;
}

/** warmpool-driver's --keep-certificates, parsed; undefined when it keeps nothing. */
function keptObjectsOf(docs: Rendered[]): KeptObjects | undefined {
  const driver = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === `${fullname}-warmpool-driver`)?.spec as
    { template: { spec: { containers: { args: string[] }[] } } } | undefined;
  const arg = driver?.template.spec.containers[0]?.args.find((a) => a.startsWith('--keep-certificates='));
  return arg === undefined ? undefined : (JSON.parse(arg.slice('--keep-certificates='.length)) as KeptObjects);
}

async function helmTemplate(extra: string[] = []): Promise<string> {
  const res = await runTool('helm', ['template', release, chartDir, '--namespace', ns, ...extra]);
  expect(res.stderr).toBe('');
  expect(res.code).toBe(0);
  return res.stdout;
}

beforeAll(async () => {
  ns = await createTestNamespace(kc, 'chart');
});
afterAll(async () => {
  if (installed) await runTool('helm', ['uninstall', release, '--namespace', ns, '--wait', '--timeout', '60s']);
  await deleteNamespace(kc, ns);
});

type ApiserverContainer = { args: string[]; ports: { name: string; containerPort: number }[] };

/** sandbox-apiserver's container as rendered. */
function apiserverOf(docs: Rendered[]): ApiserverContainer | undefined {
  return (
    docs.find((d) => d.kind === 'Deployment' && d.metadata.name === `${fullname}-sandbox-apiserver`)?.spec as
      { template: { spec: { containers: ApiserverContainer[] } } } | undefined
  )?.template.spec.containers[0];
}

/** The Services whose first port goes to the container port named `port`. */
function servicesTo(docs: Rendered[], port: string): Rendered[] {
  return docs.filter((d) => d.kind === 'Service' && (d.spec as { ports?: { targetPort?: unknown }[] }).ports?.[0]?.targetPort === port);
}

describe('the sandbox-scale chart', () => {
  it('lints clean, with the chart-issued certificates and with cert-manager', async () => {
    for (const extra of [
      [],
      ['--set', 'certificates.existingSecrets=true', '--set', 'apiService.caBundle=Y2E='],
      ['--set', 'claimController.secretNamespaces={team-a,team-b}'],
    ]) {
      const res = await runTool('helm', ['lint', '--strict', chartDir, ...extra]);
      expect(res.stdout).toContain('0 chart(s) failed');
      expect(res.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
      expect(res.code).toBe(0);
    }
  });

  it('rejects values the schema forbids, naming the value', async () => {
    const res = await runTool('helm', ['template', release, chartDir, '--set', 'sandboxApiserver.replicas=-1']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('/sandboxApiserver/replicas');
    const both = await runTool('helm', [
      'template',
      release,
      chartDir,
      '--set',
      'apiService.caBundle=Zm9v',
      '--set',
      'apiService.insecureSkipTLSVerify=true',
    ]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/caBundle and apiService\.insecureSkipTLSVerify are exclusive/);
  });

  it('renders objects the real API server accepts in a server-side dry run, the APIService included', async () => {
    const out = await helmTemplate(['--include-crds']);
    const docs = renderedDocs(out);
    expect(docs.map((d) => d.kind)).toEqual(
      expect.arrayContaining([
        'APIService',
        'DaemonSet',
        'Deployment',
        'PodDisruptionBudget',
        'CustomResourceDefinition',
        'ClusterRole',
        'RoleBinding',
      ]),
    );
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: out });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(
      /apiservice\.apiregistration\.k8s\.io\/v1beta1\.agents\.x-k8s\.io (created|configured|unchanged) \(server dry run\)/,
    );
    expect(res.stdout).toMatch(new RegExp(`daemonset\\.apps/${fullname}-inventory-publisher created \\(server dry run\\)`));
  });

  it('keeps sandbox-apiserver drainable and first in line: no budget at one replica, a critical priority, and a fast path Service reachable from outside when asked', async () => {
    const budgets = (docs: Rendered[]): string[] => docs.filter((d) => d.kind === 'PodDisruptionBudget').map((d) => d.metadata.name);
    const apiserverBudget = `${fullname}-sandbox-apiserver`;
    expect(budgets(renderedDocs(await helmTemplate()))).toContain(apiserverBudget);
    // minAvailable 1 of one replica would refuse every eviction, so no node running it could drain
    const single = renderedDocs(await helmTemplate(['--set', 'sandboxApiserver.replicas=1']));
    expect(budgets(single)).not.toContain(apiserverBudget);
    const deployment = (docs: Rendered[]): Rendered | undefined =>
      docs.find((d) => d.kind === 'Deployment' && d.metadata.name === `${fullname}-sandbox-apiserver`);
    const podSpec = (d: Rendered | undefined): Record<string, unknown> =>
      ((d?.spec?.['template'] as { spec?: Record<string, unknown> } | undefined)?.spec ?? {}) as Record<string, unknown>;
    expect(podSpec(deployment(single))['priorityClassName']).toBe('system-cluster-critical');
    // a quota for that class, which clusters limiting critical pods to namespaces with one require
    const quota = single.find((d) => d.kind === 'ResourceQuota');
    expect(quota?.spec).toEqual({
      hard: { pods: '3' },
      scopeSelector: { matchExpressions: [{ operator: 'In', scopeName: 'PriorityClass', values: ['system-cluster-critical'] }] },
    });
    const noPriority = renderedDocs(await helmTemplate(['--set', 'sandboxApiserver.priorityClassName=']));
    expect(podSpec(deployment(noPriority))).not.toHaveProperty('priorityClassName');
    expect(noPriority.filter((d) => d.kind === 'ResourceQuota')).toEqual([]);
    const fastPath = (docs: Rendered[]): (Rendered & { metadata: { annotations?: Record<string, string> } }) | undefined =>
      docs.find((d) => d.kind === 'Service' && d.metadata.name === `${fullname}-claim-controller`);
    expect(fastPath(single)?.spec?.['type']).toBe('ClusterIP');
    const outside = renderedDocs(
      await helmTemplate([
        '--set',
        'claimController.fastPath.service.type=LoadBalancer',
        '--set-json',
        'claimController.fastPath.service.annotations={"service.beta.kubernetes.io/aws-load-balancer-scheme":"internal"}',
      ]),
    );
    expect({ type: fastPath(outside)?.spec?.['type'], annotations: fastPath(outside)?.metadata.annotations }).toEqual({
      type: 'LoadBalancer',
      annotations: { 'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internal' },
    });
    const refused = await runTool('helm', ['template', release, chartDir, '--set', 'claimController.fastPath.service.type=External']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('/claimController/fastPath/service/type');
  });

  it('puts every CRD in the sandbox-scale category (kubectl get sandbox-scale)', async () => {
    const crds = renderedDocs(await helmTemplate(['--include-crds'])).filter((d) => d.kind === 'CustomResourceDefinition');
    expect(crds.map((c) => c.metadata.name).sort()).toEqual(
      ['nodeinventories', 'sandboxclaims', 'sandboxtemplates', 'sandboxwarmpools'].map((p) => `${p}.extensions.agents.x-k8s.io`),
    );
    for (const c of crds)
      expect({ crd: c.metadata.name, categories: (c.spec?.names as { categories?: string[] }).categories }).toEqual({
        crd: c.metadata.name,
        categories: ['sandbox-scale'],
      });
  });

  it('renders a headless metrics Service per app and the /metrics reader ClusterRole by default, monitoring objects only when enabled', async () => {
    const byDefault = renderedDocs(await helmTemplate());
    const metricsServices = byDefault.filter((d) => d.kind === 'Service' && d.metadata.name.endsWith('-metrics'));
    expect(metricsServices.map((d) => d.metadata.name).sort()).toEqual(
      ['claim-controller', 'inventory-publisher', 'sandbox-apiserver', 'warmpool-driver'].map((a) => `${fullname}-${a}-metrics`),
    );
    for (const svc of metricsServices) expect(svc.spec).toMatchObject({ clusterIP: 'None', ports: [{ name: 'metrics' }] });
    expect(metricsServices.find((d) => d.metadata.name === `${fullname}-sandbox-apiserver-metrics`)?.spec).toMatchObject({
      ports: [{ port: 6443, targetPort: 'https' }],
    });
    const reader = byDefault.find((d) => d.kind === 'ClusterRole' && d.metadata.name === `${fullname}-metrics-reader`) as
      (Rendered & { rules?: unknown }) | undefined;
    expect(reader?.rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    expect(
      byDefault.filter((d) => ['ServiceMonitor', 'PrometheusRule'].includes(d.kind) || d.metadata.name === `${fullname}-dashboard`),
    ).toEqual([]);

    const out = await helmTemplate([
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'metrics.prometheusRule.enabled=true',
      '--set',
      'metrics.dashboard.enabled=true',
      '--set',
      'metrics.serviceMonitor.labels.release=prom',
      '--set-json',
      'metrics.readerSubjects=[{"kind":"ServiceAccount","name":"prometheus","namespace":"monitoring"}]',
    ]);
    const docs = renderedDocs(out);
    const services = docs.filter((d) => d.kind === 'Service' && d.metadata.name.endsWith('-metrics'));
    const monitors = docs.filter((d) => d.kind === 'ServiceMonitor');
    expect(monitors).toHaveLength(4);
    for (const m of monitors) {
      // each ServiceMonitor selects exactly one metrics Service, by its labels, and scrapes its metrics port
      const selector = (m.spec?.selector as { matchLabels: Record<string, string> }).matchLabels;
      const matched = services.filter((svc) => Object.entries(selector).every(([key, v]) => svc.metadata.labels?.[key] === v));
      expect({ monitor: m.metadata.name, services: matched.map((svc) => svc.metadata.name) }).toEqual({
        monitor: m.metadata.name,
        services: [`${m.metadata.name}-metrics`],
      });
      expect(m.metadata.labels?.release).toBe('prom');
      // honorLabels: the metrics' own namespace and node labels are kept, not renamed exported_*
      expect(m.spec?.endpoints).toMatchObject([{ port: 'metrics', path: '/metrics', honorLabels: true }]);
      // and no relabeling of the chart's own writes a node (or any) label over them
      expect(JSON.stringify(m.spec?.endpoints)).not.toContain('relabelings');
    }
    type Endpoint = {
      scheme: string;
      bearerTokenFile?: string;
      tlsConfig: { serverName?: string; ca?: { secret: { name: string; key: string } }; insecureSkipVerify?: boolean };
    };
    const endpointOf = (app: string): Endpoint | undefined =>
      (monitors.find((m) => m.metadata.name === `${fullname}-${app}`)?.spec?.endpoints as Endpoint[] | undefined)?.[0];
    // every app's /metrics is authorized: HTTPS and the scraper's ServiceAccount token
    for (const app of ['claim-controller', 'warmpool-driver', 'inventory-publisher', 'sandbox-apiserver'])
      expect({ app, ...endpointOf(app) }).toMatchObject({
        app,
        scheme: 'https',
        bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
      });
    // checked against the chart's CA where the app serves the chart's certificate (claim-controller: its fast path's)
    for (const app of ['sandbox-apiserver', 'claim-controller']) {
      const tls = endpointOf(app)?.tlsConfig;
      expect({ app, serverName: tls?.serverName, insecure: tls?.insecureSkipVerify }).toEqual({
        app,
        serverName: `${fullname}-${app}.${ns}.svc`,
        insecure: undefined,
      });
      // a Secret warmpool-driver keeps (it is never rendered), whose ca.crt is the chart's CA
      expect(tls?.ca?.secret).toEqual({ name: `${fullname}-${app}-serving`, key: 'ca.crt' });
      expect(keptObjectsOf(docs)?.serving?.map((k) => k.secret)).toContain(tls?.ca?.secret.name);
    }
    // the others make their certificate at start: no CA to give
    for (const app of ['warmpool-driver', 'inventory-publisher'])
      expect({ app, tls: endpointOf(app)?.tlsConfig }).toEqual({ app, tls: { insecureSkipVerify: true } });
    // the controllers and the publisher run with delegated metrics auth, their kubelet probes on the plain-HTTP health port
    const workloads = docs.filter((d) => ['Deployment', 'DaemonSet'].includes(d.kind));
    for (const app of ['claim-controller', 'warmpool-driver', 'inventory-publisher']) {
      const w = workloads.find((d) => d.metadata.name === `${fullname}-${app}`) as
        | (Rendered & {
            spec: { template: { spec: { containers: { args: string[]; livenessProbe: unknown; readinessProbe: unknown }[] } } };
          })
        | undefined;
      const c = w?.spec.template.spec.containers[0];
      expect({ app, auth: c?.args.filter((a) => a.startsWith('--metrics-auth')) }).toEqual({ app, auth: ['--metrics-auth=delegated'] });
      expect(c?.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'health', scheme: 'HTTP' } });
      expect(c?.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'health', scheme: 'HTTP' } });
    }
    const binding = docs.find((d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === `${fullname}-metrics-reader`) as
      (Rendered & { subjects?: unknown; roleRef?: unknown }) | undefined;
    expect(binding?.roleRef).toMatchObject({ kind: 'ClusterRole', name: `${fullname}-metrics-reader` });
    expect(binding?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'monitoring' }]);

    // the PrometheusRule carries the rule file as is, and the rule file is a valid Prometheus rule file
    const rule = docs.find((d) => d.kind === 'PrometheusRule');
    const file = parse(readFileSync(join(chartDir, 'files', 'prometheus-rules.yaml'), 'utf8')) as { groups: unknown };
    expect(rule?.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rule?.spec).toEqual(file);
    expect(ruleProblems(file.groups)).toEqual([]);
    expect(
      ruleProblems([
        { name: 'g', rules: [{ alert: 'bad name', expr: '', for: 'soon', labels: {}, annotations: { summary: 's' }, keep_firing: '1m' }] },
      ]),
    ).toEqual([
      'groups[0].rules[0].alert: a CamelCase name',
      'groups[0].rules[0].expr: required',
      'groups[0].rules[0].for: a duration',
      'groups[0].rules[0].labels.severity: critical, warning or info',
      'groups[0].rules[0].annotations.description: required',
      'groups[0].rules[0].annotations.runbook_url: required',
      'groups[0].rules[0]: unknown fields keep_firing',
    ]);
    const alerts = ((file.groups as { rules: { alert: string }[] }[])[0]?.rules ?? []).map((r) => r.alert);
    // the README's four alerts: a stale node, a Degraded pool, claims without warm capacity, the APIService not Available
    expect(alerts).toEqual(
      expect.arrayContaining([
        'SandboxScaleNodeInventoryStale',
        'SandboxScaleWarmPoolDegraded',
        'SandboxScaleClaimsWithoutWarmCapacity',
        'SandboxScaleAPIServiceUnavailable',
      ]),
    );

    const dashboard = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === `${fullname}-dashboard`);
    expect(dashboard?.metadata.labels?.grafana_dashboard).toBe('1');
    const json = JSON.parse(dashboard?.data?.['sandbox-scale.json'] ?? '{}') as {
      uid?: string;
      panels?: { title: string; targets: { expr: string }[] }[];
    };
    expect(json).toEqual(JSON.parse(readFileSync(join(chartDir, 'files', 'grafana-dashboard.json'), 'utf8')));
    expect(json.panels?.map((p) => p.title)).toEqual(
      expect.arrayContaining([
        'Claims/s by path, start and outcome',
        'Claim latency (p50, p99) by path and start',
        'Warm vs target per pool',
        'Stale and draining nodes',
        'Sandbox API latency (p99) by verb',
      ]),
    );
    for (const p of json.panels ?? [])
      expect({ panel: p.title, exprs: p.targets.filter((t) => t.expr.trim() !== '').length > 0 }).toEqual({ panel: p.title, exprs: true });

    // the real API server accepts everything but the prometheus-operator kinds, whose CRDs this cluster does not have
    const plain = parseAllDocuments(out)
      .filter((d) => !String((d.toJSON() as Rendered | null)?.apiVersion ?? '').startsWith('monitoring.coreos.com/'))
      .map((d) => d.toString())
      .join('---\n');
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: plain });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`service/${fullname}-sandbox-apiserver-metrics created \\(server dry run\\)`));
    expect(res.stdout).toMatch(
      new RegExp(
        `clusterrole\\.rbac\\.authorization\\.k8s\\.io/${fullname}-metrics-reader (created|configured|unchanged) \\(server dry run\\)`,
      ),
    );
  });

  it('prints NOTES: what was installed, how to check the APIService, the first commands', async () => {
    const res = await runTool('helm', ['install', `${release}-notes`, chartDir, '--namespace', ns, '--dry-run=client']);
    expect(res.code).toBe(0);
    const notes = res.stdout.slice(res.stdout.indexOf('NOTES:'));
    expect(res.stdout).toContain('NOTES:');
    for (const line of [
      `installed as release ${release}-notes in namespace ${ns}`,
      'APIService v1beta1.agents.x-k8s.io',
      'kubectl wait --for=condition=Available apiservice/v1beta1.agents.x-k8s.io --timeout=2m',
      'claim-controller (2) warmpool-driver (2) sandbox-apiserver (2) inventory-publisher (one per node)',
      `kubectl -n ${ns} get secret sandbox-scale-fleet-token`,
      'kubectl get sandbox-scale -A',
      `ClusterRole ${release}-notes-sandbox-scale-metrics-reader`,
    ])
      expect(notes).toContain(line);
    // without the APIService or workloads the notes say so instead
    const bare = await runTool('helm', [
      'install',
      `${release}-notes`,
      chartDir,
      '--namespace',
      ns,
      '--dry-run=client',
      '--set',
      'apiService.enabled=false',
      '--set',
      'workloads=false',
    ]);
    expect(bare.code).toBe(0);
    expect(bare.stdout).not.toContain('kubectl wait --for=condition=Available');
    expect(bare.stdout).toContain('No workloads (workloads=false)');
  });

  it('renders byte-identical output twice and generates no certificate or key: warmpool-driver keeps them, named in its --keep-certificates', async () => {
    for (const values of [
      [],
      ['--set', 'certManager.enabled=true', ...CERT_MANAGER_API],
      ['--set', 'certificates.existingSecrets=true', '--set', 'apiService.caBundle=Y2E='],
    ]) {
      const first = await helmTemplate(values);
      expect(await helmTemplate(values)).toBe(first);
      expect(renderedDocs(first).filter((d) => d.kind === 'Secret')).toEqual([]);
    }
    const docs = renderedDocs(await helmTemplate());
    expect(keptObjectsOf(docs)).toEqual({
      namespace: ns,
      caSecret: `${fullname}-ca`,
      serving: [
        { secret: `${fullname}-sandbox-apiserver-serving`, dnsNames: expect.arrayContaining([`${fullname}-sandbox-apiserver.${ns}.svc`]) },
        { secret: `${fullname}-claim-controller-serving`, dnsNames: expect.arrayContaining([`${fullname}-claim-controller.${ns}.svc`]) },
      ],
      claimRefKeySecret: `${fullname}-claim-ref-key`,
      apiService: 'v1beta1.agents.x-k8s.io',
    });
    // the template holds no caBundle, so no render undoes the one the keeper sets
    expect(docs.find((d) => d.kind === 'APIService')?.spec).not.toHaveProperty('caBundle');
    // it may read and update exactly those Secrets, and patch that APIService
    const role = docs.find((d) => d.kind === 'Role' && d.metadata.name === `${fullname}-warmpool-driver-certificates`);
    expect((role as { rules?: unknown } | undefined)?.rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: [
          `${fullname}-ca`,
          `${fullname}-sandbox-apiserver-serving`,
          `${fullname}-claim-controller-serving`,
          `${fullname}-claim-ref-key`,
        ],
        verbs: ['get', 'update'],
      },
      // watched by name, so a rotation asked for on either starts at once
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: [`${fullname}-ca`, `${fullname}-claim-ref-key`],
        verbs: ['list', 'watch'],
      },
    ]);
    const apiServiceRole = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === `${fullname}-warmpool-driver-apiservice-ca`);
    expect((apiServiceRole as { rules?: unknown } | undefined)?.rules).toEqual([
      {
        apiGroups: ['apiregistration.k8s.io'],
        resources: ['apiservices'],
        resourceNames: ['v1beta1.agents.x-k8s.io'],
        verbs: ['get', 'patch'],
      },
    ]);

    // cert-manager issues the certificates (and injects the caBundle); the key is still kept
    const managed = renderedDocs(await helmTemplate(['--set', 'certManager.enabled=true', ...CERT_MANAGER_API]));
    expect(keptObjectsOf(managed)).toEqual({ namespace: ns, claimRefKeySecret: `${fullname}-claim-ref-key` });
    expect(managed.find((d) => d.kind === 'APIService')?.metadata.annotations).toEqual({
      'cert-manager.io/inject-ca-from': `${ns}/${fullname}-sandbox-apiserver-serving`,
    });
    const durations = managed
      .filter((d) => d.kind === 'Certificate')
      .map((d) => (d.spec as { duration?: string; renewBefore?: string }) ?? {})
      .map((spec) => [spec.duration, spec.renewBefore]);
    expect(durations).toEqual(
      expect.arrayContaining([
        ['87600h', undefined],
        ['2160h', '720h'],
      ]),
    );
    // Secrets of the user's own: nothing kept, the caBundle is the value given
    const own = renderedDocs(await helmTemplate(['--set', 'certificates.existingSecrets=true', '--set', 'apiService.caBundle=Y2E=']));
    expect(keptObjectsOf(own)).toBeUndefined();
    expect(own.find((d) => d.kind === 'APIService')?.spec).toMatchObject({ caBundle: 'Y2E=' });
  });

  it('refuses, naming what is missing, cert-manager without its CRDs, Secrets of the own without a caBundle, and no warmpool-driver to keep them', async () => {
    const refused = async (values: string[]): Promise<string> => {
      const res = await runTool('helm', ['template', release, chartDir, '--namespace', ns, ...values]);
      expect(res.code).not.toBe(0);
      return res.stderr;
    };
    expect(await refused(['--set', 'certManager.enabled=true'])).toContain(
      "certManager.enabled=true needs cert-manager's CRDs (cert-manager.io/v1 Certificate and Issuer)",
    );
    expect(await refused(['--set', 'certificates.existingSecrets=true'])).toContain('set apiService.caBundle');
    expect(await refused(['--set', 'warmpoolDriver.enabled=false'])).toContain(
      'set warmpoolDriver.enabled=true, or certificates.existingSecrets=true',
    );
    expect(await refused(['--set', 'certificates.validity=90d'])).toMatch(/certificates\/validity/);
  });

  it('points the APIService at an external endpoint through an ExternalName Service, accepted by the server', async () => {
    const out = await helmTemplate([
      '--set',
      'claimController.enabled=false',
      '--set',
      'warmpoolDriver.enabled=false',
      '--set',
      'inventoryPublisher.enabled=false',
      '--set',
      'sandboxApiserver.enabled=false',
      '--set',
      'apiService.external.host=localhost',
      '--set',
      'apiService.service.port=16443',
      '--set',
      'apiService.insecureSkipTLSVerify=true',
    ]);
    const docs = renderedDocs(out);
    expect(docs.filter((d) => ['Deployment', 'DaemonSet'].includes(d.kind))).toEqual([]);
    const svc = docs.find((d) => d.kind === 'Service');
    expect(svc?.spec).toMatchObject({ type: 'ExternalName', externalName: 'localhost', ports: [{ port: 16443 }] });
    expect(docs.find((d) => d.kind === 'APIService')?.spec).toMatchObject({ insecureSkipTLSVerify: true, service: { port: 16443 } });
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: out });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);
  });

  it('serves the sandbox router on port 8080 of sandbox-apiserver behind <fullname>-router, or sandbox-router-svc, with Kubernetes authentication unless none is set', async () => {
    const routerServices = (docs: Rendered[]): Rendered[] => servicesTo(docs, 'router');

    const byDefault = renderedDocs(await helmTemplate());
    expect(routerServices(byDefault).map((d) => ({ name: d.metadata.name, spec: d.spec }))).toEqual([
      {
        name: `${fullname}-router`,
        spec: {
          type: 'ClusterIP',
          selector: expect.objectContaining({ 'app.kubernetes.io/component': 'sandbox-apiserver' }),
          ports: [{ name: 'https', port: 8080, targetPort: 'router', protocol: 'TCP' }],
        },
      },
    ]);
    const c = apiserverOf(byDefault);
    expect(c?.args.filter((a) => a.startsWith('--router-'))).toEqual([
      '--router-bind-address=:8080',
      '--router-authentication=kubernetes',
      '--router-tls=true',
      // fair shares: relays per namespace, and upgraded relays bounded in idle time and age
      '--router-max-relays=1024',
      '--router-max-relays-per-namespace=256',
      '--router-relay-idle-timeout=30m',
      '--router-relay-max-duration=4h',
    ]);
    expect(c?.ports).toEqual(expect.arrayContaining([{ name: 'router', containerPort: 8080, protocol: 'TCP' }]));

    const tunnel = await helmTemplate(['--set', 'router.serviceName=sandbox-router-svc', '--set', 'router.authentication=none']);
    const tunnelDocs = renderedDocs(tunnel);
    expect(routerServices(tunnelDocs).map((d) => d.metadata.name)).toEqual(['sandbox-router-svc']);
    expect(apiserverOf(tunnelDocs)?.args.filter((a) => a.startsWith('--router-authentication'))).toEqual(['--router-authentication=none']);
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: tunnel });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);

    const off = renderedDocs(await helmTemplate(['--set', 'router.enabled=false']));
    expect(routerServices(off)).toEqual([]);
    expect(apiserverOf(off)?.args.filter((a) => a.startsWith('--router-'))).toEqual([]);
    const bad = await runTool('helm', ['template', release, chartDir, '--namespace', ns, '--set', 'router.authentication=open']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/router\/authentication/);
  });

  it("serves e2b's API only when e2b.enabled, behind <fullname>-e2b over HTTPS with a certificate that names it, and refuses a misspelled value", async () => {
    const e2bServices = (docs: Rendered[]): Rendered[] => servicesTo(docs, 'e2b');
    const namesOf = (docs: Rendered[]): string[] =>
      (keptObjectsOf(docs)?.serving ?? []).find((s) => s.secret === `${fullname}-sandbox-apiserver-serving`)?.dnsNames ?? [];

    const off = renderedDocs(await helmTemplate());
    expect(e2bServices(off)).toEqual([]);
    expect(apiserverOf(off)?.args.filter((a) => a.startsWith('--e2b-'))).toEqual([]);
    expect(namesOf(off).filter((n) => n.includes('-e2b'))).toEqual([]);

    const on = await helmTemplate(['--set', 'e2b.enabled=true', '--set', 'e2b.defaultNamespace=agents']);
    const docs = renderedDocs(on);
    expect(e2bServices(docs).map((d) => ({ name: d.metadata.name, spec: d.spec }))).toEqual([
      {
        name: `${fullname}-e2b`,
        spec: {
          type: 'ClusterIP',
          selector: expect.objectContaining({ 'app.kubernetes.io/component': 'sandbox-apiserver' }),
          ports: [{ name: 'https', port: 3000, targetPort: 'e2b', protocol: 'TCP' }],
        },
      },
    ]);
    const c = apiserverOf(docs);
    expect(c?.args.filter((a) => a.startsWith('--e2b-'))).toEqual([
      '--e2b-bind-address=:3000',
      '--e2b-tls=true',
      '--e2b-default-namespace=agents',
    ]);
    expect(c?.ports).toEqual(expect.arrayContaining([{ name: 'e2b', containerPort: 3000, protocol: 'TCP' }]));
    expect(namesOf(docs)).toEqual(expect.arrayContaining([`${fullname}-e2b.${ns}.svc`, `${fullname}-e2b.${ns}.svc.cluster.local`]));
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: on });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);

    const plain = renderedDocs(await helmTemplate(['--set', 'e2b.enabled=true', '--set', 'e2b.tls=false']));
    expect(namesOf(plain).filter((n) => n.includes('-e2b'))).toEqual([]);
    expect((e2bServices(plain)[0]?.spec as { ports: { name: string }[] }).ports.map((p) => p.name)).toEqual(['http']);
    for (const [value, path] of [
      ['e2b.enable=true', /e2b/],
      ['e2b.defaultNamespace=Not_A_Namespace', /e2b\/defaultNamespace/],
    ] as const) {
      const bad = await runTool('helm', ['template', release, chartDir, '--namespace', ns, '--set', value]);
      expect({ value, code: bad.code === 0 ? 0 : 1, said: path.test(bad.stderr) }).toEqual({ value, code: 1, said: true });
    }
  });

  it("serves the router over HTTPS with sandbox-apiserver's certificate, which names the router Service; router.tls=false is plain HTTP and drops the names", async () => {
    const namesOf = (docs: Rendered[]): string[] =>
      (keptObjectsOf(docs)?.serving ?? []).find((s) => s.secret === `${fullname}-sandbox-apiserver-serving`)?.dnsNames.sort() ?? [];
    const svcNames = (svc: string): string[] => [svc, `${svc}.${ns}`, `${svc}.${ns}.svc`, `${svc}.${ns}.svc.cluster.local`];

    const tls = renderedDocs(await helmTemplate(['--set', 'router.serviceName=sandbox-router-svc']));
    expect(namesOf(tls)).toEqual([...svcNames(`${fullname}-sandbox-apiserver`), ...svcNames('sandbox-router-svc')].sort());
    // cert-manager issues the same names
    const managed = renderedDocs(
      await helmTemplate(['--set', 'router.serviceName=sandbox-router-svc', '--set', 'certManager.enabled=true', ...CERT_MANAGER_API]),
    );
    const certificate = managed.find((d) => d.kind === 'Certificate' && d.metadata.name === `${fullname}-sandbox-apiserver-serving`);
    expect(((certificate?.spec as { dnsNames?: string[] })?.dnsNames ?? []).sort()).toEqual(namesOf(tls));

    const plain = renderedDocs(await helmTemplate(['--set', 'router.tls=false']));
    expect(namesOf(plain)).toEqual(svcNames(`${fullname}-sandbox-apiserver`).sort());
    const router = plain.find((d) => d.kind === 'Service' && d.metadata.name === `${fullname}-router`);
    expect((router?.spec as { ports: { name: string }[] }).ports.map((p) => p.name)).toEqual(['http']);
    const args = (
      plain.find((d) => d.kind === 'Deployment' && d.metadata.name === `${fullname}-sandbox-apiserver`)?.spec as {
        template: { spec: { containers: { args: string[] }[] } };
      }
    ).template.spec.containers[0]?.args;
    expect(args).toContain('--router-tls=false');
  });

  it('with router.tunnel.enabled, binds the authenticated router to the pod address and a tunnel listener to the loopback on the same port; without it, one listener on every interface', async () => {
    type Env = { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath?: string } } };
    type Container = { args: string[]; env: Env[]; ports: { name: string; containerPort: number }[] };
    const apiserverOf = (docs: Rendered[]): Container | undefined =>
      (
        docs.find((d) => d.kind === 'Deployment' && d.metadata.name === `${fullname}-sandbox-apiserver`)?.spec as
          { template: { spec: { containers: Container[] } } } | undefined
      )?.template.spec.containers[0];
    /** The router sandbox-apiserver starts from these args, with $(POD_IP) as the kubelet expands it. */
    const routerStarted = (c: Container | undefined, podIp: string): unknown => {
      const argv = (c?.args ?? []).map((a) => a.replaceAll('$(POD_IP)', podIp));
      const flags = parseFlags(SandboxApiserverFlagsSchema, { program: 'sandbox-apiserver', summary: '', argv, env: {} });
      if (isHelp(flags)) throw new Error('the chart asks sandbox-apiserver for --help');
      const inputs = { kubeConfig: kc, fleetToken: 'fleet', claimRefKey: new OwnerRefKey(randomBytes(32)), peerCaPem: undefined };
      const r = configFromFlags(flags, inputs).router;
      return r === undefined ? undefined : { host: r.host, port: r.port, authentication: r.authentication, tunnel: r.tunnel };
    };

    const tunnel = await helmTemplate(['--set', 'router.serviceName=sandbox-router-svc', '--set', 'router.tunnel.enabled=true']);
    const tunnelDocs = renderedDocs(tunnel);
    const c = apiserverOf(tunnelDocs);
    expect(c?.args.filter((a) => a.startsWith('--router-'))).toEqual([
      '--router-bind-address=[$(POD_IP)]:8080',
      '--router-tunnel-bind-address=127.0.0.1:8080',
      '--router-authentication=kubernetes',
      '--router-tls=true',
      '--router-max-relays=1024',
      '--router-max-relays-per-namespace=256',
      '--router-relay-idle-timeout=30m',
      '--router-relay-max-duration=4h',
    ]);
    expect(c?.env.filter((e) => e.name === 'POD_IP')).toEqual([{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }]);
    expect(c?.ports).toEqual(expect.arrayContaining([{ name: 'router', containerPort: 8080, protocol: 'TCP' }]));
    // the loopback is the pod's own only off the host network
    const pod = (
      tunnelDocs.find((d) => d.kind === 'Deployment' && d.metadata.name === `${fullname}-sandbox-apiserver`)?.spec as {
        template: { spec: { hostNetwork?: boolean } };
      }
    ).template.spec;
    expect(pod.hostNetwork ?? false).toBe(false);
    expect(routerStarted(c, '10.244.0.7')).toEqual({
      host: '10.244.0.7',
      port: 8080,
      authentication: 'kubernetes',
      tunnel: { host: '127.0.0.1', port: 8080 },
    });
    // an IPv6 (or IPv6-primary dual-stack) pod: status.podIP is an IPv6 address, in brackets
    expect(routerStarted(c, 'fd00:10:244::7')).toEqual({
      host: 'fd00:10:244::7',
      port: 8080,
      authentication: 'kubernetes',
      tunnel: { host: '127.0.0.1', port: 8080 },
    });
    // nothing in the chart may port-forward to pods: the tunnel's gate is granted by the cluster's admins only
    type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[] };
    const podRules = tunnelDocs
      .filter((d) => d.kind === 'Role' || d.kind === 'ClusterRole')
      .flatMap((d) => ((d as { rules?: Rule[] }).rules ?? []).map((r) => ({ role: d.metadata.name, ...r })))
      .filter(
        (r) =>
          (r.apiGroups ?? []).some((g) => g === '' || g === '*') &&
          (r.resources ?? []).some((x) => /^(pods\/portforward|pods\/\*|\*)$/.test(x)),
      );
    expect(podRules).toEqual([]);
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: tunnel });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);

    const otherPort = apiserverOf(renderedDocs(await helmTemplate(['--set', 'router.tunnel.enabled=true', '--set', 'router.port=9090'])));
    expect(otherPort?.args.filter((a) => a.includes('-bind-address=') && a.startsWith('--router-'))).toEqual([
      '--router-bind-address=[$(POD_IP)]:9090',
      '--router-tunnel-bind-address=127.0.0.1:9090',
    ]);

    const byDefault = apiserverOf(renderedDocs(await helmTemplate()));
    expect(byDefault?.args.filter((a) => a.startsWith('--router-')).slice(0, 2)).toEqual([
      '--router-bind-address=:8080',
      '--router-authentication=kubernetes',
    ]);
    expect(routerStarted(byDefault, '10.244.0.7')).toEqual({ host: '', port: 8080, authentication: 'kubernetes', tunnel: undefined });
    const bad = await runTool('helm', ['template', release, chartDir, '--namespace', ns, '--set', 'router.tunnel.open=true']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/router\/tunnel/);
  });

  it('writes claim Secrets in every namespace by default, and only in claimController.secretNamespaces when that is set', async () => {
    type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[] };
    const secretRules = (d: Rendered | undefined): Rule[] =>
      ((d as { rules?: Rule[] } | undefined)?.rules ?? []).filter((r) => r.resources?.includes('secrets'));
    const clusterRole = (docs: Rendered[]) =>
      docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === `${fullname}-claim-controller`);
    const byDefault = renderedDocs(await helmTemplate());
    expect(secretRules(clusterRole(byDefault))).toEqual([{ apiGroups: [''], resources: ['secrets'], verbs: ['create', 'patch'] }]);
    expect(byDefault.filter((d) => d.kind === 'Role' && d.metadata.name === `${fullname}-claim-controller-secrets`)).toEqual([]);
    const restricted = renderedDocs(await helmTemplate(['--set', 'claimController.secretNamespaces={team-a,team-b}']));
    expect(secretRules(clusterRole(restricted))).toEqual([]);
    const roles = restricted.filter((d) => d.kind === 'Role' && d.metadata.name === `${fullname}-claim-controller-secrets`);
    expect(roles.map((r) => r.metadata.namespace)).toEqual(['team-a', 'team-b']);
    for (const r of roles) expect(secretRules(r)).toEqual([{ apiGroups: [''], resources: ['secrets'], verbs: ['create', 'patch'] }]);
    const bindings = restricted.filter((d) => d.kind === 'RoleBinding' && d.metadata.name === `${fullname}-claim-controller-secrets`);
    expect(bindings.map((b) => b.metadata.namespace)).toEqual(['team-a', 'team-b']);
  });

  it("ties each publisher to its own node's NodeInventory with an admission policy by default, accepted by the server", async () => {
    const policyName = `${fullname}-inventory-node`;
    const out = await helmTemplate(['--show-only', 'templates/inventory-publisher-node-policy.yaml']);
    const spec = policySpecOf(out, policyName) as {
      failurePolicy?: string;
      matchConstraints?: { resourceRules?: { operations?: string[]; resources?: string[] }[] };
      matchConditions?: { expression?: string }[];
      variables?: { expression?: string }[];
    };
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConstraints?.resourceRules?.[0]?.operations).toEqual(['CREATE', 'UPDATE', 'DELETE']);
    expect(spec.matchConstraints?.resourceRules?.[0]?.resources).toContain('nodeinventories');
    // the publisher ServiceAccount of this release only, by the node its bound token names
    expect(spec.matchConditions?.map((c) => c.expression)).toEqual([
      `request.userInfo.username == "system:serviceaccount:${ns}:${fullname}-inventory-publisher"`,
    ]);
    expect(JSON.stringify(spec.variables)).toContain('authentication.kubernetes.io/node-name');
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: out });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);
    const off = await runTool('helm', [
      'template',
      release,
      chartDir,
      '--namespace',
      ns,
      '--set',
      'inventoryPublisher.nodePolicy.enabled=false',
    ]);
    expect(off.code).toBe(0);
    expect(
      renderedDocs(off.stdout).filter((d) => d.kind.startsWith('ValidatingAdmissionPolicy') && d.metadata.name === policyName),
    ).toEqual([]);
  });

  it("confines claim-controller's Secret writes to claims' token Secrets with an admission policy by default, accepted by the server", async () => {
    const policyName = `${fullname}-claim-secrets`;
    const out = await helmTemplate(['--show-only', 'templates/claim-controller-secret-policy.yaml']);
    const spec = policySpecOf(out, policyName) as {
      failurePolicy?: string;
      matchConstraints?: { resourceRules?: { resources?: string[] }[] };
      matchConditions?: { expression?: string }[];
    };
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConstraints?.resourceRules?.[0]?.resources).toEqual(['secrets']);
    expect(spec.matchConditions?.map((c) => c.expression)).toEqual([
      `request.userInfo.username == "system:serviceaccount:${ns}:${fullname}-claim-controller"`,
    ]);
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: out });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);
    const off = renderedDocs(await helmTemplate(['--set', 'claimController.secretPolicy.enabled=false']));
    expect(off.filter((d) => d.metadata.name === policyName)).toEqual([]);
  });

  it("gives each publisher only its own node's sandboxd token from the node, and the fleet token to the control plane only", async () => {
    type Pod = {
      containers: { args: string[]; volumeMounts?: { name: string; mountPath: string }[] }[];
      volumes?: { name: string; secret?: { secretName: string }; hostPath?: { path: string; type?: string } }[];
    };
    const podOf = (docs: Rendered[], app: string): Pod | undefined =>
      (
        docs.find((d) => ['Deployment', 'DaemonSet'].includes(d.kind) && d.metadata.name === `${fullname}-${app}`)?.spec as
          { template: { spec: Pod } } | undefined
      )?.template.spec;
    const secretsOf = (p: Pod | undefined): string[] => (p?.volumes ?? []).flatMap((v) => (v.secret ? [v.secret.secretName] : []));
    const flagsOf = (p: Pod | undefined, prefix: string): string[] => (p?.containers[0]?.args ?? []).filter((a) => a.startsWith(prefix));
    const perNode = renderedDocs(await helmTemplate(['--set', 'inventoryPublisher.sandboxdTokenPath=/srv/node-token']));
    const publisher = podOf(perNode, 'inventory-publisher');
    expect(secretsOf(publisher)).not.toContain('sandbox-scale-fleet-token');
    expect(flagsOf(publisher, '--fleet-token-file')).toEqual([]);
    expect(flagsOf(publisher, '--sandboxd-token-file')).toEqual(['--sandboxd-token-file=/var/run/sandbox-scale/node-token/token']);
    expect(publisher?.volumes?.find((v) => v.name === 'node-token')?.hostPath).toEqual({ path: '/srv/node-token', type: 'File' });
    for (const app of ['claim-controller', 'warmpool-driver', 'sandbox-apiserver']) {
      const pod = podOf(perNode, app);
      expect({ app, secrets: secretsOf(pod), tokens: flagsOf(pod, '--sandboxd-tokens') }).toMatchObject({
        app,
        secrets: expect.arrayContaining(['sandbox-scale-fleet-token']) as string[],
        tokens: ['--sandboxd-tokens=per-node'],
      });
    }
    // every node's token the fleet token itself: then the publisher mounts it too
    const fleet = renderedDocs(await helmTemplate(['--set', 'fleetToken.perNode=false']));
    expect(secretsOf(podOf(fleet, 'inventory-publisher'))).toContain('sandbox-scale-fleet-token');
    expect(flagsOf(podOf(fleet, 'inventory-publisher'), '--sandboxd-token-file')).toEqual([]);
    expect(flagsOf(podOf(fleet, 'claim-controller'), '--sandboxd-tokens')).toEqual(['--sandboxd-tokens=fleet']);
  });

  it('installs on the control plane: the release is deployed and its objects exist', async () => {
    const res = await runTool('helm', [
      'install',
      release,
      chartDir,
      '--namespace',
      ns,
      '--set',
      'apiService.enabled=false',
      '--timeout',
      '90s',
    ]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    installed = true;
    const status = await runTool('helm', ['status', release, '--namespace', ns, '-o', 'json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ name: release, namespace: ns, info: { status: 'deployed' } });

    const apps = kc.makeApiClient(AppsV1Api);
    const deployments = await apps.listNamespacedDeployment({ namespace: ns });
    expect(Object.fromEntries(deployments.items.map((d) => [d.metadata?.name, d.spec?.replicas]))).toEqual({
      [`${fullname}-claim-controller`]: 2,
      [`${fullname}-warmpool-driver`]: 2,
      [`${fullname}-sandbox-apiserver`]: 2,
    });
    const ds = await apps.readNamespacedDaemonSet({ namespace: ns, name: `${fullname}-inventory-publisher` });
    const container = ds.spec?.template.spec?.containers[0];
    expect(container?.args).toEqual(
      expect.arrayContaining([
        '--node-name=$(NODE_NAME)',
        '--sandboxd-url=http://$(NODE_IP):7777',
        // its own node's token, from the node (per-node tokens, the default), never the fleet token
        '--sandboxd-token-file=/var/run/sandbox-scale/node-token/token',
      ]),
    );
    expect(container?.args?.filter((x) => x.startsWith('--fleet-token-file'))).toEqual([]);
    expect(container?.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('spec.nodeName');
    expect(container?.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });

    const cc = deployments.items.find((d) => d.metadata?.name === `${fullname}-claim-controller`);
    expect(cc?.spec?.template.spec?.containers[0]?.args).toEqual(
      expect.arrayContaining(['--leader-elect=true', `--leader-election-namespace=${ns}`]),
    );
    expect(cc?.spec?.template.spec?.containers[0]?.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'health' });

    const sas = await kc.makeApiClient(CoreV1Api).listNamespacedServiceAccount({ namespace: ns });
    expect(sas.items.map((s) => s.metadata?.name)).toEqual(
      expect.arrayContaining(
        ['claim-controller', 'warmpool-driver', 'inventory-publisher', 'sandbox-apiserver'].map((a) => `${fullname}-${a}`),
      ),
    );
    const pdb = await kubectl(['get', 'pdb', '-n', ns, `${fullname}-sandbox-apiserver`, '-o', 'jsonpath={.spec.minAvailable}']);
    expect(pdb.stdout).toBe('1');
    const crb = await kc
      .makeApiClient(RbacAuthorizationV1Api)
      .readClusterRoleBinding({ name: `${fullname}-sandbox-apiserver-auth-delegator` });
    expect(crb.roleRef.name).toBe('system:auth-delegator');
  });

  describe('gives each app exactly the access it needs', () => {
    type Check = [verb: string, resource: string, opts: Partial<V1ResourceAttributes> & { allowed: boolean }];
    const ext = 'extensions.agents.x-k8s.io';
    const cases: Record<string, Check[]> = {
      'claim-controller': [
        ['watch', 'sandboxclaims', { group: ext, allowed: true }],
        ['patch', 'sandboxclaims', { group: ext, subresource: 'status', allowed: true }],
        ['update', 'sandboxclaims', { group: ext, subresource: 'finalizers', allowed: true }],
        ['list', 'nodeinventories', { group: ext, allowed: true }],
        ['create', 'secrets', { namespace: 'team-x', allowed: true }],
        ['patch', 'secrets', { namespace: 'team-x', allowed: true }],
        ['delete', 'secrets', { namespace: 'team-x', allowed: false }],
        ['get', 'secrets', { namespace: 'kube-system', allowed: false }],
        ['list', 'secrets', { allowed: false }],
        ['create', 'tokenreviews', { group: 'authentication.k8s.io', allowed: true }],
        ['create', 'subjectaccessreviews', { group: 'authorization.k8s.io', allowed: true }],
        ['update', 'leases', { group: 'coordination.k8s.io', namespace: '<release>', allowed: true }],
        ['update', 'leases', { group: 'coordination.k8s.io', namespace: 'kube-system', allowed: false }],
        // the fast path records each delivery as a SandboxClaim it creates; expiry may delete one
        ['create', 'sandboxclaims', { group: ext, allowed: true }],
        ['delete', 'sandboxclaims', { group: ext, allowed: true }],
        ['update', 'sandboxclaims', { group: ext, allowed: false }],
        ['update', 'sandboxclaims', { group: ext, subresource: 'status', allowed: false }],
        ['update', 'sandboxwarmpools', { group: ext, allowed: false }],
        ['delete', 'nodeinventories', { group: ext, allowed: false }],
        ['create', 'events', { group: 'events.k8s.io', namespace: 'team-x', allowed: true }],
        ['create', 'events', { namespace: 'team-x', allowed: false }],
      ],
      'warmpool-driver': [
        // status by server-side apply; the pools themselves it only reads
        ['patch', 'sandboxwarmpools', { group: ext, subresource: 'status', allowed: true }],
        ['update', 'sandboxwarmpools', { group: ext, subresource: 'status', allowed: false }],
        ['patch', 'sandboxwarmpools', { group: ext, allowed: false }],
        ['update', 'sandboxwarmpools', { group: ext, subresource: 'finalizers', allowed: false }],
        ['watch', 'sandboxtemplates', { group: ext, allowed: true }],
        ['list', 'nodeinventories', { group: ext, allowed: true }],
        // events.k8s.io, the only events API the apps write
        ['create', 'events', { group: 'events.k8s.io', namespace: 'team-x', allowed: true }],
        ['create', 'events', { namespace: 'team-x', allowed: false }],
        ['get', 'leases', { group: 'coordination.k8s.io', namespace: '<release>', allowed: true }],
        ['update', 'sandboxtemplates', { group: ext, allowed: false }],
        ['patch', 'sandboxclaims', { group: ext, allowed: false }],
        ['get', 'secrets', { namespace: '<release>', allowed: false }],
        // /metrics is authorized: the scraper's token reviewed, its access asked of RBAC
        ['create', 'tokenreviews', { group: 'authentication.k8s.io', allowed: true }],
        ['create', 'subjectaccessreviews', { group: 'authorization.k8s.io', allowed: true }],
      ],
      'inventory-publisher': [
        ['create', 'nodeinventories', { group: ext, allowed: true }],
        ['patch', 'nodeinventories', { group: ext, name: 'node-a', allowed: true }],
        // its own inventory is followed by an informer (list, watch), never read one by one
        ['get', 'nodeinventories', { group: ext, name: 'node-a', allowed: false }],
        ['list', 'nodeinventories', { group: ext, allowed: true }],
        // the parts of a split inventory it no longer needs (it may already patch any inventory)
        ['delete', 'nodeinventories', { group: ext, name: 'node-a.part-1', allowed: true }],
        ['watch', 'nodeinventories', { group: ext, allowed: true }],
        ['update', 'nodeinventories', { group: ext, name: 'node-a', allowed: false }],
        ['create', 'events', { group: 'events.k8s.io', namespace: 'team-x', allowed: false }],
        ['list', 'sandboxclaims', { group: ext, allowed: false }],
        ['get', 'secrets', { allowed: false }],
        ['create', 'tokenreviews', { group: 'authentication.k8s.io', allowed: true }],
        ['create', 'subjectaccessreviews', { group: 'authorization.k8s.io', allowed: true }],
      ],
      'sandbox-apiserver': [
        ['watch', 'nodeinventories', { group: ext, allowed: true }],
        // it serves sandboxes from the inventories and claims; pools and templates it never reads
        ['list', 'sandboxwarmpools', { group: ext, allowed: false }],
        ['get', 'sandboxtemplates', { group: ext, allowed: false }],
        ['create', 'events', { group: 'events.k8s.io', namespace: 'team-x', allowed: false }],
        // it follows claims to serve a claim's Sandbox the moment the claim is Ready; it never writes them
        ['list', 'sandboxclaims', { group: ext, allowed: true }],
        ['watch', 'sandboxclaims', { group: ext, allowed: true }],
        ['patch', 'sandboxclaims', { group: ext, allowed: false }],
        ['update', 'sandboxclaims', { group: ext, subresource: 'status', allowed: false }],
        ['create', 'tokenreviews', { group: 'authentication.k8s.io', allowed: true }],
        ['create', 'subjectaccessreviews', { group: 'authorization.k8s.io', allowed: true }],
        // the front-proxy CA and names: an informer of that one ConfigMap, nothing else in kube-system
        ['watch', 'configmaps', { namespace: 'kube-system', name: 'extension-apiserver-authentication', allowed: true }],
        ['get', 'configmaps', { namespace: 'kube-system', name: 'extension-apiserver-authentication', allowed: false }],
        ['watch', 'configmaps', { namespace: 'kube-system', name: 'coredns', allowed: false }],
        // its peers: the ready endpoints of its own Service, in its own namespace only
        ['list', 'endpointslices', { group: 'discovery.k8s.io', namespace: '<release>', allowed: true }],
        ['watch', 'endpointslices', { group: 'discovery.k8s.io', namespace: '<release>', allowed: true }],
        ['list', 'endpointslices', { group: 'discovery.k8s.io', namespace: 'kube-system', allowed: false }],
        ['update', 'endpointslices', { group: 'discovery.k8s.io', namespace: '<release>', allowed: false }],
        ['get', 'secrets', { namespace: 'kube-system', allowed: false }],
        // the labels and annotations users set on sandboxes: ConfigMaps of its own namespace only
        ['patch', 'configmaps', { namespace: '<release>', allowed: true }],
        ['watch', 'configmaps', { namespace: '<release>', allowed: true }],
        ['patch', 'configmaps', { namespace: 'kube-system', allowed: false }],
        ['delete', 'configmaps', { namespace: '<release>', allowed: false }],
        ['patch', 'nodeinventories', { group: ext, allowed: false }],
        ['update', 'sandboxwarmpools', { group: ext, allowed: false }],
      ],
    };

    async function allowed(saKc: KubeConfig, verb: string, resource: string, opts: Partial<V1ResourceAttributes>): Promise<boolean> {
      const namespace = opts.namespace === '<release>' ? ns : opts.namespace;
      const review = await saKc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
        body: { spec: { resourceAttributes: { group: '', ...opts, namespace, verb, resource } } },
      });
      return review.status?.allowed === true;
    }

    it.each(Object.keys(cases))('%s', async (app) => {
      expect(installed).toBe(true);
      const saKc = await kubeconfigForServiceAccount(kc, ns, `${fullname}-${app}`);
      const got: string[] = [];
      const want: string[] = [];
      for (const [verb, resource, { allowed: expected, ...opts }] of cases[app] ?? []) {
        const label = `${verb} ${[resource, opts.subresource].filter(Boolean).join('/')}${opts.namespace ? ` in ${opts.namespace}` : ''}`;
        got.push(`${label}: ${await allowed(saKc, verb, resource, opts)}`);
        want.push(`${label}: ${expected}`);
      }
      expect(got).toEqual(want);
    });
  });

  it('lets a namespace editor claim and delete sandboxes through the aggregated edit role', async () => {
    expect(installed).toBe(true);
    const user = `alice-${runSuffix()}`;
    await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: `${user}-edit` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
        subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    // A SubjectAccessReview as the API server would make it: kubectl's can-i would first need
    // discovery of agents.x-k8s.io, which only answers while a sandbox-apiserver is registered.
    const can = async (verb: string, subresource?: string, namespace = ns): Promise<boolean> => {
      const review = await kc.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
        body: {
          spec: {
            user,
            groups: ['system:authenticated'],
            resourceAttributes: { group: 'agents.x-k8s.io', resource: 'sandboxes', verb, namespace, subresource },
          },
        },
      });
      return review.status?.allowed === true;
    };
    // kube-controller-manager folds the labelled ClusterRoles into edit asynchronously.
    await eventually(
      async () => {
        expect(await can('create')).toBe(true);
      },
      { timeoutMs: 30_000 },
    );
    expect(await can('delete')).toBe(true);
    expect(await can('list')).toBe(true);
    expect(await can('create', undefined, 'kube-system')).toBe(false);
    // every subresource the discovery document advertises, with the verbs it advertises
    const advertised = (apiResourceList().resources as { name: string; verbs: string[] }[]).filter((r) => r.name.startsWith('sandboxes/'));
    expect(advertised.length).toBeGreaterThanOrEqual(9);
    const denied: string[] = [];
    for (const r of advertised)
      for (const verb of r.verbs) if (!(await can(verb, r.name.slice('sandboxes/'.length)))) denied.push(`${verb} ${r.name}`);
    expect(denied).toEqual([]);
  });
});
