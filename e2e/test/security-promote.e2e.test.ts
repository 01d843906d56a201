import { grantEditRole } from '../src/testing/tenant-role';
import { promotedTemplateName } from '@sandbox-scale/scale-core';
import { builtSdkPackage, eventually, kubectl, runSuffix } from '../src/index';
import { runProcess } from '../src/system/run-command';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCall } from '../src/testing/sandboxd';

// Promote as two tenants who each hold exactly the chart's edit role in their own namespace: a
// promoted template is named within the promoting namespace on the node, so tenant A cannot
// promote under tenant B's image (the name of B's pool), cannot replace a template B promoted,
// and B's claims keep coming from B's pool. Through the aggregated API and `kubectl sandbox promote`.

const suffix = runSuffix();
const nsA = `proma-${suffix}`;
const nsB = `promb-${suffix}`;
const IMAGE_A = 'ghcr.io/example/tenant-a:1';
const IMAGE_B = 'ghcr.io/example/tenant-b:1';

let sys: SystemUnderTest;
const kubeconfigs: Record<string, string> = {};

const sandbox = (namespace: string, name: string, image: string): string =>
  JSON.stringify({
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: { name, namespace },
    spec: { podTemplate: { spec: { containers: [{ name: 'agent', image, resources: { requests: { cpu: '1', memory: '1Gi' } } }] } } },
  });

async function as(namespace: string, args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return kubectl(args, { kubeconfig: kubeconfigs[namespace] ?? '', ...(input !== undefined ? { input } : {}) });
}

async function promote(namespace: string, name: string, template: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const body = JSON.stringify({ apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'SandboxPromoteOptions', template });
  return as(
    namespace,
    ['create', '--raw', `/apis/agents.x-k8s.io/v1beta1/namespaces/${namespace}/sandboxes/${name}/promote`, '-f', '-'],
    body,
  );
}

/** Deletes a template on the nodes as root: 204 where it exists under that name. */
async function deleteTemplate(key: { template: string; net: string; size: string }): Promise<number[]> {
  const q = new URLSearchParams(key).toString();
  const out: number[] = [];
  for (const n of sys.nodes) out.push((await sandboxdCall(n, `/v1/templates?${q}&no_redirect=true`, { method: 'DELETE' })).status);
  return out;
}

beforeAll(async () => {
  sys = await startSuiteSystem({ namespaces: [nsA, nsB], local: { nodes: 1, speed: 0, publishInterval: '1s' } });
  for (const ns of [nsA, nsB]) {
    const user = await sys.tenant(ns, 'editor');
    kubeconfigs[ns] = user.path;
    await grantEditRole(sys.kubeConfig, ns, 'editor');
  }
  await applyWarmPool(sys, nsA, { image: IMAGE_A, replicas: 2 });
  await applyWarmPool(sys, nsB, { image: IMAGE_B, replicas: 2 });
  await waitPoolReady(sys, nsA, 2, { atLeast: true, timeoutMs: 120_000 });
  await waitPoolReady(sys, nsB, 2, { atLeast: true, timeoutMs: 120_000 });
  for (const [ns, image] of [
    [nsA, IMAGE_A],
    [nsB, IMAGE_B],
  ] as const)
    await eventually(
      async () => {
        const r = await as(ns, ['create', '--validate=false', '-f', '-'], sandbox(ns, 'src', image));
        if (r.code !== 0 && !r.stderr.includes('AlreadyExists')) throw new Error(r.stderr);
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

describe('promote, as two tenants', () => {
  it("names a tenant's promoted template within its namespace, so it never takes another tenant's image or template", async () => {
    // A names B's image: refused before any node is asked, with a 422 naming the field
    const onImage = await promote(nsA, 'src', IMAGE_B);
    expect(onImage.code).not.toBe(0);
    expect(onImage.stderr).toMatch(/template/);
    expect(onImage.stderr).toMatch(/Invalid|invalid/);

    // B promotes "py", then A promotes "py" too: two templates, neither replacing the other
    const b = await promote(nsB, 'src', 'py');
    expect(b.stderr).toBe('');
    const a = await promote(nsA, 'src', 'py');
    expect(a.stderr).toBe('');
    const templateOf = (r: { stdout: string }): string => (JSON.parse(r.stdout) as { template: string }).template;
    expect(templateOf(b)).toBe(promotedTemplateName(nsB, 'py'));
    expect(templateOf(a)).toBe(promotedTemplateName(nsA, 'py'));
    expect(templateOf(a)).not.toBe(templateOf(b));

    // the plugin, as the tenant runs it
    const plugin = await runProcess((await builtSdkPackage()).bin, ['promote', 'src', '--template', 'agent-v2', '-n', nsA], {
      KUBECONFIG: kubeconfigs[nsA] ?? '',
    });
    expect({ code: plugin.code, stderr: plugin.stderr }).toEqual({ code: 0, stderr: '' });
    expect(plugin.stdout).toContain(promotedTemplateName(nsA, 'agent-v2'));
    const badPlugin = await runProcess((await builtSdkPackage()).bin, ['promote', 'src', '--template', IMAGE_B, '-n', nsA], {
      KUBECONFIG: kubeconfigs[nsA] ?? '',
    });
    expect(badPlugin.code).not.toBe(0);

    // on the node, each namespace's template under its own name: deleting one leaves the other
    const keyOf = (r: { stdout: string }): { template: string; net: string; size: string } =>
      JSON.parse(r.stdout) as { template: string; net: string; size: string };
    const { template: ta, net, size } = keyOf(a);
    const deleted = [...(await deleteTemplate({ template: ta, net, size })), ...(await deleteTemplate(keyOf(b)))];
    console.log(JSON.stringify({ test: 'security-promote', refused_on_image: onImage.code !== 0, deleted_statuses: deleted }));
    expect(deleted.filter((s) => s === 204)).toHaveLength(2);

    // B's next claim still comes from B's pool: a warm VM of its image, not a clone of A's
    const claimed = await as(nsB, ['create', '--validate=false', '-f', '-', '-o', 'json'], sandbox(nsB, 'after', IMAGE_B));
    expect(claimed.code).toBe(0);
  }, 300_000);
});
