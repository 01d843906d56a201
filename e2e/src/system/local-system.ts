import { CoordinationV1Api, CoreV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { kubeApiClient } from '@sandbox-scale/kube-runtime';
import { nodeToken } from '@sandbox-scale/sandboxd-client';
import { LEASE_NAMES } from '@sandbox-scale/scale-core';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { hostAddress } from '../testing/host-address';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../control-plane/control-plane';
import { createCA, createLeaf } from '../control-plane/pki';
import { freePort } from '../control-plane/ports';
import { toolPath } from '../control-plane/tools';
import { kubeconfigForServiceAccount } from '../testing/cluster';
import { eventually } from '../testing/eventually';
import { REPO_ROOT, SupervisedApp } from './app-process';
import { runCommand } from './run-command';

export const SYSTEM_NAMESPACE = 'sandbox-system';
export const RELEASE = 'sandbox-scale';
export type AppName = 'sandbox-apiserver' | 'claim-controller' | 'warmpool-driver';

export interface SimNode {
  name: string;
  url: string;
  port: number;
  addr: string;
  /** Its sandboxd root token: its own, derived from the fleet token and its name (per-node tokens, as the chart runs). */
  token: string;
}

export interface LocalSystemOptions {
  /** Simulated sandboxd nodes (default 3). */
  nodes?: number;
  /** Apply examples/ once everything runs (default true). */
  examples?: boolean;
  /** Latency multiplier of the simulated nodes (default 0.05: boots take a few ms). */
  speed?: number;
  publishInterval?: string;
  /**
   * Restricts the namespaces where claim-controller may write claim Secrets (the chart's
   * claimController.secretNamespaces; they are created before the install, their Roles go
   * there). Default: the chart's own default, every namespace.
   */
  secretNamespaces?: string[];
  /**
   * sandbox-apiserver replicas (default 1). Each is its own process on its own port, listed as a
   * peer in an EndpointSlice of the APIService's Service, as the chart's pods are; the APIService
   * reaches the first one (an ExternalName Service names one host:port), tests drive each directly.
   */
  apiserverReplicas?: number;
  /** Reuse a running control plane instead of starting one (it is then left running on stop). */
  controlPlane?: ControlPlane;
  /** Runs on the control plane before the chart is installed (e.g. creates the claim namespaces its Roles go into). */
  beforeInstall?: (kc: KubeConfig) => Promise<void>;
  /**
   * Processes of claim-controller (default 1; the chart runs 2): every one serves the fast path
   * and campaigns for the Lease, only the leader reconciles. Replica i > 0 is the app
   * `claim-controller-<i>` with its fast path on a port of its own.
   */
  claimControllerReplicas?: number;
  /**
   * Serve each controller's and publisher's /metrics (HTTPS, authorized as the chart runs them)
   * and probes (plain HTTP) on free loopback ports (default off), listed in `metricsUrls` and
   * `probeUrls` once the app says where it listens; sandbox-apiserver serves /metrics on its
   * secure port either way.
   */
  metrics?: boolean;
  /** Extra flags appended per app (e.g. a shorter `--orphan-interval` for claim-controller). */
  extraArgs?: Partial<Record<AppName | 'sandboxd-sim' | 'inventory-publisher', string[]>>;
  log?: (msg: string) => void;
}

export interface LocalSystem {
  controlPlane: ControlPlane;
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  fleetToken: string;
  nodes: SimNode[];
  apiserverUrl: string;
  /** Every sandbox-apiserver replica, the first being apiserverUrl. */
  apiserverUrls: string[];
  fastPathUrl: string;
  /** Each claim-controller replica's own fast path, the first being fastPathUrl. */
  fastPathUrls: string[];
  /** Each sandbox-apiserver replica's sandbox router (plain HTTP), in the order of apiserverUrls. */
  routerUrls: string[];
  /** Each sandbox-apiserver replica's e2b API (plain HTTP on loopback: E2B_API_URL and E2B_SANDBOX_URL), in the same order. */
  e2bUrls: string[];
  /** CA (PEM file) that signed the serving certificate of sandbox-apiserver and the fast path. */
  servingCaPath: string;
  /** The claim-reference keyring file claim-controller and sandbox-apiserver follow (one base64 key per line, the first signs). */
  claimRefKeyFile: string;
  logDir: string;
  apps: Map<string, SupervisedApp>;
  /** App name -> https://127.0.0.1:<port>/metrics of its current process (with `metrics: true`; http:// under --metrics-auth=none). */
  metricsUrls: Map<string, string>;
  /** App name -> http://127.0.0.1:<port> of its current process's probe server (with `metrics: true`). */
  probeUrls: Map<string, string>;
  /** Stops one app (SIGKILL when `kill`) and starts it again with the same flags. */
  restartApp(name: AppName | `claim-controller-${number}`, opts?: { kill?: boolean; beforeStart?: () => Promise<void> }): Promise<void>;
  /** The app holding a component's leader Lease (from its holderIdentity, `<POD_NAME>_<suffix>`), if any. */
  leaderOf(component: keyof typeof LEASE_NAMES): Promise<string | undefined>;
  leaderSince(component: keyof typeof LEASE_NAMES): Promise<Date | undefined>;
  stop(): Promise<void>;
}

interface Ctx {
  cp: ControlPlane;
  dir: string;
  logDir: string;
  log: (msg: string) => void;
  fleetToken: string;
  tokenFile: string;
  /** The claim reference key (base64), read by claim-controller and sandbox-apiserver. */
  claimRefKeyFile: string;
  apps: Map<string, SupervisedApp>;
  specs: Map<string, { entry: string; args: string[]; env: Record<string, string> }>;
  extraArgs: NonNullable<LocalSystemOptions['extraArgs']>;
  claimControllerReplicas: number;
  metrics: boolean;
  metricsUrls: Map<string, string>;
  probeUrls: Map<string, string>;
}

function helm(cp: ControlPlane, args: string[]): Promise<string> {
  return runCommand(toolPath(cp.binDir, 'helm'), args, { KUBECONFIG: cp.kubeconfigPath });
}

async function installChart(ctx: Ctx, apiserverPort: number, caPem: string, secretNamespaces: string[] | undefined): Promise<void> {
  ctx.log('installing the chart: CRDs, ServiceAccounts, RBAC, the APIService');
  if (secretNamespaces?.length) {
    // the restricted namespaces hold Roles of the chart, so they must exist first
    const namespaces = secretNamespaces.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
    await runCommand(
      toolPath(ctx.cp.binDir, 'kubectl'),
      ['apply', '-f', '-'],
      { KUBECONFIG: ctx.cp.kubeconfigPath },
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: namespaces }),
    );
  }
  // Without a restriction the chart's default applies: claims work in every namespace, also in
  // those created after the install.
  await helm(ctx.cp, [
    'upgrade',
    '--install',
    RELEASE,
    join(REPO_ROOT, 'charts/sandbox-scale'),
    '-n',
    SYSTEM_NAMESPACE,
    '--create-namespace',
    '--set',
    'workloads=false',
    '--set',
    'apiService.external.host=localhost',
    '--set',
    `apiService.service.port=${apiserverPort}`,
    '--set',
    `apiService.caBundle=${Buffer.from(caPem).toString('base64')}`,
    ...(secretNamespaces?.length ? ['--set-json', `claimController.secretNamespaces=${JSON.stringify(secretNamespaces)}`] : []),
  ]);
}

