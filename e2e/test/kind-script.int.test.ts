import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { auditArgs } from '../src/control-plane/audit';
import { INSTALLED_AUDIT } from '../src/installed/audit-policy';
import { EXISTING_CLUSTER_ENV, ExistingClusterSchema } from '../src/installed/install-target';
import { testBinDir } from '../src/index';

// e2e/kind/run.sh needs Docker, which this machine does not have: it is checked as far as it can
// be without running it. The shell is parsed, ShellCheck finds nothing, what it names exists, and
// what it hands the installed run (the cluster file, the audit policy, the networks it routes)
// is what that run reads.

const root = resolve(__dirname, '../..');
const script = join(root, 'e2e/kind/run.sh');
const text = readFileSync(script, 'utf8');
const shellcheck = (): string => join(testBinDir(), 'shellcheck');

const KindConfigSchema = z.object({
  networking: z.object({ podSubnet: z.string(), serviceSubnet: z.string() }),
  containerdConfigPatches: z.array(z.string()),
  nodes: z
    .array(
      z.object({
        role: z.literal('control-plane'),
        extraMounts: z.array(z.object({ hostPath: z.string(), containerPath: z.string() })),
        kubeadmConfigPatches: z.array(z.string()),
      }),
    )
    .length(1),
});
const ApiServerPatchSchema = z.object({
  kind: z.literal('ClusterConfiguration'),
  apiServer: z.object({
    extraArgs: z.record(z.string(), z.string()),
    extraVolumes: z.array(z.object({ hostPath: z.string(), mountPath: z.string() })),
  }),
});

/** A shell variable's literal assignment in run.sh (`NAME=value`). */
const assigned = (name: string): string => {
  const m = new RegExp(`^${name}=(\\S+)$`, 'm').exec(text);
  if (!m?.[1]) throw new Error(`run.sh assigns no ${name}`);
  return m[1];
};

describe('e2e/kind/run.sh', () => {
  it('parses (bash -n) and ShellCheck finds nothing in it', () => {
    expect(spawnSync('bash', ['-n', script], { encoding: 'utf8' }).status).toBe(0);
    const checked = spawnSync(shellcheck(), [script], { encoding: 'utf8' });
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);
  });

  it('would be refused by ShellCheck with an unquoted expansion (the check can fail)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kind-script-'));
    try {
      const broken = join(dir, 'run.sh');
      writeFileSync(broken, text.replace('mkdir -p "$STATE/audit" "$STATE/pki"', 'mkdir -p $STATE/audit "$STATE/pki"'));
      const checked = spawnSync(shellcheck(), [broken], { encoding: 'utf8' });
      expect(checked.status).not.toBe(0);
      expect(checked.stdout).toContain('SC2086');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names only files that exist: the installed suites, their config and the scripts it runs', () => {
    const named = [...new Set([...text.matchAll(/(?:e2e\/[\w./-]+\.(?:ts|yaml|sh)|jest\.[\w.]+\.cjs)/g)].map((m) => m[0]))];
    expect(named).toEqual(
      expect.arrayContaining([
        'jest.installed.config.cjs',
        'e2e/src/installed/audit-policy.ts',
        'e2e/test/helm-install.installed.test.ts',
        'e2e/kind/run.sh',
      ]),
    );
    expect(named.filter((f) => !existsSync(join(root, f)))).toEqual([]);
    // the suites that config runs: every installed suite and every e2e suite
    const config = readFileSync(join(root, 'jest.installed.config.cjs'), 'utf8');
    expect(config).toContain("testMatch: ['<rootDir>/e2e/test/*.installed.test.ts', '<rootDir>/e2e/test/*.e2e.test.ts']");
    expect(text).toMatch(/npx jest -c jest\.installed\.config\.cjs "\$@"$/m);
  });

  it('hands the installed run a cluster file it accepts, through the variable it reads', () => {
    expect(text).toContain(`${EXISTING_CLUSTER_ENV}="$STATE/cluster.json" npx jest`);
    const heredoc = /cat >"\$STATE\/cluster\.json" <<JSON\n([\s\S]*?)\nJSON\n/.exec(text)?.[1];
    expect(heredoc).toBeDefined();
    const expanded = (heredoc as string).replaceAll('$STATE', '/state').replaceAll('$REGISTRY', 'localhost:5001');
    expect(ExistingClusterSchema.parse(JSON.parse(expanded))).toEqual({
      kubeconfig: '/state/kubeconfig',
      pki: '/state/pki',
      registry: 'localhost:5001',
      nodeExec: ['docker', 'exec', '-i'],
      auditLog: '/state/audit/audit.log',
    });
    expect(() => ExistingClusterSchema.parse({ ...JSON.parse(expanded), extra: 1 })).toThrow();
  });

  it("creates kind's one node with the installed run's audit policy and routes the networks kind-config.yaml gives", () => {
    const kind = KindConfigSchema.parse(parse(readFileSync(join(root, 'e2e/kind/kind-config.yaml'), 'utf8')));
    expect(assigned('POD_SUBNET')).toBe(kind.networking.podSubnet);
    expect(assigned('SERVICE_SUBNET')).toBe(kind.networking.serviceSubnet);
    expect(kind.containerdConfigPatches.join('\n')).toContain('config_path = "/etc/containerd/certs.d"');
    expect(text).toContain('/etc/containerd/certs.d/$REGISTRY/hosts.toml');
    const node = kind.nodes[0] as z.infer<typeof KindConfigSchema>['nodes'][number];
    expect(node.extraMounts).toEqual([{ hostPath: 'AUDIT_DIR', containerPath: '/var/log/sandbox-scale-audit' }]);
    const patch = ApiServerPatchSchema.parse(parse(node.kubeadmConfigPatches[0] as string));
    expect(patch.apiServer.extraVolumes).toEqual([
      expect.objectContaining({ hostPath: '/var/log/sandbox-scale-audit', mountPath: '/var/log/sandbox-scale-audit' }),
    ]);
    // the same flags the local installed run gives its kube-apiserver, under the mounted directory
    const local = auditArgs(mkdtempSync(join(tmpdir(), 'kind-audit-')), INSTALLED_AUDIT).args;
    const flags = Object.fromEntries(local.map((a) => a.replace(/^--/, '').split('=') as [string, string]));
    expect(Object.keys(patch.apiServer.extraArgs).sort()).toEqual(Object.keys(flags).sort());
    expect(patch.apiServer.extraArgs).toEqual({
      'audit-policy-file': '/var/log/sandbox-scale-audit/audit-policy.yaml',
      'audit-log-path': '/var/log/sandbox-scale-audit/audit.log',
      'audit-log-mode': flags['audit-log-mode'],
    });
  });

  it("writes the audit policy the local installed run's kube-apiserver is given", () => {
    const kindDir = mkdtempSync(join(tmpdir(), 'kind-audit-'));
    const localDir = mkdtempSync(join(tmpdir(), 'local-audit-'));
    try {
      execFileSync(join(root, 'node_modules/.bin/tsx'), [join(root, 'e2e/src/installed/audit-policy.ts'), kindDir], { cwd: root });
      auditArgs(localDir, INSTALLED_AUDIT);
      const written = readFileSync(join(kindDir, 'audit-policy.yaml'), 'utf8');
      expect(written).toBe(readFileSync(join(localDir, 'audit-policy.yaml'), 'utf8'));
      expect(written).toContain('system:serviceaccount:sandbox-system:sandbox-scale-claim-controller');
    } finally {
      rmSync(kindDir, { recursive: true, force: true });
      rmSync(localDir, { recursive: true, force: true });
    }
  });
});
