import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLeaf, type CertPair } from './pki';
import { freePort } from './ports';
import type { ProcessGroup } from './process-group';
import { hostAddress } from '../testing/host-address';

/**
 * One real node for the local control plane: containerd (own config, root, state and socket under
 * the run dir), the kubelet (cgroupfs), kube-proxy (iptables) and a bridge CNI network. Only one
 * node runs on a machine at a time (a lock in /run): the kubelet's iptables chains, kube-proxy's
 * and the CNI bridge are per machine.
 */

export const NODE_NAME = 'sandbox-scale-node';
/** Pod addresses (host-local IPAM on the bridge); kube-proxy masquerades what leaves it. */
export const POD_CIDR = '10.244.0.0/24';
const LOCK_FILE = '/run/sandbox-scale-node.lock';
const CLEANUP_SCRIPT = join(__dirname, 'node-cleanup.cjs');
const CNI_BIN_DIR = '/usr/lib/cni';

export class NodeStartError extends Error {
  override readonly name = 'NodeStartError';
}
export const isNodeStartError = (e: unknown): e is NodeStartError => e instanceof NodeStartError;

export interface LocalNode {
  name: string;
  /** The host address pods and the API server use to reach each other. */
  hostIp: string;
  /** containerd's socket; `ctr --address` it to import images into the k8s.io namespace. */
  containerdAddress: string;
  /** Loads a docker/OCI archive into containerd's k8s.io namespace, where the kubelet finds it. */
  importImage(archive: string): void;
  /**
   * Lets containerd pull from a plain-HTTP registry at host:port, as a node is configured for a
   * private mirror: a hosts.toml under its registry config_path, read at each pull.
   */
  pullFrom(registryHost: string): void;
}

/**
 * Removes what the node of the run in `dir` leaves besides its processes (shims and containers,
 * mounts, the bridge, iptables chains) and releases the node lock. Run after the processes stop.
 */
export function cleanupNode(dir: string): void {
  const statePath = join(dir, 'node-state.json');
  if (!existsSync(statePath)) {
    try {
      if (readFileSync(LOCK_FILE, 'utf8').trim() === String(process.pid)) rmSync(LOCK_FILE, { force: true });
    } catch {
      /* no lock */
    }
    return;
  }
  try {
    execFileSync(process.execPath, [CLEANUP_SCRIPT, statePath], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    /* it reports what it could not remove on stderr */
  }
}

/** The first non-loopback IPv4 address of the machine: pods route to it through the bridge. */
export function nodeHostAddress(): string {
  const a = hostAddress();
  if (a === undefined)
    throw new NodeStartError('a node needs a non-loopback IPv4 address for pods to reach the API server; this machine has none');
  return a;
}

/** Takes the machine's node lock, or names the process that holds it. */
/** Whether a process of this id runs: signal 0 checks without signalling. */
function isRunning(pid: number): boolean {
  try {
    return process.kill(pid, 0);
  } catch {
    return false;
  }
}

export function takeNodeLock(): void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      closeSync(openSync(LOCK_FILE, 'wx'));
      writeFileSync(LOCK_FILE, String(process.pid));
      return;
    } catch {
      const holder = Number(readFileSync(LOCK_FILE, 'utf8').trim() || '0');
      if (holder && isRunning(holder))
        throw new NodeStartError(`another local node runs on this machine (pid ${holder}, ${LOCK_FILE}); one node at a time`);
      rmSync(LOCK_FILE, { force: true });
    }
  }
  throw new NodeStartError(`cannot take ${LOCK_FILE}`);
}

function sysctl(path: string, value: string): void {
  try {
    if (readFileSync(path, 'utf8').trim() !== value) writeFileSync(path, value);
  } catch (err) {
    throw new NodeStartError(`cannot set ${path} to ${value} (${(err as Error).message}); pods need it to reach services`);
  }
}

export function kubeconfigFile(path: string, server: string, ca: string, user: CertPair, name: string): string {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server, 'certificate-authority-data': b64(ca) } }],
      users: [{ name, user: { 'client-certificate-data': b64(user.cert), 'client-key-data': b64(user.key) } }],
      contexts: [{ name, context: { cluster: 'local', user: name } }],
      'current-context': name,
    }),
    { mode: 0o600 },
  );
  return path;
}

/** containerd's registry config_path: one directory per registry host, each with a hosts.toml. */
function registryHostsDir(containerdDir: string): string {
  return join(containerdDir, 'certs.d');
}

