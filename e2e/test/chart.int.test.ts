import { AppsV1Api, AuthorizationV1Api, CoreV1Api, RbacAuthorizationV1Api, type KubeConfig, type V1ResourceAttributes } from '@kubernetes/client-node';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { apiResourceList } from '@sandbox-scale/sandbox-apiserver';
import { createTestNamespace, deleteNamespace, eventually, kubeconfigForServiceAccount, kubectl, runSuffix, runTool, testKubeConfig } from '../src/index';

// The Helm chart as users install it: lint, render, a server-side dry run of everything it
// renders (APIService included), a real install with the APIService off (another suite
// registers the real one, and its name is fixed), then what each app's ServiceAccount may do.
const kc = testKubeConfig();
const chartDir = join(__dirname, '..', '..', 'charts', 'sandbox-scale');
const release = `ss-${runSuffix()}`;
const fullname = `${release}-sandbox-scale`;
let ns: string;
let installed = false;

interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

function renderedDocs(yamlText: string): Rendered[] {
  return parseAllDocuments(yamlText).map((d) => d.toJSON() as Rendered | null).filter((d): d is Rendered => d !== null);
}

/**
 * stderr lines of `kubectl apply` other than its last-applied warning, which objects another
 * suite created by server-side apply (the CRDs, the APIService) draw and which is harmless.
 */
function complaints(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.trim() !== '' && !/missing the kubectl\.kubernetes\.io\/last-applied-configuration annotation/.test(l));
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

