import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { ClaimControllerFlagsSchema } from '@sandbox-scale/claim-controller';
import { isHelp, managerOptionsFromFlags, parseFlags } from '@sandbox-scale/kube-runtime';
import { captureLog } from '@sandbox-scale/kube-runtime/testing';
import { WarmpoolDriverFlagsSchema } from '@sandbox-scale/warmpool-driver';
import { Registry } from 'prom-client';
import { KubeConfig } from '@kubernetes/client-node';
import { createTestNamespace, deleteNamespace, kubectl, runTool, testKubeConfig } from '../src/index';

// The values platform teams set on the chart: each is rendered where it belongs, on every app
// it names, and a misspelled one is refused by the schema, naming it.

const chartDir = join(__dirname, '..', '..', 'charts', 'sandbox-scale');
const release = 'pv';
const fullname = `${release}-sandbox-scale`;
const APPS = [
  { key: 'claimController', app: 'claim-controller', kind: 'Deployment' },
  { key: 'warmpoolDriver', app: 'warmpool-driver', kind: 'Deployment' },
  { key: 'sandboxApiserver', app: 'sandbox-apiserver', kind: 'Deployment' },
  { key: 'inventoryPublisher', app: 'inventory-publisher', kind: 'DaemonSet' },
] as const;

interface Probe {
  timeoutSeconds?: number;
  periodSeconds?: number;
  failureThreshold?: number;
}
interface Container {
  name: string;
  args?: string[];
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
}
interface PodSpec {
  containers: Container[];
  volumes?: { name: string }[];
  topologySpreadConstraints?: { topologyKey: string; labelSelector?: { matchLabels: Record<string, string> } }[];
  affinity?: Record<string, unknown>;
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
}
interface Doc {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { template?: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec } };
}

async function renderText(namespace: string, ...sets: string[]): Promise<string> {
  const r = await runTool('helm', ['template', release, chartDir, '--namespace', namespace, ...sets]);
  if (r.code !== 0) throw new Error(r.stderr);
  return r.stdout;
}

async function render(...sets: string[]): Promise<Doc[]> {
  return parseAllDocuments(await renderText('sandbox-scale', ...sets))
    .map((d) => d.toJSON() as Doc | null)
    .filter((d): d is Doc => d !== null);
}

async function refused(...sets: string[]): Promise<string> {
  const r = await runTool('helm', ['template', release, chartDir, ...sets]);
  expect(r.code).not.toBe(0);
  return r.stderr;
}

function workload(
  docs: Doc[],
  app: (typeof APPS)[number],
): { labels: Record<string, string>; annotations: Record<string, string>; pod: PodSpec } {
  const d = docs.find((x) => x.kind === app.kind && x.metadata.name === `${fullname}-${app.app}`);
  const t = d?.spec?.template;
  if (t === undefined) throw new Error(`no ${app.kind} ${app.app}`);
  return { labels: t.metadata.labels ?? {}, annotations: t.metadata.annotations ?? {}, pod: t.spec };
}

const main = (pod: PodSpec, app: (typeof APPS)[number]): Container => {
  const c = pod.containers.find((x) => x.name === app.app);
  if (c === undefined) throw new Error(`no container ${app.app}`);
  return c;
};