function containerdConfig(dir: string, address: string, sandboxImage: string, cniConfDir: string): string {
  return [
    'version = 2',
    `root = "${dir}/root"`,
    `state = "${dir}/state"`,
    '[grpc]',
    `  address = "${address}"`,
    '[ttrpc]',
    `  address = "${address}.ttrpc"`,
    '[debug]',
    `  address = "${address}.debug"`,
    '[metrics]',
    '  address = ""',
    '[plugins."io.containerd.grpc.v1.cri"]',
    `  sandbox_image = "${sandboxImage}"`,
    // this machine refuses to lower oom_score_adj; without it every pod sandbox fails in runc create
    '  restrict_oom_score_adj = true',
    // network namespaces under the state dir, so stop and the watchdog find and unmount them
    '  netns_mounts_under_state_dir = true',
    '  enable_selinux = false',
    '  [plugins."io.containerd.grpc.v1.cri".containerd]',
    '    snapshotter = "overlayfs"',
    '    default_runtime_name = "runc"',
    '    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
    '      runtime_type = "io.containerd.runc.v2"',
    '  [plugins."io.containerd.grpc.v1.cri".cni]',
    `    bin_dir = "${CNI_BIN_DIR}"`,
    `    conf_dir = "${cniConfDir}"`,
    // per-registry hosts (pullFrom): how this node reaches the registries its images name
    '  [plugins."io.containerd.grpc.v1.cri".registry]',
    `    config_path = "${registryHostsDir(dir)}"`,
    '',
  ].join('\n');
}

export interface StartNodeOptions {
  dir: string;
  binDir: string;
  /** API server URL the node's components dial (the host address). */
  server: string;
  ca: CertPair;
  hostIp: string;
  /** The API server's --service-cluster-ip-range. */
  serviceCidr: string;
  group: ProcessGroup;
  sandboxImage: { name: string; archive: string };
  onEarlyExit: (name: string) => (code: number | null, logPath: string) => void;
  log: (msg: string) => void;
}

