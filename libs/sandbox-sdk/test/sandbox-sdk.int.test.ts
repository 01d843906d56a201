import { CoreV1Api } from '@kubernetes/client-node';
import { bindServiceAccount } from '@sandbox-scale/kube-runtime/testing';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { builtSdkPackage, eventually, kubeconfigForServiceAccount, kubectl, REPO_ROOT, runSuffix, testBinDir } from '@sandbox-scale/e2e';
import { runProcess, type RunResult } from '@sandbox-scale/e2e/src/system/run-command';
import { RELEASE, startLocalSystem, SYSTEM_NAMESPACE, type LocalSystem } from '@sandbox-scale/e2e/src/system/local-system';
import { isAborted, isClaimFailed, isClaimTimeout, isFastPathUnavailable, isForbidden, isUnavailable, SandboxClient } from '../src/index';

// The plugin through kubectl's own plugin mechanism (`kubectl sandbox …` finds kubectl-sandbox
// on PATH) and the SDK, against the whole system as deployed, as a user who may only edit one
// namespace (the chart folds its verbs into the built-in edit role), never as admin.

const suffix = runSuffix();
const ns = `sdk-${suffix}`;
/** Fast-path claims capped at CAP live ones per namespace: the one over it is answered 429 with Retry-After. */
const capNs = `sdkc-${suffix}`;
const CAP = 2;
/** Not among the chart's claim namespaces: a claim there waits (NamespaceNotEnabled) and never binds. */
const offNs = `sdko-${suffix}`;
const POOL = 'agent';
const FAST_PATH_SERVICE = `${RELEASE}-claim-controller`;

let sys: LocalSystem;
let dir: string;
let pathDir: string;
/** kubeconfig files: `dev` edits the namespace and may read the fast path's Service; `dev2` only edits; `viewer` views. */
const kubeconfigs: Record<'dev' | 'dev2' | 'viewer', string> = { dev: '', dev2: '', viewer: '' };

async function admin(args: string[], input?: string): Promise<RunResult> {
  const r = await kubectl(args, { kubeconfig: sys.kubeconfigPath, ...(input ? { input } : {}) });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r;
}