describe("the chart's platform values", () => {
  it('adds commonLabels to every object, and podLabels and podAnnotations to every pod, the app over the top level', async () => {
    const sets = ['--set', 'commonLabels.team=platform', '--set', 'podLabels.tier=top', '--set-string', 'podAnnotations.scrape=yes'];
    for (const a of APPS) sets.push('--set', `${a.key}.podLabels.tier=${a.app}`, '--set-string', `${a.key}.podAnnotations.owner=${a.app}`);
    const docs = await render(...sets);
    expect(docs.filter((d) => d.metadata.labels?.team !== 'platform').map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([]);
    for (const a of APPS) {
      const w = workload(docs, a);
      expect(w.labels).toMatchObject({ tier: a.app, team: 'platform', 'app.kubernetes.io/component': a.app });
      expect(w.annotations).toEqual({ scrape: 'yes', owner: a.app });
    }
    // the top level alone, where an app sets none
    const top = await render('--set', 'podLabels.tier=top');
    for (const a of APPS) expect(workload(top, a).labels.tier).toBe('top');
  });

  it("refuses labels that would replace the chart's own keys, and misspelled names, naming them", async () => {
    expect(await refused('--set', 'podLabels.app\\.kubernetes\\.io/component=x')).toContain('/podLabels');
    expect(await refused('--set', 'commonLabels.helm\\.sh/chart=x')).toContain('/commonLabels');
    expect(await refused('--set', 'podLabel.x=y')).toContain("additional properties 'podLabel' not allowed");
    for (const a of APPS) {
      for (const wrong of ['extraEnvs', 'extraVolume', 'topologySpreadConstraint', 'livenessProbes', 'podAnnotation'])
        expect(await refused('--set', `${a.key}.${wrong}=x`)).toContain(`additional properties '${wrong}' not allowed`);
      expect(await refused('--set', `${a.key}.readinessProbe.timeoutSecond=2`)).toContain(`/${a.key}/readinessProbe`);
    }
  });

  it("renders extraEnv, extraVolumes and extraVolumeMounts in each app's container, after the chart's own", async () => {
    const sets: string[] = [];
    for (const a of APPS)
      sets.push(
        '--set-json',
        `${a.key}.extraEnv=[{"name":"EXTRA","value":"${a.app}"}]`,
        '--set-json',
        `${a.key}.extraVolumes=[{"name":"extra","emptyDir":{}}]`,
        '--set-json',
        `${a.key}.extraVolumeMounts=[{"name":"extra","mountPath":"/extra"}]`,
      );
    const docs = await render(...sets);
    for (const a of APPS) {
      const w = workload(docs, a);
      const c = main(w.pod, a);
      expect(c.env?.at(-1)).toEqual({ name: 'EXTRA', value: a.app });
      expect(c.env?.some((e) => e.name === 'LOG_LEVEL')).toBe(true);
      expect(c.volumeMounts?.at(-1)).toEqual({ name: 'extra', mountPath: '/extra' });
      expect(w.pod.volumes?.at(-1)).toEqual({ name: 'extra', emptyDir: {} });
      expect(w.pod.volumes?.some((v) => v.name === 'tmp')).toBe(true);
    }
    expect(await refused('--set-json', 'claimController.extraEnv=[{"value":"no name"}]')).toContain('/claimController/extraEnv/0');
  });

  it('times the probes by the values, and keeps the defaults otherwise', async () => {
    const sets: string[] = [];
    for (const a of APPS)
      sets.push(
        '--set',
        `${a.key}.livenessProbe.timeoutSeconds=4`,
        '--set',
        `${a.key}.livenessProbe.periodSeconds=20`,
        '--set',
        `${a.key}.readinessProbe.failureThreshold=6`,
      );
    const docs = await render(...sets);
    const defaults = await render();
    for (const a of APPS) {
      const c = main(workload(docs, a).pod, a);
      expect(c.livenessProbe).toMatchObject({ timeoutSeconds: 4, periodSeconds: 20, failureThreshold: 3 });
      expect(c.readinessProbe).toMatchObject({ timeoutSeconds: 1, periodSeconds: 5, failureThreshold: 6 });
      const d = main(workload(defaults, a).pod, a);
      expect(d.livenessProbe).toMatchObject({ timeoutSeconds: 1, periodSeconds: 10, failureThreshold: 3 });
    }
    expect(await refused('--set', 'sandboxApiserver.livenessProbe.periodSeconds=0')).toContain(
      '/sandboxApiserver/livenessProbe/periodSeconds',
    );
  });

  it("spreads each app by its topologySpreadConstraints, the app's own selector filled in; sandbox-apiserver by hostname by default", async () => {
    const defaults = await render();
    const api = APPS[2];
    expect(workload(defaults, api).pod.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: {
          matchLabels: {
            'app.kubernetes.io/name': 'sandbox-scale',
            'app.kubernetes.io/instance': release,
            'app.kubernetes.io/component': 'sandbox-apiserver',
          },
        },
      },
    ]);
    const zone = '[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]';
    const sets: string[] = [];
    for (const a of APPS) sets.push('--set-json', `${a.key}.topologySpreadConstraints=${zone}`);
    const docs = await render(...sets);
    for (const a of APPS) {
      const spread = workload(docs, a).pod.topologySpreadConstraints;
      expect(spread?.map((t) => [t.topologyKey, t.labelSelector?.matchLabels['app.kubernetes.io/component']])).toEqual([
        ['topology.kubernetes.io/zone', a.app],
      ]);
    }
    expect(await refused('--set-json', 'warmpoolDriver.topologySpreadConstraints=[{"maxSkew":1}]')).toContain(
      '/warmpoolDriver/topologySpreadConstraints/0',
    );
  });

  it("lets sandbox-apiserver's young generation grow to maxSemiSpaceMiB through NODE_OPTIONS, node's own by default", async () => {
    const nodeOptions = (docs: Doc[], app: (typeof APPS)[number] = APPS[2]): (string | undefined)[] =>
      (workload(docs, app).pod.containers[0]?.env ?? []).filter((e) => e.name === 'NODE_OPTIONS').map((e) => e.value);
    // node's own by default: a larger young generation costs memory the default limit keeps for replies
    for (const a of APPS) expect(nodeOptions(await render(), a)).toEqual([]);
    const large = await render('--set', 'sandboxApiserver.maxSemiSpaceMiB=64');
    expect(nodeOptions(large)).toEqual(['--max-semi-space-size=64']);
    for (const a of APPS.filter((x) => x !== APPS[2])) expect(nodeOptions(large, a)).toEqual([]);
    expect(await refused('--set', 'sandboxApiserver.maxSemiSpaceMiB=-1')).toContain('/sandboxApiserver/maxSemiSpaceMiB');
  });

  it('places every app by resources, nodeSelector, tolerations and affinity', async () => {
    const affinity =
      '{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["control"]}]}]}}}';
    const sets: string[] = [];
    for (const a of APPS)
      sets.push(
        '--set',
        `${a.key}.nodeSelector.pool=control`,
        '--set-json',
        `${a.key}.tolerations=[{"key":"dedicated","operator":"Exists"}]`,
        '--set-json',
        `${a.key}.affinity=${affinity}`,
        '--set',
        `${a.key}.resources.limits.memory=300Mi`,
      );
    const docs = await render(...sets);
    for (const a of APPS) {
      const w = workload(docs, a);
      expect(w.pod.nodeSelector).toMatchObject({ pool: 'control' });
      expect(w.pod.tolerations).toEqual([{ key: 'dedicated', operator: 'Exists' }]);
      expect(w.pod.affinity).toEqual(JSON.parse(affinity));
      expect((main(w.pod, a) as unknown as { resources: { limits: { memory: string } } }).resources.limits.memory).toBe('300Mi');
    }
  });
});

