import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { runSuffix, type RunResult } from '../src/index';
import { startControlPlane, type ControlPlane } from '../src/control-plane/control-plane';
import { runCommand, runProcess } from '../src/system/run-command';

// The chart's CRDs across installs and upgrades, on a control plane of its own (CRDs are
// cluster-wide: the shared one holds this chart's CRDs for every other suite). Helm never changes
// a CRD that exists and the API server drops fields its schema lacks, so the chart refuses to
// install or upgrade over CRDs without its fields (agent-sandbox's, or an older release's), and
// over agent-sandbox's Sandbox CRD. The previous chart version comes from git history.

const repo = join(__dirname, '..', '..');
const chartDir = join(repo, 'charts', 'sandbox-scale');
const ns = `crds-${runSuffix()}`;
const release = 'ss';
let cp: ControlPlane;
let work: string;
let previousChart: string;
let previousVersion: string;

const chartVersion = (dir: string): string => (parseYaml(readFileSync(join(dir, 'Chart.yaml'), 'utf8')) as { version: string }).version;

const helm = (args: string[]): Promise<RunResult> => runProcess(join(cp.binDir, 'helm'), args, { KUBECONFIG: cp.kubeconfigPath });
async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await runProcess(join(cp.binDir, 'kubectl'), args, { KUBECONFIG: cp.kubeconfigPath }, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The last committed chart whose version differs from the working tree's: the one users upgrade from. */
async function extractPreviousChart(into: string): Promise<string> {
  const current = chartVersion(chartDir);
  const commits = (await runCommand('git', ['-C', repo, 'log', '--format=%H', '--', 'charts/sandbox-scale/Chart.yaml'])).trim().split('\n');
  for (const c of commits) {
    const version = (
      parseYaml(await runCommand('git', ['-C', repo, 'show', `${c}:charts/sandbox-scale/Chart.yaml`])) as { version: string }
    ).version;
    if (version === current) continue;
    const tar = join(into, 'previous.tar');
    await runCommand('git', ['-C', repo, 'archive', '-o', tar, c, 'charts/sandbox-scale']);
    await runCommand('tar', ['-xf', tar, '-C', into]);
    return join(into, 'charts', 'sandbox-scale');
  }
  throw new Error(`no earlier chart version than ${current} in git history`);
}

const claim = (name: string) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxClaim',
  metadata: { name, namespace: ns },
  spec: { warmPoolRef: { name: 'pool' } },
});
const boundStatus = {
  sandbox: {
    name: 'c1',
    claimID: 'sb_0123456789abcdef',
    nodeName: 'node-a',
    address: '10.0.0.7:7777',
    tokenSecretName: 'c1-sandbox-token',
  },
};

/** Writes status.sandbox through the status subresource (a merge patch) and reads back what the API server kept. */
async function writeAndReadStatus(name: string): Promise<Record<string, unknown>> {
  await kubectl(['apply', '--server-side', '--field-manager=test', '-f', '-'], JSON.stringify(claim(name)));
  // an update or merge patch, as claim-controller's writes of 0.1.x were: the API server prunes, it does not refuse
  await kubectl([
    '-n',
    ns,
    'patch',
    'sandboxclaim',
    name,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status: boundStatus }),
  ]);
  const read = JSON.parse(await kubectl(['-n', ns, 'get', 'sandboxclaim', name, '-o', 'json'])) as {
    status?: { sandbox?: Record<string, unknown> };
  };
  return read.status?.sandbox ?? {};
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'chart-crds-'));
  [cp, previousChart] = await Promise.all([startControlPlane({ controllerManager: false }), extractPreviousChart(work)]);
  previousVersion = chartVersion(previousChart);
  await kubectl(['create', 'namespace', ns]);
}, 120_000);