/** `kubectl apply` of `items` as one List, as admin. */
async function applyList(items: unknown[]): Promise<void> {
  await admin(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
}

/** `kubectl sandbox ARGS` as a user: kubectl resolves the plugin from PATH. */
function plugin(args: string[], as: keyof typeof kubeconfigs = 'dev'): Promise<RunResult> {
  return runProcess(join(testBinDir(), 'kubectl'), ['sandbox', ...args], {
    PATH: `${pathDir}${delimiter}${process.env.PATH ?? ''}`,
    KUBECONFIG: kubeconfigs[as],
    SANDBOX_SCALE_FAST_PATH_CA_FILE: sys.servingCaPath,
  });
}

async function ok(args: string[], as: keyof typeof kubeconfigs = 'dev'): Promise<string> {
  const r = await plugin(args, as);
  if (r.code !== 0) throw new Error(`kubectl sandbox ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** The token claim-controller stored for a claim, read as admin. */
async function secretToken(claim: string): Promise<string> {
  const s = await sys.kubeConfig.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: ns, name: `${claim}-sandbox-token` });
  return Buffer.from(s.data?.token ?? '', 'base64').toString('utf8');
}

async function claimGone(name: string): Promise<void> {
  await eventually(
    async () => {
      const r = await kubectl(['get', 'sandboxclaim', name, '-n', ns, '--ignore-not-found', '-o', 'name'], {
        kubeconfig: sys.kubeconfigPath,
      });
      if (r.stdout.trim() !== '') throw new Error(`sandboxclaim ${name} still exists`);
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
}

const client = (as: keyof typeof kubeconfigs, fastPath = {}): SandboxClient =>
  new SandboxClient({ kubeconfig: kubeconfigs[as], namespace: ns, fastPath: { caFile: sys.servingCaPath, ...fastPath } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sandbox-sdk-'));
  pathDir = (await builtSdkPackage()).binDir;
  sys = await startLocalSystem({
    nodes: 2,
    speed: 0,
    examples: false,
    publishInterval: '1s',
    secretNamespaces: [ns, capNs],
    extraArgs: { 'claim-controller': ['--fast-path-max-claims-per-namespace', String(CAP)] },
    beforeInstall: async (kc) => {
      for (const name of [ns, capNs, offNs]) await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    },
  });
  const template = {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name: POOL, namespace: ns },
    spec: {
      podTemplate: {
        spec: {
          containers: [{ name: 'agent', image: 'ghcr.io/example/sdk-agent:1.0', resources: { requests: { cpu: '1', memory: '1Gi' } } }],
        },
      },
    },
  };
  const pool = (name: string, replicas: number) => ({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxWarmPool',
    metadata: { name, namespace: ns },
    spec: { replicas, sandboxTemplateRef: { name: POOL } },
  });
  await applyList([template, pool(POOL, 6)]);
  for (const other of [capNs, offNs]) {
    await applyList([
      { ...template, metadata: { name: POOL, namespace: other } },
      { ...pool(POOL, 3), metadata: { name: POOL, namespace: other } },
    ]);
  }
  for (const [name, role] of [
    ['dev', 'edit'],
    ['dev2', 'edit'],
    ['viewer', 'view'],
  ] as const) {
    const kc = await kubeconfigForServiceAccount(sys.kubeConfig, ns, name);
    // the context's namespace is the user's default, as `kubectl config set-context --current --namespace` leaves it
    const ctx = kc.getContextObject(kc.getCurrentContext());
    if (ctx)
      kc.loadFromOptions({ clusters: kc.clusters, users: kc.users, contexts: [{ ...ctx, namespace: ns }], currentContext: ctx.name });
    kubeconfigs[name] = join(dir, `${name}.kubeconfig`);
    writeFileSync(kubeconfigs[name], kc.exportConfig(), { mode: 0o600 });
    await bindServiceAccount(sys.kubeConfig, ns, name, { kind: 'ClusterRole', name: role }, { name, namespace: ns });
  }
  for (const other of [capNs, offNs]) {
    await bindServiceAccount(sys.kubeConfig, other, 'dev', { kind: 'ClusterRole', name: 'edit' }, { name: 'dev', namespace: ns });
  }
  // The fast path exposed as a cluster exposes it to clients outside: a Service with an address
  // they can dial (here an ExternalName for this machine, where the process listens), which the
  // operator lets `dev` read so the SDK can find it.
  const port = new URL(sys.fastPathUrl).port;
  await applyList([
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: FAST_PATH_SERVICE, namespace: SYSTEM_NAMESPACE },
      spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port: Number(port) }] },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: `fast-path-reader-${suffix}`, namespace: SYSTEM_NAMESPACE },
      rules: [{ apiGroups: [''], resources: ['services'], resourceNames: [FAST_PATH_SERVICE], verbs: ['get'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `fast-path-reader-${suffix}`, namespace: SYSTEM_NAMESPACE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `fast-path-reader-${suffix}` },
      subjects: [{ kind: 'ServiceAccount', name: 'dev', namespace: ns }],
    },
  ]);
  await eventually(
    async () => {
      const r = await admin(['get', 'sandboxwarmpool', POOL, '-n', ns, '-o', 'jsonpath={.status.readyReplicas}']);
      if (Number(r.stdout) < 6) throw new Error(`pool ${POOL}: ${r.stdout || 0}/6 ready`);
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
}, 240_000);

afterAll(async () => {
  await sys?.stop();
});

describe('kubectl sandbox', () => {
  it('claims through a SandboxClaim, prints name, node and address but not the token, and hands the token out only when asked', async () => {
    const out = await ok(['claim', POOL, '--wait', '--name', 'p-claim', '-n', ns]);
    const token = await secretToken('p-claim');
    expect(token.length).toBeGreaterThan(0);
    expect(out).toMatch(/^sandbox\/p-claim claimed\nNAME\s+NAMESPACE\s+NODE\s+ADDRESS\np-claim\s+sdk-\S+\s+sim-node-\d+\s+\S+:\d+\n$/);
    expect(out).not.toContain(token);
    expect((await ok(['token', 'p-claim', '-n', ns])).trim()).toBe(token);
    const file = join(dir, 'p-claim.token');
    await ok(['token', 'p-claim', '-n', ns, '--token-file', file]);
    expect(readFileSync(file, 'utf8').trim()).toBe(token);
    // no -n: the context's namespace
    const listed = await ok(['list']);
    expect(listed).toMatch(/^NAME\s+POOL\s+READY\s+REASON\s+CLAIM\s+NODE\s+AGE\n/);
    expect(listed).toMatch(/\np-claim\s+agent\s+True\s+(?:\S+\s+)?p-claim\s+sim-node-\d+\s+\d+[smhd]\n/);
  });

  it('completes commands, pools and sandbox names through kubectl, and in bash from its completion script', async () => {
    const env = { PATH: `${pathDir}${delimiter}${process.env.PATH ?? ''}`, KUBECONFIG: kubeconfigs.dev };
    // kubectl runs kubectl_complete-sandbox from PATH for `kubectl sandbox <TAB>`
    const completion = async (...words: string[]): Promise<string[]> => {
      const r = await runProcess(join(testBinDir(), 'kubectl'), ['__complete', 'sandbox', ...words], env);
      expect(r.code).toBe(0);
      return r.stdout.split('\n').filter((l) => l !== '');
    };
    expect(await completion('rel')).toEqual(['release', ':4']);
    expect(await completion('claim', '')).toEqual([POOL, ':4']);
    expect(await completion('exec', 'p-c')).toEqual(['p-claim', ':4']);
    expect(await completion('cp', './x', 'p-c')).toEqual(['p-claim:', ':2']);
    expect(await completion('list', '-o', '')).toEqual(['json', 'yaml', 'name', 'wide', ':4']);
    // a user who may not list sandboxes gets no names, and no error in the shell
    const denied = await runProcess(join(testBinDir(), 'kubectl'), ['__complete', 'sandbox', 'exec', '-n', offNs, 'p'], {
      ...env,
      KUBECONFIG: kubeconfigs.viewer,
    });
    expect(denied.stdout.split('\n').filter((l) => l !== '')).toEqual([':4']);

    const script = await plugin(['completion', 'bash']);
    expect(script.code).toBe(0);
    const bash = await runProcess(
      'bash',
      ['-c', `${script.stdout}\nCOMP_WORDS=(kubectl-sandbox exec p-c); COMP_CWORD=2; _kubectl_sandbox; printf '%s\\n' "\${COMPREPLY[@]}"`],
      env,
    );
    expect(bash).toEqual({ code: 0, stdout: 'p-claim\n', stderr: '' });
    const zsh = await plugin(['completion', 'zsh']);
    expect(zsh.stdout).toMatch(/^#compdef kubectl-sandbox\n/);
    expect((await plugin(['exec', '--help'])).stdout).toMatch(
      /^Runs a command in the sandbox[\s\S]*\nUsage:\n {2}kubectl sandbox exec NAME /,
    );
  });

  it('claims on the fast path found through its Service, writing the token to a file only', async () => {
    const file = join(dir, 'p-fast.token');
    const out = await ok(['claim', POOL, '--fast', '--name', 'p-fast', '-n', ns, '--token-file', file, '-o', 'json']);
    const printed = JSON.parse(out) as Record<string, unknown>;
    expect(printed).toMatchObject({ name: 'p-fast', namespace: ns, via: 'fast' });
    expect(String(printed.node)).toMatch(/^sim-node-\d+$/);
    expect(printed.token).toBeUndefined();
    // the record claim-controller writes afterwards holds the same token
    await eventually(async () => expect(await secretToken('p-fast')).toBe(readFileSync(file, 'utf8').trim()), {
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    const shown = JSON.parse(await ok(['claim', POOL, '--fast', '--name', 'p-fast2', '-n', ns, '--show-token', '-o', 'json'])) as {
      token?: string;
    };
    expect(shown.token?.length).toBeGreaterThan(0);
    await eventually(async () => expect(await secretToken('p-fast2')).toBe(shown.token), { timeoutMs: 30_000, intervalMs: 250 });
    for (const name of ['p-fast', 'p-fast2']) expect(await ok(['release', name, '-n', ns])).toBe(`sandbox/${name} released\n`);
    for (const name of ['p-fast', 'p-fast2']) await claimGone(name);
    const again = await plugin(['release', 'p-fast', '-n', ns]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`error: not found: no sandboxclaim or sandbox "p-fast" in namespace "${ns}"\n`);
  });

  it('pauses, resumes, forks, snapshots, restores and releases a sandbox', async () => {
    expect(await ok(['pause', 'p-claim', '-n', ns])).toBe('sandbox/p-claim paused\n');
    expect(JSON.parse(await ok(['stats', 'p-claim', '-n', ns, '-o', 'json']))).toMatchObject({ paused: true });
    expect(await ok(['resume', 'p-claim', '-n', ns])).toBe('sandbox/p-claim resumed\n');
    const stats = await ok(['stats', 'p-claim', '-n', ns]);
    expect(stats).toMatch(
      /^NAME\s+NODE\s+CPUS\s+MEMORY USED\s+MEMORY TOTAL\s+PAUSED\np-claim\s+sim-node-\d+\s+\d+\s+\S*\s+\d+Mi\s+false\n$/,
    );

    const forked = JSON.parse(await ok(['fork', 'p-claim', '--count', '2', '-n', ns, '-o', 'json'])) as { children: { name: string }[] };
    expect(forked.children).toHaveLength(2);
    for (const c of forked.children) expect(c.name).toMatch(/^p-claim-sb-/);

    const snap = JSON.parse(await ok(['snapshot', 'p-claim', '--snapshot-name', 'first', '-n', ns, '-o', 'json'])) as {
      snapshotID: string;
    };
    expect(snap.snapshotID).toMatch(/\S/);
    const list = await ok(['snapshots', 'p-claim', '-n', ns]);
    expect(list).toContain(snap.snapshotID);
    const restored = await ok(['restore', 'p-claim', '--snapshot', snap.snapshotID, '--name', 'p-restored', '-n', ns]);
    expect(restored).toMatch(new RegExp(`^sandbox/p-restored restored from ${snap.snapshotID}\\nNAME`));
    expect((await admin(['get', 'sandbox', 'p-restored', '-n', ns, '-o', 'name'])).stdout.trim()).toBe(
      'sandbox.agents.x-k8s.io/p-restored',
    );
    // list shows what no claim holds (the children, the restored one) beside the claimed one
    const made = ['p-restored', ...forked.children.map((c) => c.name)];
    await eventually(
      async () => {
        const names = (await ok(['list', '-n', ns, '-o', 'name'])).split('\n');
        for (const n of ['p-claim', ...made]) expect(names).toContain(`sandbox.agents.x-k8s.io/${n}`);
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const table = await ok(['list', '-n', ns, '--no-headers', '-o', 'wide']);
    expect(table).not.toMatch(/^NAME/);
    expect(table).toMatch(new RegExp(`(^|\\n)p-restored\\s+<none>\\s+\\S+\\s+\\S+\\s+<none>\\s+sim-node-\\d+\\s+\\d+[smhd]\\s+\\S+`));
    // -l selects by the sandbox's labels, as kubectl get -l does
    await admin(['label', 'sandbox', 'p-restored', '-n', ns, 'picked=yes']);
    await eventually(
      async () => expect(await ok(['list', '-n', ns, '-l', 'picked=yes', '-o', 'name'])).toBe('sandbox.agents.x-k8s.io/p-restored\n'),
      {
        timeoutMs: 30_000,
        intervalMs: 250,
      },
    );

    for (const name of made) expect(await ok(['release', name, '-n', ns])).toBe(`sandbox/${name} released\n`);
    await eventually(
      async () => {
        const left = (await admin(['get', 'sandboxes', '-n', ns, '-o', 'name'])).stdout;
        expect(left).not.toMatch(/p-restored|p-claim-sb-/);
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(await ok(['release', 'p-claim', '-n', ns])).toBe('sandbox/p-claim released\n');
    await claimGone('p-claim');
  });

  it('names the verb and resource an RBAC denial is about, and refuses bad flags', async () => {
    await ok(['claim', POOL, '--wait', '--name', 'p-denied', '-n', ns]);
    const pause = await plugin(['pause', 'p-denied', '-n', ns], 'viewer');
    expect(pause.code).toBe(1);
    expect(pause.stderr).toMatch(
      /^error: forbidden: cannot create sandboxes\/pause\.agents\.x-k8s\.io "p-denied" in namespace "sdk-[^"]+": .*cannot create resource "sandboxes\/pause"/,
    );
    const all = await plugin(['list', '-A'], 'dev');
    expect(all.code).toBe(1);
    expect(all.stderr).toMatch(/^error: forbidden: cannot list sandboxclaims\.extensions\.agents\.x-k8s\.io: /);
    const bad = await plugin(['fork', 'p-denied', '--count', 'many', '-n', ns]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: --count must be a whole number >= 1, got "many"/);
    const yaml = await ok(['claim', POOL, '--wait', '--name', 'p-yaml', '-n', ns, '-o', 'yaml']);
    expect(yaml).toMatch(/^name: p-yaml\nnamespace: sdk-\S+\nnode: sim-node-\d+\naddress: \S+:\d+\nvia: claim\nclaimName: p-yaml\n/);
    expect(yaml).not.toContain(await secretToken('p-yaml'));
    await ok(['release', 'p-yaml', '-n', ns]);
    await ok(['release', 'p-denied', '-n', ns]);
    // without --wait: the claim is created and binds on its own
    expect(await ok(['claim', POOL, '--name', 'p-nowait', '-n', ns])).toBe(
      `sandboxclaim/p-nowait created; \`kubectl sandbox list -n ${ns}\` shows when it is Ready\n`,
    );
    await eventually(
      async () => expect(await ok(['list', '-n', ns])).toMatch(/p-nowait\s+agent\s+True\s+(?:\S+\s+)?p-nowait\s+sim-node-\d+/),
      {
        timeoutMs: 30_000,
        intervalMs: 500,
      },
    );
    await ok(['release', 'p-nowait', '-n', ns]);
  });

  it('deletes the claim it made when Ctrl-C ends claim --wait', async () => {
    // offNs's pool is never warm, so the claim waits until interrupted
    const child = spawn(join(testBinDir(), 'kubectl'), ['sandbox', 'claim', POOL, '--wait', '--name', 'p-ctrl-c', '-n', offNs], {
      env: { ...process.env, PATH: `${pathDir}${delimiter}${process.env.PATH ?? ''}`, KUBECONFIG: kubeconfigs.dev },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    await eventually(
      async () => {
        const r = await kubectl(['get', 'sandboxclaim', 'p-ctrl-c', '-n', offNs, '-o', 'name'], { kubeconfig: sys.kubeconfigPath });
        expect(r.stdout.trim()).toBe('sandboxclaim.extensions.agents.x-k8s.io/p-ctrl-c');
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    child.kill('SIGINT'); // kubectl ran the plugin in its own process: the terminal's Ctrl-C reaches it
    const [code] = await exited;
    expect({ code, stderr }).toEqual({
      code: 1,
      stderr: expect.stringMatching(/^error: claim sdko-\S+\/p-ctrl-c from pool agent: cancelled/) as unknown,
    });
    const left = await kubectl(['get', 'sandboxclaim', 'p-ctrl-c', '-n', offNs, '--ignore-not-found', '-o', 'name'], {
      kubeconfig: sys.kubeconfigPath,
    });
    expect(left.stdout.trim()).toBe('');
  });
});

describe('@sandbox-scale/sdk', () => {
  it('claims through a SandboxClaim and through the fast path, each with name, node, address and token', async () => {
    const viaClaim = await client('dev').claim({ pool: POOL, via: 'claim' });
    expect(viaClaim.node).toMatch(/^sim-node-\d+$/);
    expect(viaClaim.address).toMatch(/:\d+$/);
    expect(viaClaim.token).toBe(await secretToken(viaClaim.claimName ?? ''));
    expect(JSON.stringify(viaClaim)).not.toContain(viaClaim.token);
    const fast = await client('dev2', { url: sys.fastPathUrl }).claim({ pool: POOL, via: 'fast' });
    expect(fast.node).toMatch(/^sim-node-\d+$/);
    expect(fast.token.length).toBeGreaterThan(0);
    expect((await fast.stats()).paused).toBe(false);
    await fast.pause();
    expect((await fast.stats()).paused).toBe(true);
    for (const sb of [viaClaim, fast]) await sb.release();
    for (const sb of [viaClaim, fast]) await claimGone(sb.claimName ?? '');
  });

  it('says why it cannot find the fast path when the Service may not be read', async () => {
    const err = await client('dev2')
      .claim({ pool: POOL, via: 'fast' })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isFastPathUnavailable(err)).toBe(true);
    expect((err as Error).message).toMatch(
      /^cannot find the fast path: forbidden: cannot get services "sandbox-scale-claim-controller" in namespace "sandbox-system"/,
    );
  });

  it('retries the fast path while it answers 429 with Retry-After before claiming, and gives up at the deadline with that answer', async () => {
    const dev = client('dev', { url: sys.fastPathUrl });
    const held = [];
    for (let i = 0; i < CAP; i++) held.push(await dev.claim({ pool: POOL, via: 'fast', namespace: capNs }));
    const err = await dev.claim({ pool: POOL, via: 'fast', namespace: capNs, name: 'over-cap', timeoutMs: 3_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isClaimTimeout(err)).toBe(true);
    expect(isUnavailable(err)).toBe(true);
    expect((err as Error).message).toMatch(
      /^claim sdkc-\S+\/over-cap from pool agent: timed out \(last: create sandboxclaims "over-cap" in namespace "sdkc-\S+": namespace sdkc-\S+ has 2 live fast-path claims, the cap is 2/,
    );
    for (const sb of held) expect(await sb.release()).toBe(true);
    // the retries outlast the 10 s Retry-After: the cap frees as the records go, and the claim lands
    const late = await dev.claim({ pool: POOL, via: 'fast', namespace: capNs, timeoutMs: 60_000 });
    expect(late.node).toMatch(/^sim-node-\d+$/);
    expect(await late.release()).toBe(true);
  });

  it('releases a claim it gave up on: on a deadline, on cancellation, and on a terminal failure', async () => {
    const timedOut = await client('dev')
      .claim({ pool: POOL, via: 'claim', namespace: offNs, name: 'never-bound', timeoutMs: 3_000 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isClaimTimeout(timedOut)).toBe(true);
    expect((timedOut as Error).message).toMatch(/^claim sdko-\S+\/never-bound from pool agent: timed out/);
    await eventually(
      async () => {
        const r = await kubectl(['get', 'sandboxclaim', 'never-bound', '-n', offNs, '--ignore-not-found', '-o', 'name'], {
          kubeconfig: sys.kubeconfigPath,
        });
        if (r.stdout.trim() !== '') throw new Error('never-bound still exists');
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const failed = await client('dev')
      .claim({ pool: 'no-such-pool', via: 'claim', name: 'no-pool' })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isClaimFailed(failed)).toBe(true);
    expect((failed as Error).message).toMatch(/^claim sdk-\S+\/no-pool failed: WarmPoolNotFound: /);
    await claimGone('no-pool');
    const cancelled = await client('dev')
      .claim({ pool: POOL, signal: AbortSignal.abort() })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isAborted(cancelled)).toBe(true);
  });

  it('throws typed errors naming what was refused', async () => {
    const sb = await client('dev').claim({ pool: POOL, name: 's-denied' });
    const err = await client('viewer')
      .sandbox(sb.name)
      .resume()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isForbidden(err)).toBe(true);
    expect((err as Error).message).toMatch(/^forbidden: cannot create sandboxes\/resume\.agents\.x-k8s\.io "s-denied"/);
    await sb.release();
  });

  it.each(['fast', 'claim'])('runs the example script as the user (via %s)', async (via) => {
    const r = await runProcess(join(REPO_ROOT, 'node_modules/.bin/tsx'), [join(REPO_ROOT, 'examples/sdk/claim-and-drive.ts'), POOL, via], {
      KUBECONFIG: kubeconfigs.dev,
      SANDBOX_SCALE_FAST_PATH_CA_FILE: sys.servingCaPath,
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(
      new RegExp(
        `^claimed ${ns}/agent-[0-9a-f]{6} on sim-node-\\d+ at \\S+:\\d+ via ${via} \\(token: [1-9]\\d* characters\\)\npaused: true\nresumed: paused=false, \\d+ CPUs, \\d+ MiB\nsnapshot \\S+ taken\nforked: \\S+, \\S+\nreleased ${ns}/agent-[0-9a-f]{6}\n$`,
      ),
    );
  });
});