interface StartAppOptions {
  env?: Record<string, string>;
  restartPolicy?: 'Always' | 'Never';
  onStdoutLine?: (line: string) => void;
}

/** Says on the runner's stderr (which a CI log keeps) which app ended unasked, and how its log ends. */
function reportExit(ctx: Ctx, e: { name: string; code: number | null; restarts: number; tail: string }): void {
  process.stderr.write(
    `[local-system] ${e.name} exited unasked (code ${e.code}, exit ${e.restarts}); the end of ${join(ctx.logDir, `${e.name}.log`)}:\n${e.tail}\n`,
  );
}

/** Which listener an app's log line (pino JSON on stdout) says it opened, and its base URL. */
function listening(line: string): { kind: 'metrics' | 'probe'; url: string } | undefined {
  if (!line.includes('server listening')) return undefined;
  try {
    const { msg, url } = JSON.parse(line) as { msg?: unknown; url?: unknown };
    if (typeof url !== 'string') return undefined;
    if (msg === 'metrics server listening') return { kind: 'metrics', url };
    if (msg === 'probe server listening') return { kind: 'probe', url };
    return undefined;
  } catch {
    return undefined;
  }
}

function startApp(ctx: Ctx, name: string, entry: string, args: string[], opts: StartAppOptions = {}): SupervisedApp {
  const env = { LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', ...opts.env };
  ctx.specs.set(name, { entry, args, env });
  const onStdoutLine = (line: string): void => {
    const l = listening(line);
    if (l?.kind === 'metrics') ctx.metricsUrls.set(name, `${l.url}/metrics`);
    if (l?.kind === 'probe') ctx.probeUrls.set(name, l.url);
    opts.onStdoutLine?.(line);
  };
  const p = new SupervisedApp({
    name,
    entry,
    args,
    env,
    logPath: join(ctx.logDir, `${name}.log`),
    onStdoutLine,
    restartPolicy: opts.restartPolicy,
    onUnexpectedExit: (e) => reportExit(ctx, e),
  });
  ctx.apps.set(name, p);
  return p;
}

async function startSimNodes(ctx: Ctx, nodes: number, speed: number): Promise<SimNode[]> {
  ctx.log(`starting ${nodes} simulated sandboxd nodes`);
  let resolveNodes: (n: SimNode[]) => void = () => undefined;
  const ready = new Promise<SimNode[]>((res) => (resolveNodes = res));
  // the key goes by env, not argv, so it never shows in a process listing; each node derives
  // its own root token from it, as a node provisioned for per-node tokens holds
  const sim = startApp(
    ctx,
    'sandboxd-sim',
    'apps/sandboxd-sim/src/main.ts',
    [
      '--nodes',
      String(nodes),
      '--base-port',
      '0',
      '--speed',
      String(speed),
      '--name-prefix',
      'sim-node-',
      '--data-plane=on',
      ...(ctx.extraArgs['sandboxd-sim'] ?? []),
    ],
    {
      env: { SANDBOX_SCALE_NODE_TOKEN_KEY: ctx.fleetToken },
      restartPolicy: 'Never',
      onStdoutLine: (line) => {
        if (line.startsWith('{"nodes"'))
          resolveNodes(
            (JSON.parse(line) as { nodes: Omit<SimNode, 'token'>[] }).nodes.map((n) => ({
              ...n,
              token: nodeToken(ctx.fleetToken, n.name),
            })),
          );
      },
    },
  );
  const exited = sim.exited.then((code): SimNode[] => {
    throw new Error(`sandboxd-sim exited with ${code} before listening (see ${join(ctx.logDir, 'sandboxd-sim.log')})`);
  });
  return Promise.race([ready, exited]);
}

async function saKubeconfig(ctx: Ctx, app: string, boundNode?: string): Promise<string> {
  const kc = await kubeconfigForServiceAccount(ctx.cp.kubeConfig, SYSTEM_NAMESPACE, `${RELEASE}-${app}`, 86_400, boundNode);
  const path = join(ctx.dir, boundNode === undefined ? `${app}.kubeconfig` : `${app}-${boundNode}.kubeconfig`);
  writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}

/**
 * A Node object per simulated node. A publisher's token is bound to its node's Node, so
 * kube-apiserver names the node in the token as it does for the chart's publisher pods, and the
 * chart's admission policy lets each publisher write only its own node's inventory. There is no
 * kubelet: nothing schedules onto these nodes. The control plane may be shared, so one that
 * exists is kept.
 */
async function registerSimNodes(ctx: Ctx, nodes: SimNode[]): Promise<void> {
  const items = nodes.map((n) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: n.name } }));
  // server-side: suites sharing the control plane may register the same names at once
  await runCommand(
    toolPath(ctx.cp.binDir, 'kubectl'),
    ['apply', '--server-side', `--field-manager=${PEER_SLICE_MANAGER}`, '-f', '-'],
    { KUBECONFIG: ctx.cp.kubeconfigPath },
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
  );
}