interface Policy {
  kind: string;
  metadata: { name: string };
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: { ports: { port: number; protocol: string }[] }[];
    egress: { ports: { port: number; protocol: string }[]; to?: { podSelector?: unknown; ipBlock?: { cidr: string } }[] }[];
  };
}

const portsOf = (rules: { ports: { port: number; protocol: string }[] }[]): string[] =>
  [...new Set(rules.flatMap((r) => r.ports.map((p) => `${p.protocol}/${p.port}`)))].sort();

// The node's bridge CNI enforces no NetworkPolicy, so these are checked as rendered and as the
// API server admits them, not by traffic.
describe("the chart's NetworkPolicies (rendered and admitted; not enforced by the test node's CNI)", () => {
  const kc = testKubeConfig();
  let ns: string;
  beforeAll(async () => {
    ns = await createTestNamespace(kc, 'netpol');
  });
  afterAll(() => deleteNamespace(kc, ns));

  it('renders none by default, and one per app with exactly the ports it serves and dials when enabled', async () => {
    expect((await render()).filter((d) => d.kind === 'NetworkPolicy')).toEqual([]);
    const docs = (await render('--set', 'networkPolicy.enabled=true', '--set', 'e2b.enabled=true')) as unknown as Policy[];
    const policies = new Map(
      docs.filter((d) => d.kind === 'NetworkPolicy').map((d) => [d.metadata.name.slice(fullname.length + 1), d.spec]),
    );
    expect([...policies.keys()].sort()).toEqual(['claim-controller', 'inventory-publisher', 'sandbox-apiserver', 'warmpool-driver']);
    for (const [app, spec] of policies) {
      expect(spec.podSelector.matchLabels['app.kubernetes.io/component']).toBe(app);
      expect(spec.policyTypes).toEqual(['Ingress', 'Egress']);
    }
    const common = ['TCP/443', 'TCP/53', 'TCP/6443', 'TCP/7777', 'UDP/53'];
    const expected: Record<string, { ingress: string[]; egress: string[] }> = {
      'claim-controller': { ingress: ['TCP/8080', 'TCP/8081', 'TCP/9443'], egress: [...common, 'TCP/9443'].sort() },
      'warmpool-driver': { ingress: ['TCP/8080', 'TCP/8081'], egress: common },
      'sandbox-apiserver': { ingress: ['TCP/3000', 'TCP/6443', 'TCP/8080'], egress: common },
      'inventory-publisher': { ingress: ['TCP/8080', 'TCP/8081'], egress: common },
    };
    for (const [app, want] of Object.entries(expected)) {
      const spec = policies.get(app);
      expect({ app, ingress: portsOf(spec?.ingress ?? []), egress: portsOf(spec?.egress ?? []) }).toEqual({ app, ...want });
    }
    // the peers' rules reach only the app's own pods
    const peer = policies.get('claim-controller')?.egress.find((r) => r.to?.some((t) => t.podSelector !== undefined));
    expect(peer?.to).toEqual([
      { podSelector: { matchLabels: expect.objectContaining({ 'app.kubernetes.io/component': 'claim-controller' }) as unknown } },
    ]);
    // kube-apiserver's addresses, when given, bound its ports
    const bounded = (await render(
      '--set',
      'networkPolicy.enabled=true',
      '--set-json',
      'networkPolicy.kubeApiServer.cidrs=["10.0.0.1/32"]',
    )) as unknown as Policy[];
    const api = bounded.find((d) => d.kind === 'NetworkPolicy')?.spec.egress.find((r) => r.ports.some((p) => p.port === 443));
    expect(api?.to).toEqual([{ ipBlock: { cidr: '10.0.0.1/32' } }]);
    expect(await refused('--set', 'networkPolicy.enable=true')).toContain("additional properties 'enable' not allowed");
    expect(await refused('--set-json', 'networkPolicy.kubeApiServer.cidrs=["10.0.0.1"]')).toContain('/networkPolicy/kubeApiServer/cidrs/0');
  });

  it('are admitted by the API server in a server-side dry run', async () => {
    const out = await renderText(
      ns,
      '--set',
      'networkPolicy.enabled=true',
      '--set',
      'e2b.enabled=true',
      '--show-only',
      'templates/networkpolicy.yaml',
    );
    const res = await kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], { input: out });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    for (const app of ['claim-controller', 'warmpool-driver', 'sandbox-apiserver', 'inventory-publisher'])
      expect(res.stdout).toContain(`networkpolicy.networking.k8s.io/${fullname}-${app} created (server dry run)`);
  });
});