async function waitUntil(check: () => boolean, timeoutMs: number, what: string, failed: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const why = failed();
    if (why) throw new NodeStartError(why);
    if (check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new NodeStartError(`${what} not ready after ${timeoutMs} ms`);
}

/** Starts containerd, the kubelet and kube-proxy; the caller waits for the Node to be Ready. */
export async function startNode(opts: StartNodeOptions, earlyExit: () => string | undefined): Promise<LocalNode> {
  const { dir, binDir, server, ca, hostIp, group, log } = opts;
  const nodeDir = join(dir, 'node');
  const suffix = Math.random().toString(16).slice(2, 8);
  const bridge = `ssn${suffix}`;
  const network = `sandbox-scale-${suffix}`;
  const serviceLink = `ssv${suffix}`;
  const statePath = join(dir, 'node-state.json');
  const containerdDir = join(nodeDir, 'containerd');
  const address = join(containerdDir, 'containerd.sock');
  const cniConfDir = join(nodeDir, 'cni', 'net.d');
  for (const d of [containerdDir, cniConfDir, join(nodeDir, 'kubelet')]) mkdirSync(d, { recursive: true });
  writeFileSync(statePath, JSON.stringify({ dir, bridge, serviceLink, network, lockFile: LOCK_FILE, ownerPid: process.pid }));

  const node: LocalNode = {
    name: NODE_NAME,
    hostIp,
    containerdAddress: address,
    importImage(archive: string): void {
      try {
        execFileSync('ctr', ['--address', address, '-n', 'k8s.io', 'images', 'import', '--no-unpack', archive], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch (err) {
        throw new NodeStartError(`ctr images import ${archive} failed: ${String((err as { stderr?: Buffer }).stderr ?? err)}`);
      }
    },
    pullFrom(registryHost: string): void {
      const hostDir = join(registryHostsDir(containerdDir), registryHost);
      mkdirSync(hostDir, { recursive: true });
      writeFileSync(
        join(hostDir, 'hosts.toml'),
        [`server = "http://${registryHost}"`, '', `[host."http://${registryHost}"]`, '  capabilities = ["pull", "resolve"]', ''].join('\n'),
      );
    },
  };

  sysctl('/proc/sys/net/ipv4/ip_forward', '1');
  // Service addresses go to a portless bridge, where a packet kube-proxy has not rewritten (yet) is
  // dropped, as in a cluster. Without it they follow the default route, and a gateway that answers
  // them (this machine's answers 404) holds kept-alive connections, the aggregator's among them.
  try {
    execFileSync('ip', ['link', 'add', serviceLink, 'type', 'bridge'], { stdio: ['ignore', 'ignore', 'pipe'] });
    execFileSync('ip', ['link', 'set', serviceLink, 'up'], { stdio: ['ignore', 'ignore', 'pipe'] });
    execFileSync('ip', ['route', 'add', opts.serviceCidr, 'dev', serviceLink], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    throw new NodeStartError(
      `cannot route ${opts.serviceCidr} to a link of its own: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`,
    );
  }
  if (existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables')) sysctl('/proc/sys/net/bridge/bridge-nf-call-iptables', '1');

  writeFileSync(
    join(cniConfDir, '10-bridge.conflist'),
    JSON.stringify({
      cniVersion: '0.4.0',
      name: network,
      plugins: [
        {
          type: 'bridge',
          bridge,
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: POD_CIDR }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: join(nodeDir, 'cni', 'ipam'),
          },
        },
      ],
    }),
  );
  const configPath = join(containerdDir, 'config.toml');
  writeFileSync(configPath, containerdConfig(containerdDir, address, opts.sandboxImage.name, cniConfDir));
  log('starting containerd');
  group.start('containerd', 'containerd', ['--config', configPath, '--log-level', 'warn'], opts.onEarlyExit('containerd'));
  await waitUntil(
    () => {
      try {
        execFileSync('ctr', ['--address', address, 'version'], { stdio: 'ignore', timeout: 5000 });
        return true;
      } catch {
        return false;
      }
    },
    30_000,
    'containerd',
    earlyExit,
  );
  node.importImage(opts.sandboxImage.archive);

  const [kubeletCert, proxyCert] = await Promise.all([
    createLeaf(ca, { commonName: `system:node:${NODE_NAME}`, organizations: ['system:nodes'], client: true }),
    createLeaf(ca, { commonName: 'system:kube-proxy', client: true }),
  ]);
  const kubeletDir = join(nodeDir, 'kubelet');
  const [kubeletPort, kubeletHealthz, proxyHealthz, proxyMetrics] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const kubeletConfig = join(nodeDir, 'kubelet-config.json');
  writeFileSync(
    kubeletConfig,
    JSON.stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      cgroupDriver: 'cgroupfs', // this machine mounts cgroup v1 and has no systemd
      failCgroupV1: false,
      failSwapOn: false,
      cgroupsPerQOS: false,
      enforceNodeAllocatable: [],
      containerRuntimeEndpoint: `unix://${address}`,
      port: kubeletPort,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: kubeletHealthz,
      authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: join(dir, 'ca.crt') } },
      authorization: { mode: 'Webhook' },
      clusterDomain: 'cluster.local',
      resolvConf: '/etc/resolv.conf',
      // a shared test machine: never evict the suite's pods for the host's memory or disk
      evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      nodeStatusUpdateFrequency: '5s',
      // a changed Secret reaches the pods' volumes within a sync: 10 s instead of a minute, so a
      // CA rotation's steps (certificates.caRotationOverlap in installed-values.ts) can be short
      syncFrequency: '10s',
      serializeImagePulls: false,
      localStorageCapacityIsolation: false,
      // as many pods as the bridge's /24 has addresses, not the default 110: bench:upstream holds
      // a warm pool of pods and the claims it binds on this one node
      maxPods: 250,
    }),
  );
  log('starting kubelet');
  group.start(
    'kubelet',
    join(binDir, 'kubelet'),
    [
      `--config=${kubeletConfig}`,
      `--kubeconfig=${kubeconfigFile(join(nodeDir, 'kubelet.kubeconfig'), server, ca.cert, kubeletCert, 'kubelet')}`,
      `--root-dir=${kubeletDir}`,
      `--cert-dir=${join(kubeletDir, 'pki')}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${hostIp}`,
      '--v=1',
    ],
    opts.onEarlyExit('kubelet'),
  );

  const proxyConfig = join(nodeDir, 'kube-proxy-config.json');
  writeFileSync(
    proxyConfig,
    JSON.stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig: kubeconfigFile(join(nodeDir, 'kube-proxy.kubeconfig'), server, ca.cert, proxyCert, 'kube-proxy') },
      mode: 'iptables',
      clusterCIDR: POD_CIDR,
      hostnameOverride: NODE_NAME,
      healthzBindAddress: `127.0.0.1:${proxyHealthz}`,
      metricsBindAddress: `127.0.0.1:${proxyMetrics}`,
      // leave the host's conntrack sysctls alone
      conntrack: { maxPerCore: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    }),
  );
  log('starting kube-proxy');
  group.start('kube-proxy', join(binDir, 'kube-proxy'), [`--config=${proxyConfig}`, '--v=1'], opts.onEarlyExit('kube-proxy'));
  return node;
}