/**
 * Probe and metrics servers off unless asked for (the runner watches the processes and the API
 * instead), then each on a port the app picks itself (port 0) and names in its log: a port picked
 * ahead of time could be taken by another process before the app binds it. Metrics are
 * authorized as the chart has them (--metrics-auth=delegated, the default).
 */
function probeArgs(ctx: Ctx): string[] {
  const addr = ctx.metrics ? '127.0.0.1:0' : '0';
  return ['--health-probe-bind-address', addr, '--metrics-bind-address', addr];
}

function logTail(path: string, lines = 15): string {
  try {
    return readFileSync(path, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

const PEER_SLICE_MANAGER = 'sandbox-scale-local-system';

/**
 * The EndpointSlices kube-controller-manager would keep for the chart's Service: one per
 * replica (each listens on its own port here), so the replicas find each other as in a cluster.
 * The Service itself is an ExternalName one (the APIService reaches a local process), which the
 * EndpointSlice controller leaves alone; these slices carry their own manager label. They list
 * this machine's first non-loopback IPv4 address where a cluster lists pod IPs (EndpointSlices
 * refuse loopback addresses).
 */
/** One EndpointSlice per replica (they listen on ports of their own), per Service, as the chart's Services list pods. */
async function publishPeerSlices(ctx: Ctx, address: string, services: Record<string, number[]>): Promise<void> {
  const kubectl = (args: string[], input?: string): Promise<string> =>
    runCommand(toolPath(ctx.cp.binDir, 'kubectl'), args, { KUBECONFIG: ctx.cp.kubeconfigPath }, input);
  await kubectl([
    'delete',
    'endpointslices',
    '-n',
    SYSTEM_NAMESPACE,
    '-l',
    `endpointslice.kubernetes.io/managed-by=${PEER_SLICE_MANAGER}`,
    '--ignore-not-found',
  ]);
  const items = Object.entries(services).flatMap(([service, ports]) =>
    ports.map((port, i) => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${service}-local-${i}`,
        namespace: SYSTEM_NAMESPACE,
        labels: {
          'kubernetes.io/service-name': service,
          'endpointslice.kubernetes.io/managed-by': PEER_SLICE_MANAGER,
        },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports: [{ name: 'https', port, protocol: 'TCP' }],
    })),
  );
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
}

async function startApps(
  ctx: Ctx,
  nodes: SimNode[],
  ports: { apiserver: number[]; fastPath: number[]; router: number[]; e2b: number[] },
  certs: { cert: string; key: string; ca: string },
  publishInterval: string,
): Promise<void> {
  // the apps that call every node hold the fleet token and derive each node's root token from it, as the chart runs them
  const common = (kubeconfig: string): string[] => [
    '--kubeconfig',
    kubeconfig,
    '--fleet-token-file',
    ctx.tokenFile,
    '--sandboxd-tokens',
    'per-node',
  ];
  const leader = ['--leader-elect', '--leader-election-namespace', SYSTEM_NAMESPACE];
  const claimRefKey = ['--claim-ref-key-file', ctx.claimRefKeyFile];
  ctx.log('starting sandbox-apiserver, claim-controller, warmpool-driver and one inventory-publisher per node');
  const address = hostAddress();
  if (address === undefined && (ports.apiserver.length > 1 || ports.fastPath.length > 1))
    throw new Error(
      'sandbox-apiserver and claim-controller replicas are listed in EndpointSlices, which refuse loopback addresses: this machine has no other IPv4 address',
    );
  // a lone claim-controller serves every namespace's fast path itself and stays on loopback
  const fastPathPeers = address !== undefined && ports.fastPath.length > 1 ? address : undefined;
  // without one, a lone replica runs without peers (it owns every name either way)
  if (address !== undefined)
    await publishPeerSlices(ctx, address, {
      [`${RELEASE}-sandbox-apiserver`]: ports.apiserver,
      ...(fastPathPeers !== undefined ? { [`${RELEASE}-claim-controller`]: ports.fastPath } : {}),
    });
  const apiserverKubeconfig = await saKubeconfig(ctx, 'sandbox-apiserver');
  // one replica never dials a peer and stays on loopback; more must reach each other at `address`
  // (every request to them is authenticated; the APIService still dials localhost)
  const bind = ports.apiserver.length > 1 ? '0.0.0.0' : '127.0.0.1';
  ports.apiserver.forEach((port, i) => {
    startApp(ctx, i === 0 ? 'sandbox-apiserver' : `sandbox-apiserver-${i}`, 'apps/sandbox-apiserver/src/main.ts', [
      ...common(apiserverKubeconfig),
      ...claimRefKey,
      '--secure-port',
      String(port),
      '--bind-address',
      bind,
      ...(address !== undefined ? ['--advertise-address', address] : []),
      '--tls-cert-file',
      certs.cert,
      '--tls-private-key-file',
      certs.key,
      '--peer-ca-file',
      certs.ca,
      '--service-name',
      `${RELEASE}-sandbox-apiserver`,
      '--service-namespace',
      SYSTEM_NAMESPACE,
      // the sandbox router, as the chart runs it: HTTPS with the serving certificate, Kubernetes bearer tokens
      '--router-bind-address',
      `127.0.0.1:${ports.router[i] ?? 0}`,
      // e2b's API on loopback, plain HTTP as its value allows there; a user's sandboxes in the default namespace
      '--e2b-bind-address',
      `127.0.0.1:${ports.e2b[i] ?? 0}`,
      '--e2b-tls=false',
      '--e2b-default-namespace',
      'default',
      ...(ctx.extraArgs['sandbox-apiserver'] ?? []),
    ]);
  });
  const claimControllerKubeconfig = await saKubeconfig(ctx, 'claim-controller');
  for (let i = 0; i < ctx.claimControllerReplicas; i++) {
    const name = i === 0 ? 'claim-controller' : `claim-controller-${i}`;
    const fastPath = ports.fastPath[i] ?? 0;
    startApp(
      ctx,
      name,
      'apps/claim-controller/src/main.ts',
      [
        ...common(claimControllerKubeconfig),
        ...claimRefKey,
        ...leader,
        ...probeArgs(ctx),
        '--fast-path-bind-address',
        `${fastPathPeers !== undefined ? '0.0.0.0' : '127.0.0.1'}:${fastPath}`,
        // as the chart runs them: each namespace's fast path served by one replica, found by the Service's slices
        ...(fastPathPeers !== undefined
          ? [
              '--fast-path-service',
              `${RELEASE}-claim-controller`,
              '--fast-path-service-namespace',
              SYSTEM_NAMESPACE,
              '--fast-path-advertise-address',
              fastPathPeers,
              '--fast-path-peer-ca-file',
              certs.ca,
            ]
          : []),
        '--tls-cert-file',
        certs.cert,
        '--tls-private-key-file',
        certs.key,
        // as the chart does: its serving certificate on the metrics port too, so a scraper can check it
        '--metrics-tls-cert-file',
        certs.cert,
        '--metrics-tls-private-key-file',
        certs.key,
        ...(ctx.extraArgs['claim-controller'] ?? []),
      ],
      { env: { POD_NAME: name } },
    );
  }
  startApp(ctx, 'warmpool-driver', 'apps/warmpool-driver/src/main.ts', [
    ...common(await saKubeconfig(ctx, 'warmpool-driver')),
    ...leader,
    ...probeArgs(ctx),
    ...(ctx.extraArgs['warmpool-driver'] ?? []),
  ]);
  await registerSimNodes(ctx, nodes);
  for (const n of nodes) {
    // a publisher holds only its own node's token, as the chart mounts it from the node
    const nodeTokenFile = join(ctx.dir, `sandboxd-token-${n.name}`);
    writeFileSync(nodeTokenFile, n.token, { mode: 0o600 });
    startApp(ctx, `inventory-publisher-${n.name}`, 'apps/inventory-publisher/src/main.ts', [
      '--kubeconfig',
      await saKubeconfig(ctx, 'inventory-publisher', n.name),
      '--sandboxd-token-file',
      nodeTokenFile,
      ...probeArgs(ctx),
      '--node-name',
      n.name,
      '--sandboxd-url',
      n.url,
      '--publish-interval',
      publishInterval,
      ...(ctx.extraArgs['inventory-publisher'] ?? []),
    ]);
  }
}

class AppCrashedError extends Error {}

/** Whether something accepts TCP connections on 127.0.0.1:port (the fast path listens once its caches are synced). */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(2_000);
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

async function waitUntilServing(ctx: Ctx, nodes: SimNode[], fastPathPorts: number[]): Promise<void> {
  const kubectl = (args: string[]): Promise<string> =>
    runCommand(toolPath(ctx.cp.binDir, 'kubectl'), args, { KUBECONFIG: ctx.cp.kubeconfigPath });
  ctx.log('waiting for the APIService to be Available and every node to publish its inventory');
  await eventually(
    async () => {
      for (const [name, app] of ctx.apps) {
        // an app that cannot even start is a bug to show, not one to restart through
        if (app.restarts > 0)
          throw new AppCrashedError(`${name} exited while starting; the end of its log:\n${logTail(join(ctx.logDir, `${name}.log`))}`);
      }
      const available = await kubectl([
        'get',
        'apiservice',
        'v1beta1.agents.x-k8s.io',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Available")].status}',
      ]);
      if (available.trim() !== 'True') throw new Error('APIService v1beta1.agents.x-k8s.io is not Available yet');
      const inventories = (await kubectl(['get', 'nodeinventories', '-o', 'name'])).trim().split('\n').filter(Boolean);
      if (inventories.length < nodes.length) throw new Error(`${inventories.length}/${nodes.length} NodeInventories published`);
      for (const port of fastPathPorts)
        if (!(await accepting(port))) throw new Error(`claim-controller's fast path is not listening on 127.0.0.1:${port} yet`);
    },
    { timeoutMs: 120_000, intervalMs: 500, retryOn: (err) => !(err instanceof AppCrashedError) },
  );
}

/**
 * The whole system on this machine: a control plane with the chart installed (CRDs, RBAC, the
 * APIService pointing at a local sandbox-apiserver), simulated sandboxd nodes, and the four apps
 * as their own processes, each under its chart ServiceAccount's token.
 */
export async function startLocalSystem(opts: LocalSystemOptions = {}): Promise<LocalSystem> {
  const log = opts.log ?? (() => undefined);
  const ownsControlPlane = !opts.controlPlane;
  const cp = opts.controlPlane ?? (await startControlPlane({ log }));
  const dir = join(cp.dir, `system-${randomBytes(3).toString('hex')}`);
  const logDir = join(dir, 'logs');
  mkdirSync(logDir, { recursive: true, mode: 0o700 });
  const fleetToken = randomBytes(24).toString('hex');
  const tokenFile = join(dir, 'fleet-token');
  writeFileSync(tokenFile, fleetToken, { mode: 0o600 });
  // the key claim-controller and sandbox-apiserver prove their claim references with, as the chart's Secret holds it
  const claimRefKeyFile = join(dir, 'claim-ref-key');
  writeFileSync(claimRefKeyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
  const ctx: Ctx = {
    cp,
    dir,
    logDir,
    log,
    fleetToken,
    tokenFile,
    claimRefKeyFile,
    apps: new Map(),
    specs: new Map(),
    extraArgs: opts.extraArgs ?? {},
    claimControllerReplicas: opts.claimControllerReplicas ?? 1,
    metrics: opts.metrics ?? false,
    metricsUrls: new Map(),
    probeUrls: new Map(),
  };
  /** A component's leader Lease; undefined when there is none (yet). */
  const readLease = (component: keyof typeof LEASE_NAMES): Promise<V1Lease | undefined> =>
    kubeApiClient(cp.kubeConfig, CoordinationV1Api)
      .readNamespacedLease({ namespace: SYSTEM_NAMESPACE, name: LEASE_NAMES[component] })
      .catch(() => undefined);
  const stopAll = async (): Promise<void> => {
    for (const app of [...ctx.apps.values()].reverse()) await app.stop();
    if (ownsControlPlane) await cp.stop();
  };
  try {
    const apiserverPorts: number[] = [];
    for (let i = 0; i < Math.max(1, opts.apiserverReplicas ?? 1); i++) apiserverPorts.push(await freePort());
    const fastPathPorts: number[] = [];
    for (let i = 0; i < ctx.claimControllerReplicas; i++) fastPathPorts.push(await freePort());
    const routerPorts: number[] = [];
    for (let i = 0; i < apiserverPorts.length; i++) routerPorts.push(await freePort());
    const e2bPorts: number[] = [];
    for (let i = 0; i < apiserverPorts.length; i++) e2bPorts.push(await freePort());
    const ports = { apiserver: apiserverPorts, fastPath: fastPathPorts, router: routerPorts, e2b: e2bPorts };
    const ca = await createCA('sandbox-scale-local-serving-ca');
    const serving = await createLeaf(ca, {
      commonName: `${RELEASE}-sandbox-apiserver`,
      dnsNames: [
        `${RELEASE}-sandbox-apiserver.${SYSTEM_NAMESPACE}.svc`,
        `${RELEASE}-claim-controller.${SYSTEM_NAMESPACE}.svc`,
        'localhost',
      ],
      ips: ['127.0.0.1'],
      server: true,
    });
    const certs = { cert: join(dir, 'serving.crt'), key: join(dir, 'serving.key'), ca: join(dir, 'serving-ca.crt') };
    writeFileSync(certs.cert, serving.cert, { mode: 0o600 });
    writeFileSync(certs.key, serving.key, { mode: 0o600 });
    writeFileSync(certs.ca, ca.cert, { mode: 0o600 });
    await opts.beforeInstall?.(cp.kubeConfig);
    await installChart(ctx, apiserverPorts[0] ?? 0, ca.cert, opts.secretNamespaces);
    await kubeApiClient(cp.kubeConfig, CoreV1Api).createNamespacedSecret({
      namespace: SYSTEM_NAMESPACE,
      body: { metadata: { name: `${RELEASE}-fleet-token` }, stringData: { token: fleetToken } },
    });
    const nodes = await startSimNodes(ctx, opts.nodes ?? 3, opts.speed ?? 0.05);
    await startApps(ctx, nodes, ports, certs, opts.publishInterval ?? '2s');
    await waitUntilServing(ctx, nodes, ports.fastPath);
    if (opts.examples !== false) {
      log('applying examples/ (a template, a warm pool of 10, 3 claims, an agent ServiceAccount)');
      await runCommand(toolPath(cp.binDir, 'kubectl'), ['apply', '-f', join(REPO_ROOT, 'examples')], { KUBECONFIG: cp.kubeconfigPath });
    }
    return {
      controlPlane: cp,
      kubeconfigPath: cp.kubeconfigPath,
      kubeConfig: cp.kubeConfig,
      fleetToken,
      nodes,
      apiserverUrl: `https://127.0.0.1:${apiserverPorts[0] ?? 0}`,
      apiserverUrls: apiserverPorts.map((p) => `https://127.0.0.1:${p}`),
      fastPathUrl: `https://127.0.0.1:${fastPathPorts[0] ?? 0}`,
      fastPathUrls: fastPathPorts.map((p) => `https://127.0.0.1:${p}`),
      routerUrls: routerPorts.map((p) => `https://127.0.0.1:${p}`),
      e2bUrls: e2bPorts.map((p) => `http://127.0.0.1:${p}`),
      servingCaPath: certs.ca,
      claimRefKeyFile,
      logDir,
      apps: ctx.apps,
      metricsUrls: ctx.metricsUrls,
      probeUrls: ctx.probeUrls,
      async restartApp(name, o = {}) {
        const app = ctx.apps.get(name);
        const spec = ctx.specs.get(name);
        if (!app || !spec) throw new Error(`no app ${name}`);
        await app.stop({ kill: o.kill });
        ctx.metricsUrls.delete(name);
        ctx.probeUrls.delete(name);
        await o.beforeStart?.();
        startApp(ctx, name, spec.entry, spec.args, { env: spec.env });
      },
      async leaderSince(component) {
        const at = (await readLease(component))?.spec?.acquireTime;
        return at === undefined ? undefined : new Date(at);
      },
      async leaderOf(component) {
        const holder = (await readLease(component))?.spec?.holderIdentity ?? '';
        const app = holder.slice(0, holder.lastIndexOf('_'));
        return ctx.apps.has(app) ? app : undefined;
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