describe('the node DaemonSet in a namespace of its own (inventoryPublisher.namespace)', () => {
  interface Obj {
    kind: string;
    metadata: { name: string; namespace?: string };
    spec?: Record<string, unknown>;
    subjects?: { name: string; namespace: string }[];
    rules?: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[];
  }
  const objects = async (...sets: string[]): Promise<Obj[]> => (await render(...sets)) as unknown as Obj[];
  const apart = ['--set', 'inventoryPublisher.namespace=sandbox-nodes', '--set', 'networkPolicy.enabled=true'];
  const isPublisher = (o: Obj): boolean => o.metadata.name.startsWith(`${fullname}-inventory-publisher`);

  it('moves the DaemonSet, its ServiceAccount, metrics Service and NetworkPolicy, and names it there everywhere it is trusted', async () => {
    const docs = await objects(...apart);
    const placed = docs
      .filter((o) => isPublisher(o) && o.metadata.namespace !== undefined)
      .map((o) => `${o.kind}/${o.metadata.namespace ?? ''}`)
      .sort();
    expect(placed).toEqual([
      'DaemonSet/sandbox-nodes',
      'NetworkPolicy/sandbox-nodes',
      // the notices Role reads the sandbox-apiserver Service's EndpointSlices, in the release's namespace
      'Role/sandbox-scale',
      'RoleBinding/sandbox-scale',
      'Service/sandbox-nodes',
      'ServiceAccount/sandbox-nodes',
    ]);
    // every other namespaced object stays where it was: the release's namespace (and kube-system's auth reader)
    expect(new Set(docs.filter((o) => !isPublisher(o)).map((o) => o.metadata.namespace ?? 'cluster'))).toEqual(
      new Set(['cluster', 'kube-system', 'sandbox-scale']),
    );
    const user = `system:serviceaccount:sandbox-nodes:${fullname}-inventory-publisher`;
    for (const b of docs.filter((o) => isPublisher(o) && o.kind.endsWith('Binding')))
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: `${fullname}-inventory-publisher`, namespace: 'sandbox-nodes' }]);
    const text = await renderText('sandbox-scale', ...apart);
    expect(text).toContain(`--notice-publisher=${user}`);
    expect(text).toContain(`request.userInfo.username == "${user}"`);
    // the NetworkPolicy lets it reach sandbox-apiserver's pods across namespaces
    expect(text).toContain('kubernetes.io/metadata.name: sandbox-scale');
  });

  it("trusts the APIService's caBundle for notices instead of mounting the serving Secret, granted reading that one APIService", async () => {
    const ds = (await objects(...apart)).find((o) => o.kind === 'DaemonSet');
    const text = JSON.stringify(ds);
    expect(text).toContain('--notice-ca-apiservice=v1beta1.agents.x-k8s.io');
    expect(text).not.toContain('--notice-ca-file');
    expect(text).not.toContain('-serving');
    const role = (await objects(...apart)).find((o) => o.kind === 'ClusterRole' && o.metadata.name === `${fullname}-inventory-publisher`);
    expect(role?.rules).toContainEqual({
      apiGroups: ['apiregistration.k8s.io'],
      resources: ['apiservices'],
      resourceNames: ['v1beta1.agents.x-k8s.io'],
      verbs: ['list', 'watch'],
    });
    // in the release's namespace: the mounted CA file, and no grant on APIServices
    const same = await objects();
    expect(JSON.stringify(same.find((o) => o.kind === 'DaemonSet'))).toContain('--notice-ca-file=');
    const sameRole = same.find((o) => o.kind === 'ClusterRole' && o.metadata.name === `${fullname}-inventory-publisher`);
    expect(JSON.stringify(sameRole)).not.toContain('apiservices');
  });

  it('refuses a namespace that is not a DNS label, and notices without an APIService to trust', async () => {
    expect(await refused('--set', 'inventoryPublisher.namespace=Nodes_1')).toContain('/inventoryPublisher/namespace');
    expect(await refused('--set', 'inventoryPublisher.namespace=nodes', '--set', 'apiService.enabled=false')).toContain(
      "reads the CA for node notices from the APIService's caBundle",
    );
    await expect(
      objects(
        '--set',
        'inventoryPublisher.namespace=nodes',
        '--set',
        'apiService.enabled=false',
        '--set',
        'inventoryPublisher.notices.enabled=false',
      ),
    ).resolves.toContainEqual(expect.objectContaining({ kind: 'DaemonSet' }));
  });
});

