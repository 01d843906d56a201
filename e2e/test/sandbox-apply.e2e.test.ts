import { RbacAuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { eventually, kubectl, runSuffix, type RunResult } from '../src/index';
import { NodeInventorySchema, parseObject } from '@sandbox-scale/scale-core';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { grantEditRole } from '../src/testing/tenant-role';

// Sandboxes under GitOps, as kubectl, Flux and Argo CD apply them, run by a tenant holding the
// chart's edit role: client-side apply twice (and kubectl diff) of the manifest a Sandbox was
// created from changes nothing; server-side apply twice, by a second manager (a 409 conflict
// naming the field and manager, then --force-conflicts), dropping a field, spec.operatingMode
// through apply, and apply creating a name that does not exist; a view-only tenant may not apply.

const suffix = runSuffix();
const ns = `apply-${suffix}`;
const IMAGE = `ghcr.io/example/apply-${suffix}:1`;
let sys: SystemUnderTest;
let editor = '';
let viewer = '';

interface Sandbox extends KubernetesObject {
  metadata?: KubernetesObject['metadata'] & { managedFields?: { manager: string; operation: string; fieldsV1?: unknown }[] };
  status?: { conditions?: { type: string; status: string; reason?: string }[] };
}

const run = (kubeconfig: string, args: string[], input?: string): Promise<RunResult> => kubectl(args, { kubeconfig, input });

/** kubectl as the editor; a failure shows kubectl's own words. */
async function ok(args: string[], input?: string): Promise<string> {
  const r = await run(editor, args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} (exit ${r.code}): ${r.stderr}`);
  return r.stdout;
}

// kubectl prints managedFields only when asked
const get = async (name: string): Promise<Sandbox> =>
  JSON.parse(await ok(['-n', ns, 'get', 'sandbox', name, '-o', 'json', '--show-managed-fields'])) as Sandbox;

/** The namespace's metadata ConfigMap's resourceVersion: a write of users' metadata changes it. */
async function metadataVersion(): Promise<string> {
  const r = await run(sys.kubeconfigPath, [
    'get',
    'configmaps',
    '-A',
    '-l',
    `sandbox.cocoonstack.io/sandbox-metadata-of=${ns}`,
    '-o',
    'jsonpath={.items[*].metadata.resourceVersion}',
  ]);
  if (r.code !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
}

function manifest(name: string, opts: { labels?: Record<string, string>; image?: string; spec?: Record<string, unknown> } = {}): string {
  return JSON.stringify({
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: { name, namespace: ns, labels: opts.labels ?? { team: 'a' } },
    spec: {
      podTemplate: {
        spec: { containers: [{ name: 'agent', image: opts.image ?? IMAGE, resources: { requests: { cpu: '1', memory: '1Gi' } } }] },
      },
      ...(opts.spec ?? {}),
    },
  });
}

/** Waits until the sandbox is listed in its node's NodeInventory: from then on it is served from there, not from its create. */
async function published(name: string): Promise<Sandbox> {
  await eventually(
    async () => {
      const r = await run(sys.kubeconfigPath, ['get', 'nodeinventories', '-A', '-o', 'json']);
      const list = JSON.parse(r.stdout) as { items: unknown[] };
      const inventories = list.items.map((o) => parseObject(NodeInventorySchema, o));
      expect(inventories.flatMap((i) => (i.entries ?? []).map((e) => e.name))).toContain(`${ns}/${name}`);
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  return get(name);
}

const managers = (s: Sandbox): string[] => (s.metadata?.managedFields ?? []).map((m) => `${m.manager}/${m.operation}`).sort();
const readyReason = (s: Sandbox): string | undefined => s.status?.conditions?.find((c) => c.type === 'Ready')?.reason;

beforeAll(async () => {
  // two sandbox-apiserver replicas, as the chart runs: a write on one is read and written on by the other
  sys = await startSuiteSystem({ namespaces: [ns], local: { nodes: 2, speed: 0, publishInterval: '1s', apiserverReplicas: 2 } });
  editor = (await sys.tenant(ns, 'editor')).path;
  await grantEditRole(sys.kubeConfig, ns, 'editor');
  viewer = (await sys.tenant(ns, 'viewer')).path;
  await sys.kubeConfig.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'viewer-view' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: 'viewer', namespace: ns }],
    },
  });
  await applyWarmPool(sys, ns, { image: IMAGE, replicas: 6 });
  await waitPoolReady(sys, ns, 6);
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 60_000);

describe('kubectl apply (client-side), as Argo CD applies by default', () => {
  it('creates, then re-applies and diffs the same manifest with nothing changed; a different pool key is a 422 naming spec.podTemplate', async () => {
    // kubectl validates against the served OpenAPI (no --validate=false): the tenant cannot list CRDs
    expect(await ok(['apply', '-f', '-'], manifest('csa'))).toContain('sandbox.agents.x-k8s.io/csa created');
    const first = await published('csa');
    const cmVersion = await metadataVersion();
    expect(cmVersion).not.toBe('');
    for (let i = 0; i < 2; i++) {
      const r = await run(editor, ['apply', '-f', '-'], manifest('csa'));
      expect(`${r.code} ${r.stderr}`).toBe('0 ');
    }
    const diff = await run(editor, ['diff', '-f', '-'], manifest('csa'));
    expect(`${diff.code} ${diff.stdout}${diff.stderr}`).toBe('0 ');
    const again = await get('csa');
    expect(again.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    expect(again.metadata?.uid).toBe(first.metadata?.uid);
    expect(await metadataVersion()).toBe(cmVersion);
    expect(managers(again)).toEqual(['kubectl-client-side-apply/Update']);

    const other = await run(editor, ['apply', '-f', '-'], manifest('csa', { image: 'ghcr.io/example/elsewhere:2' }));
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain('The Sandbox "csa" is invalid: spec.podTemplate');
    expect(other.stderr).toContain('ghcr.io/example/elsewhere:2');
    const changedTtl = await run(editor, ['apply', '-f', '-'], manifest('csa', { spec: { shutdownTime: '2099-01-01T00:00:00Z' } }));
    expect(changedTtl.stderr).toContain('spec.shutdownTime');
    expect((await get('csa')).metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);

    // a label changed in the manifest is applied, and kubectl diff shows it first
    const relabelled = manifest('csa', { labels: { team: 'b' } });
    const pending = await run(editor, ['diff', '-f', '-'], relabelled);
    expect(pending.code).toBe(1);
    expect(pending.stdout).toContain('+    team: b');
    await ok(['apply', '-f', '-'], relabelled);
    expect((await get('csa')).metadata?.labels?.['team']).toBe('b');
  });
});

describe('kubectl apply --server-side, as Flux applies', () => {
  it('applies twice with nothing changed, keeping managedFields per manager', async () => {
    expect(await ok(['apply', '--server-side', '-f', '-'], manifest('ssa'))).toContain('sandbox.agents.x-k8s.io/ssa serverside-applied');
    const created = await published('ssa');
    expect(managers(created)).toEqual(['kubectl/Apply']);
    expect(created.metadata?.managedFields?.[0]?.fieldsV1).toEqual({
      'f:metadata': { 'f:labels': { 'f:team': {} } },
      'f:spec': { 'f:podTemplate': {} },
    });
    await ok(['apply', '--server-side', '-f', '-'], manifest('ssa'));
    const again = await get('ssa');
    expect(again.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
    expect(again.metadata?.managedFields).toEqual(created.metadata?.managedFields);
    const diff = await run(editor, ['diff', '--server-side', '-f', '-'], manifest('ssa'));
    expect(`${diff.code} ${diff.stdout}${diff.stderr}`).toBe('0 ');
  });

  it("answers a second manager's change of an owned field with a 409 naming field and manager, and --force-conflicts takes it", async () => {
    const flux = manifest('ssa', { labels: { team: 'b', env: 'prod' } });
    const conflict = await run(editor, ['apply', '--server-side', '--field-manager=flux', '-f', '-'], flux);
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain(
      'Apply failed with 1 conflict: conflict with "kubectl" using agents.x-k8s.io/v1beta1: .metadata.labels.team',
    );
    expect((await get('ssa')).metadata?.labels?.['team']).toBe('a');

    await ok(['apply', '--server-side', '--field-manager=flux', '--force-conflicts', '-f', '-'], flux);
    const taken = await get('ssa');
    expect(taken.metadata?.labels).toMatchObject({ team: 'b', env: 'prod' });
    expect(managers(taken)).toEqual(['flux/Apply', 'kubectl/Apply']);
    const fluxFields = taken.metadata?.managedFields?.find((m) => m.manager === 'flux')?.fieldsV1;
    expect(fluxFields).toMatchObject({ 'f:metadata': { 'f:labels': { 'f:team': {}, 'f:env': {} } } });
    const kubectlFields = taken.metadata?.managedFields?.find((m) => m.manager === 'kubectl')?.fieldsV1;
    expect(kubectlFields).toEqual({ 'f:spec': { 'f:podTemplate': {} } });
  });

  it('removes a field its manager stops applying, and drives spec.operatingMode: Suspended, then Running once dropped', async () => {
    await ok(['apply', '--server-side', '--field-manager=flux', '-f', '-'], manifest('ssa', { labels: { team: 'b' } }));
    const dropped = await get('ssa');
    expect(dropped.metadata?.labels?.['team']).toBe('b');
    expect(dropped.metadata?.labels).not.toHaveProperty('env');

    await ok(
      ['apply', '--server-side', '--field-manager=flux', '-f', '-'],
      manifest('ssa', { labels: { team: 'b' }, spec: { operatingMode: 'Suspended' } }),
    );
    await eventually(async () => expect(readyReason(await get('ssa'))).toBe('Hibernated'), { timeoutMs: 30_000, intervalMs: 250 });
    await ok(['apply', '--server-side', '--field-manager=flux', '-f', '-'], manifest('ssa', { labels: { team: 'b' } }));
    await eventually(async () => expect(readyReason(await get('ssa'))).toBe('Running'), { timeoutMs: 30_000, intervalMs: 250 });
  });

  it('refuses a changed pool key and a managedFields in the configuration, changing nothing', async () => {
    const before = await get('ssa');
    const moved = await run(editor, ['apply', '--server-side', '--field-manager=flux', '-f', '-'], manifest('ssa', { image: 'other:1' }));
    expect(moved.stderr).toContain('spec.podTemplate');
    const withOwners = JSON.parse(manifest('ssa')) as { metadata: Record<string, unknown> };
    withOwners.metadata['managedFields'] = [{ manager: 'x', operation: 'Apply' }];
    const owners = await run(editor, ['apply', '--server-side', '-f', '-'], JSON.stringify(withOwners));
    expect(owners.stderr).toContain('metadata.managedFields must be nil');
    expect((await get('ssa')).metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
  });

  it('upgrades a client-side applied Sandbox to server-side apply, as kubectl does on the first --server-side', async () => {
    await ok(['apply', '--server-side', '-f', '-'], manifest('csa', { labels: { team: 'b' } }));
    const s = await get('csa');
    expect(managers(s)).not.toContain('kubectl-client-side-apply/Update');
    expect(managers(s)).toContain('kubectl/Apply');
    expect(s.metadata?.labels?.['team']).toBe('b');
  });

  it('creates a Sandbox that does not exist, and a view-only tenant may apply nothing', async () => {
    expect(await ok(['apply', '--server-side', '-f', '-'], manifest('fresh'))).toContain('serverside-applied');
    expect((await get('fresh')).metadata?.labels?.['team']).toBe('a');
    for (const args of [
      ['apply', '--server-side', '-f', '-'],
      ['apply', '-f', '-'],
    ]) {
      const r = await run(viewer, args, manifest('fresh', { labels: { team: 'viewer' } }));
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('forbidden');
    }
    expect((await get('fresh')).metadata?.labels?.['team']).toBe('a');
  });
});