describe('the sandbox-scale chart', () => {
  it('lints clean, with the chart-issued certificates and with cert-manager', async () => {
    for (const extra of [[], ['--set', 'certManager.enabled=true'], ['--set', 'claimController.secretNamespaces={team-a,team-b}']]) {
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
    const both = await runTool('helm', ['template', release, chartDir, '--set', 'apiService.caBundle=Zm9v', '--set', 'apiService.insecureSkipTLSVerify=true']);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/caBundle and apiService\.insecureSkipTLSVerify are exclusive/);
  });

  it('renders objects the real API server accepts in a server-side dry run, the APIService included', async () => {
    const out = await helmTemplate(['--include-crds']);
    const docs = renderedDocs(out);
    expect(docs.map((d) => d.kind)).toEqual(expect.arrayContaining(['APIService', 'DaemonSet', 'Deployment', 'PodDisruptionBudget', 'CustomResourceDefinition', 'ClusterRole', 'RoleBinding']));
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: out });
    expect(complaints(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/apiservice\.apiregistration\.k8s\.io\/v1beta1\.agents\.x-k8s\.io (created|configured|unchanged) \(server dry run\)/);
    expect(res.stdout).toMatch(new RegExp(`daemonset\\.apps/${fullname}-inventory-publisher created \\(server dry run\\)`));
  });

  it('signs the APIService caBundle and the serving certificate with the same CA', async () => {
    const docs = renderedDocs(await helmTemplate());
    const apiService = docs.find((d) => d.kind === 'APIService');
    const serving = docs.find((d) => d.kind === 'Secret' && d.metadata.name === `${fullname}-sandbox-apiserver-serving`);
    expect(apiService?.spec).toMatchObject({ group: 'agents.x-k8s.io', version: 'v1beta1', service: { namespace: ns, name: `${fullname}-sandbox-apiserver`, port: 443 } });
    expect(serving?.data?.['ca.crt']).toBeTruthy();
    expect(apiService?.spec?.caBundle).toBe(serving?.data?.['ca.crt']);
    const certPem = Buffer.from(serving?.data?.['tls.crt'] ?? '', 'base64').toString();
    const { X509Certificate } = await import('node:crypto');
    const cert = new X509Certificate(certPem);
    expect(cert.subjectAltName).toContain(`DNS:${fullname}-sandbox-apiserver.${ns}.svc`);
    expect(cert.verify(new X509Certificate(Buffer.from(serving?.data?.['ca.crt'] ?? '', 'base64').toString()).publicKey)).toBe(true);
  });

  it('points the APIService at an external endpoint through an ExternalName Service, accepted by the server', async () => {
    const out = await helmTemplate([
      '--set', 'claimController.enabled=false', '--set', 'warmpoolDriver.enabled=false', '--set', 'inventoryPublisher.enabled=false',
      '--set', 'sandboxApiserver.enabled=false', '--set', 'apiService.external.host=localhost', '--set', 'apiService.service.port=16443',
      '--set', 'apiService.insecureSkipTLSVerify=true',
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

  it('writes claim Secrets in every namespace by default, and only in claimController.secretNamespaces when that is set', async () => {
    type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[] };
    const secretRules = (d: Rendered | undefined): Rule[] => ((d as { rules?: Rule[] } | undefined)?.rules ?? []).filter((r) => r.resources?.includes('secrets'));
    const clusterRole = (docs: Rendered[]) => docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === `${fullname}-claim-controller`);
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

  it('installs on the control plane: the release is deployed and its objects exist', async () => {
    const res = await runTool('helm', ['install', release, chartDir, '--namespace', ns, '--set', 'apiService.enabled=false', '--timeout', '90s']);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    installed = true;
    const status = await runTool('helm', ['status', release, '--namespace', ns, '-o', 'json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ name: release, namespace: ns, info: { status: 'deployed' } });

    const apps = kc.makeApiClient(AppsV1Api);
    const deployments = await apps.listNamespacedDeployment({ namespace: ns });
    expect(Object.fromEntries(deployments.items.map((d) => [d.metadata?.name, d.spec?.replicas]))).toEqual({
      [`${fullname}-claim-controller`]: 2,
      [`${fullname}-warmpool-driver`]: 1,
      [`${fullname}-sandbox-apiserver`]: 2,
    });
    const ds = await apps.readNamespacedDaemonSet({ namespace: ns, name: `${fullname}-inventory-publisher` });
    const container = ds.spec?.template.spec?.containers[0];
    expect(container?.args).toEqual(expect.arrayContaining(['--node-name=$(NODE_NAME)', '--sandboxd-url=http://$(NODE_IP):7777', `--fleet-token-file=/var/run/sandbox-scale/fleet-token/token`]));
    expect(container?.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('spec.nodeName');
    expect(container?.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } });

    const cc = deployments.items.find((d) => d.metadata?.name === `${fullname}-claim-controller`);
    expect(cc?.spec?.template.spec?.containers[0]?.args).toEqual(expect.arrayContaining(['--leader-elect=true', `--leader-election-namespace=${ns}`]));
    expect(cc?.spec?.template.spec?.containers[0]?.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'health' });

    const sas = await kc.makeApiClient(CoreV1Api).listNamespacedServiceAccount({ namespace: ns });
    expect(sas.items.map((s) => s.metadata?.name)).toEqual(expect.arrayContaining(['claim-controller', 'warmpool-driver', 'inventory-publisher', 'sandbox-apiserver'].map((a) => `${fullname}-${a}`)));
    const pdb = await kubectl(['get', 'pdb', '-n', ns, `${fullname}-sandbox-apiserver`, '-o', 'jsonpath={.spec.minAvailable}']);
    expect(pdb.stdout).toBe('1');
    const crb = await kc.makeApiClient(RbacAuthorizationV1Api).readClusterRoleBinding({ name: `${fullname}-sandbox-apiserver-auth-delegator` });
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
      ],
      'warmpool-driver': [
        ['update', 'sandboxwarmpools', { group: ext, subresource: 'status', allowed: true }],
        ['patch', 'sandboxwarmpools', { group: ext, allowed: true }],
        ['watch', 'sandboxtemplates', { group: ext, allowed: true }],
        ['list', 'nodeinventories', { group: ext, allowed: true }],
        ['create', 'events', { namespace: 'team-x', allowed: true }],
        ['get', 'leases', { group: 'coordination.k8s.io', namespace: '<release>', allowed: true }],
        ['update', 'sandboxtemplates', { group: ext, allowed: false }],
        ['patch', 'sandboxclaims', { group: ext, allowed: false }],
        ['get', 'secrets', { namespace: '<release>', allowed: false }],
      ],
      'inventory-publisher': [
        ['create', 'nodeinventories', { group: ext, allowed: true }],
        ['patch', 'nodeinventories', { group: ext, name: 'node-a', allowed: true }],
        ['get', 'nodeinventories', { group: ext, name: 'node-a', allowed: true }],
        // the parts of a split inventory it no longer needs (it may already patch any inventory)
        ['delete', 'nodeinventories', { group: ext, name: 'node-a.part-1', allowed: true }],
        ['watch', 'nodeinventories', { group: ext, allowed: true }],
        ['list', 'sandboxclaims', { group: ext, allowed: false }],
        ['get', 'secrets', { allowed: false }],
      ],
      'sandbox-apiserver': [
        ['watch', 'nodeinventories', { group: ext, allowed: true }],
        ['list', 'sandboxwarmpools', { group: ext, allowed: true }],
        ['get', 'sandboxtemplates', { group: ext, allowed: true }],
        ['create', 'tokenreviews', { group: 'authentication.k8s.io', allowed: true }],
        ['create', 'subjectaccessreviews', { group: 'authorization.k8s.io', allowed: true }],
        ['get', 'configmaps', { namespace: 'kube-system', name: 'extension-apiserver-authentication', allowed: true }],
        // its peers: the ready endpoints of its own Service, in its own namespace only
        ['list', 'endpointslices', { group: 'discovery.k8s.io', namespace: '<release>', allowed: true }],
        ['watch', 'endpointslices', { group: 'discovery.k8s.io', namespace: '<release>', allowed: true }],
        ['list', 'endpointslices', { group: 'discovery.k8s.io', namespace: 'kube-system', allowed: false }],
        ['update', 'endpointslices', { group: 'discovery.k8s.io', namespace: '<release>', allowed: false }],
        ['get', 'secrets', { namespace: 'kube-system', allowed: false }],
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
      body: { metadata: { name: `${user}-edit` }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' }, subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }] },
    });
    // A SubjectAccessReview as the API server would make it: kubectl's can-i would first need
    // discovery of agents.x-k8s.io, which only answers while a sandbox-apiserver is registered.
    const can = async (verb: string, subresource?: string, namespace = ns): Promise<boolean> => {
      const review = await kc.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
        body: { spec: { user, groups: ['system:authenticated'], resourceAttributes: { group: 'agents.x-k8s.io', resource: 'sandboxes', verb, namespace, subresource } } },
      });
      return review.status?.allowed === true;
    };
    // kube-controller-manager folds the labelled ClusterRoles into edit asynchronously.
    await eventually(async () => {
      expect(await can('create')).toBe(true);
    }, { timeoutMs: 30_000 });
    expect(await can('delete')).toBe(true);
    expect(await can('list')).toBe(true);
    expect(await can('create', undefined, 'kube-system')).toBe(false);
    // every subresource the discovery document advertises, with the verbs it advertises
    const advertised = (apiResourceList().resources as { name: string; verbs: string[] }[]).filter((r) => r.name.startsWith('sandboxes/'));
    expect(advertised.length).toBeGreaterThanOrEqual(9);
    const denied: string[] = [];
    for (const r of advertised) for (const verb of r.verbs) if (!(await can(verb, r.name.slice('sandboxes/'.length)))) denied.push(`${verb} ${r.name}`);
    expect(denied).toEqual([]);
  });
});