describe("the chart's package facts", () => {
  const chart = parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as {
    version: string;
    appVersion: string;
    kubeVersion: string;
    home: string;
    icon: string;
    sources: string[];
    annotations: Record<string, string>;
  };
  const root = join(chartDir, '..', '..');

  it('names its Kubernetes floor, icon, sources, license and category, as Artifact Hub reads them', () => {
    expect(chart.kubeVersion).toBe('>=1.30.0-0');
    expect(chart.sources).toContain(chart.home);
    // the icon is a file of the repository, at the URL its home serves it from
    const icon = chart.icon.replace(`${chart.home.replace('github.com', 'raw.githubusercontent.com')}/main/`, '');
    expect(readFileSync(join(root, icon), 'utf8')).toContain('<svg');
    const license = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { license: string }).license;
    expect(chart.annotations['artifacthub.io/license']).toBe(license);
    expect(license).toBe('Apache-2.0');
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0/);
    expect(chart.annotations['artifacthub.io/category']).toBe('ai-machine-learning');
    const changes = parse(chart.annotations['artifacthub.io/changes'] ?? '') as { kind: string; description: string }[];
    expect(changes.length).toBeGreaterThan(0);
    for (const c of changes) expect(['added', 'changed', 'deprecated', 'removed', 'fixed', 'security']).toContain(c.kind);
  });

  it('lists every image the chart runs in artifacthub.io/images, and renders for a cluster older than its floor not at all', async () => {
    const listed = (parse(chart.annotations['artifacthub.io/images'] ?? '') as { name: string; image: string }[])
      .map((i) => i.image)
      .sort();
    const docs = await render();
    const used = [
      ...new Set(docs.flatMap((d) => d.spec?.template?.spec.containers.map((c) => (c as unknown as { image: string }).image) ?? [])),
    ].sort();
    expect(listed).toEqual(used);
    expect(used.every((i) => i.endsWith(`:${chart.appVersion}`))).toBe(true);
    const old = await runTool('helm', ['template', release, chartDir, '--kube-version', '1.29.9']);
    expect(old.code).not.toBe(0);
    expect(old.stderr).toContain('chart requires kubeVersion: >=1.30.0-0');
  });

  it('pins each image by digest when one is given, and refuses a digest that is not sha256', async () => {
    const digest = `sha256:${'0123456789abcdef'.repeat(4)}`;
    const sets: string[] = [];
    for (const a of APPS) sets.push('--set', `${a.key}.image.digest=${digest}`);
    const docs = await render(...sets);
    for (const a of APPS) {
      const image = (main(workload(docs, a).pod, a) as unknown as { image: string }).image;
      expect(image).toBe(`ghcr.io/sandbox-scale/${a.app}@${digest}`);
    }
    expect(await refused('--set', 'claimController.image.digest=sha256:abc')).toContain('/claimController/image/digest');
  });
});