afterAll(async () => {
  await cp?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the chart over existing CRDs', () => {
  it('upgrades from the previous chart version only once the new CRDs are applied, and then keeps the new fields', async () => {
    expect(previousVersion).not.toBe(chartVersion(chartDir));
    const installed = await helm(['install', release, previousChart, '--namespace', ns, '--set', 'apiService.enabled=false']);
    expect(installed.stderr).toBe('');
    expect(installed.code).toBe(0);
    // what the older CRD does to the new status: the claim id is dropped without a word
    expect(await writeAndReadStatus('before')).not.toHaveProperty('claimID');

    const refused = await helm(['upgrade', release, chartDir, '--namespace', ns, '--set', 'apiService.enabled=false']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("sandboxclaims.extensions.agents.x-k8s.io exists without this chart's field status.sandbox.claimID");
    expect(refused.stderr).toContain('kubectl apply --server-side --force-conflicts -f charts/sandbox-scale/crds/');

    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(chartDir, 'crds')]);
    const upgraded = await helm(['upgrade', release, chartDir, '--namespace', ns, '--set', 'apiService.enabled=false']);
    expect(upgraded.stderr).toBe('');
    expect(upgraded.code).toBe(0);
    const listed = JSON.parse((await helm(['list', '--namespace', ns, '-o', 'json'])).stdout) as Array<{ chart: string; status: string }>;
    expect(listed).toEqual([expect.objectContaining({ chart: `sandbox-scale-${chartVersion(chartDir)}`, status: 'deployed' })]);
    expect(await writeAndReadStatus('after')).toEqual(boundStatus.sandbox);
    const columns = await kubectl(['-n', ns, 'get', 'sandboxclaim', 'after']);
    expect(columns.split('\n')[0]).toMatch(/^NAME\s+READY\s+REASON\s+SANDBOX\s+NODE\s+AGE$/);
  });

  it("refuses to install or upgrade while agent-sandbox's Sandbox CRD exists, naming it", async () => {
    // v1alpha1 only: the name is what clashes; this control plane serves no v1beta1 sandboxes either way
    const upstreamSandbox = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'sandboxes.agents.x-k8s.io' },
      spec: {
        group: 'agents.x-k8s.io',
        scope: 'Namespaced',
        names: { plural: 'sandboxes', singular: 'sandbox', kind: 'Sandbox' },
        versions: [
          {
            name: 'v1alpha1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    };
    await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(upstreamSandbox));
    const upgrade = await helm(['upgrade', release, chartDir, '--namespace', ns, '--set', 'apiService.enabled=false']);
    const install = await helm([
      'install',
      `${release}-second`,
      chartDir,
      '--namespace',
      ns,
      '--set',
      'apiService.enabled=false',
      '--set',
      'rbac.create=false',
    ]);
    for (const r of [upgrade, install]) {
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('a CustomResourceDefinition sandboxes.agents.x-k8s.io exists');
    }
    await kubectl(['delete', 'crd', 'sandboxes.agents.x-k8s.io', '--wait=true']);
    const again = await helm(['upgrade', release, chartDir, '--namespace', ns, '--set', 'apiService.enabled=false']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
  });

  it("refuses an extension CRD without this chart's fields, as agent-sandbox installs it", async () => {
    // agent-sandbox's SandboxWarmPool has no spec.coldStart: drop it from this chart's CRD
    const crd = JSON.parse(await kubectl(['get', 'crd', 'sandboxwarmpools.extensions.agents.x-k8s.io', '-o', 'json'])) as {
      spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } } }> };
    };
    const props = crd.spec.versions[0]?.schema.openAPIV3Schema.properties.spec.properties ?? {};
    delete props['coldStart'];
    await kubectl(['replace', '-f', '-'], JSON.stringify(crd));
    const refused = await helm(['upgrade', release, chartDir, '--namespace', ns, '--set', 'apiService.enabled=false']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("sandboxwarmpools.extensions.agents.x-k8s.io exists without this chart's field spec.coldStart");
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(chartDir, 'crds')]);
    const upgraded = await helm(['upgrade', release, chartDir, '--namespace', ns, '--set', 'apiService.enabled=false']);
    expect(upgraded.code).toBe(0);
  });
});