describe("the chart's alert overrides (metrics.prometheusRule.overrides)", () => {
  interface Rule {
    alert: string;
    for?: string;
    labels?: Record<string, string>;
  }
  const MONITORING = ['--set', 'metrics.prometheusRule.enabled=true', '--api-versions', 'monitoring.coreos.com/v1'];
  const rules = async (...sets: string[]): Promise<Rule[]> => {
    const docs = (await render(...MONITORING, ...sets)) as unknown as { kind: string; spec?: { groups?: { rules: Rule[] }[] } }[];
    return docs.filter((d) => d.kind === 'PrometheusRule').flatMap((d) => (d.spec?.groups ?? []).flatMap((g) => g.rules));
  };

  it("sets one alert's for and merges its labels over its own, leaving every other alert as the file has it", async () => {
    const plain = await rules();
    const changed = await rules(
      '--set-json',
      'metrics.prometheusRule.overrides={"SandboxScaleTargetDown":{"for":"90s","labels":{"severity":"critical","team":"platform"}}}',
    );
    const target = changed.find((r) => r.alert === 'SandboxScaleTargetDown');
    expect(target?.for).toBe('90s');
    expect(target?.labels).toEqual({ severity: 'critical', team: 'platform' });
    expect(plain.find((r) => r.alert === 'SandboxScaleTargetDown')?.for).toBe('5m');
    expect(changed.filter((r) => r.alert !== 'SandboxScaleTargetDown')).toEqual(plain.filter((r) => r.alert !== 'SandboxScaleTargetDown'));
    const labelsOnly = await rules(
      '--set-json',
      'metrics.prometheusRule.overrides={"SandboxScaleAPIErrors":{"labels":{"team":"platform"}}}',
    );
    const errors = labelsOnly.find((r) => r.alert === 'SandboxScaleAPIErrors');
    expect(errors?.labels).toEqual({
      severity: plain.find((r) => r.alert === 'SandboxScaleAPIErrors')?.labels?.severity,
      team: 'platform',
    });
    expect(errors?.for).toBe(plain.find((r) => r.alert === 'SandboxScaleAPIErrors')?.for);
  });

  it('refuses an alert the chart does not have, a for that is not a duration, and a field it does not know, naming the value', async () => {
    expect(await refused(...MONITORING, '--set', 'metrics.prometheusRule.overrides.SandboxScaleTargetDwn.for=1m')).toContain(
      'metrics.prometheusRule.overrides.SandboxScaleTargetDwn: the chart has no alert of that name (it has SandboxScaleNodeInventoryStale,',
    );
    expect(await refused(...MONITORING, '--set', 'metrics.prometheusRule.overrides.SandboxScaleTargetDown.for=5 minutes')).toContain(
      'metrics.prometheusRule.overrides.SandboxScaleTargetDown.for: "5 minutes" is not a Prometheus duration',
    );
    expect(await refused(...MONITORING, '--set', 'metrics.prometheusRule.overrides.SandboxScaleTargetDown.severity=critical')).toContain(
      '/metrics/prometheusRule/overrides/SandboxScaleTargetDown',
    );
  });
});

describe("the chart's leader election timings (leaderElection)", () => {
  const opts = (app: string, argv: string[]) => ({ program: app, summary: '', argv, env: {} });
  // each leader-elected app reads its rendered args with its own flag schema
  const LEADERS = [
    { app: APPS[0], flags: (argv: string[]) => parseFlags(ClaimControllerFlagsSchema, opts('claim-controller', argv)) },
    { app: APPS[1], flags: (argv: string[]) => parseFlags(WarmpoolDriverFlagsSchema, opts('warmpool-driver', argv)) },
  ] as const;
  // ...and starts its Manager with these election options
  const timings = async (...sets: string[]) => {
    const docs = await render(...sets);
    return LEADERS.map(({ app, flags }) => {
      const parsed = flags(main(workload(docs, app).pod, app).args ?? []);
      if (isHelp(parsed)) throw new Error(`${app.app}: the rendered args asked for --help`);
      const le = managerOptionsFromFlags(parsed, {
        log: captureLog().log,
        registry: new Registry(),
        kubeConfig: new KubeConfig(),
        leaseName: app.app,
        env: { POD_NAMESPACE: 'sandbox-scale' },
      }).leaderElection;
      return { app: app.app, ...le };
    });
  };

  it("gives both leader-elected apps the values' timings, Kubernetes' own by default", async () => {
    for (const t of await timings()) expect(t).toMatchObject({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2000 });
    const set = await timings(
      '--set',
      'leaderElection.leaseDuration=1m30s,leaderElection.renewDeadline=40s,leaderElection.retryPeriod=500ms',
    );
    expect(set.map((t) => t.app)).toEqual(['claim-controller', 'warmpool-driver']);
    for (const t of set) expect(t).toMatchObject({ leaseDurationMs: 90_000, renewDeadlineMs: 40_000, retryPeriodMs: 500 });
  });

  it('refuses timings under which two replicas could lead at once, and what is not a duration, naming the value', async () => {
    expect(await refused('--set', 'leaderElection.renewDeadline=15s')).toContain(
      'leaderElection.renewDeadline (15s) must be shorter than leaderElection.leaseDuration (15s)',
    );
    expect(await refused('--set', 'leaderElection.retryPeriod=9s')).toContain(
      'leaderElection.retryPeriod (9s) x 1.2 must be shorter than leaderElection.renewDeadline (10s)',
    );
    expect(
      await refused('--set', 'leaderElection.leaseDuration=900ms,leaderElection.renewDeadline=600ms,leaderElection.retryPeriod=100ms'),
    ).toContain('leaderElection.leaseDuration (900ms) must be at least 1s');
    expect(await refused('--set', 'leaderElection.leaseDuration=15')).toContain('/leaderElection/leaseDuration');
    expect(await refused('--set', 'leaderElection.lease=15s')).toContain('/leaderElection');
  });
});
