import { KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pauseImage } from '../images/images';
import { cleanupNode, kubeconfigFile, nodeHostAddress, NODE_NAME, startNode, takeNodeLock, type LocalNode } from './node';
import { createCA, createLeaf, createSigningKey, type CertPair } from './pki';
import { freePort } from './ports';
import { ProcessGroup } from './process-group';
import { nodeToolsDir, toolPath, toolsDir } from './tools';

export interface ControlPlane {
  /** Admin kubeconfig (client certificate in system:masters). */
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  server: string;
  /** etcd's client URL (plain HTTP on loopback): what a bench counts stored objects through. */
  etcdUrl: string;
  /** Directory with kube-apiserver, etcd, kubectl, helm. */
  binDir: string;
  /** Directory holding certs, etcd data and logs; removed by stop(). */
  dir: string;
  /** PEM files other components need (front-proxy CA to verify aggregated requests, etc.). */
  files: ControlPlaneFiles;
  /** Milliseconds from spawn to /readyz. */
  startupMs: number;
  /** The node, when started with `node: true`. */
  node?: LocalNode;
  stop(): Promise<void>;
}

export interface ControlPlaneFiles {
  caCert: string;
  caKey: string;
  frontProxyCaCert: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

export interface ControlPlaneOptions {
  /** Also start kube-controller-manager (garbage collection, namespace deletion, SA tokens). Default true. */
  controllerManager?: boolean;
  /** Extra kube-apiserver flags. */
  apiserverArgs?: string[];
  /**
   * Also run a real node: kube-scheduler, containerd, kubelet, kube-proxy and a bridge CNI, with
   * the API server on the host address so pods reach it. Resolves once the Node is Ready.
   * One node per machine; needs root and `npm run tools -- node`.
   */
  node?: boolean;
  log?: (msg: string) => void;
}

export class ControlPlaneStartError extends Error {
  override readonly name = 'ControlPlaneStartError';
}

interface Pki {
  ca: CertPair;
  serving: CertPair;
  admin: CertPair;
  frontProxyCa: CertPair;
  frontProxyClient: CertPair;
  kcm: CertPair;
  sa: { publicKey: string; privateKey: string };
}

async function makePki(extraIps: string[] = []): Promise<Pki> {
  const ca = await createCA('sandbox-scale-local-ca');
  const frontProxyCa = await createCA('sandbox-scale-front-proxy-ca');
  const [serving, admin, frontProxyClient, kcm] = await Promise.all([
    createLeaf(ca, {
      commonName: 'kube-apiserver',
      dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
      ips: ['127.0.0.1', '10.0.0.1', ...extraIps],
      server: true,
    }),
    createLeaf(ca, { commonName: 'sandbox-scale-admin', organizations: ['system:masters'], client: true }),
    createLeaf(frontProxyCa, { commonName: 'front-proxy-client', client: true }),
    createLeaf(ca, { commonName: 'system:kube-controller-manager', client: true }),
  ]);
  return { ca, serving, admin, frontProxyCa, frontProxyClient, kcm, sa: createSigningKey() };
}

function writeFiles(dir: string, pki: Pki): Record<string, string> {
  const files: Record<string, string> = {
    'ca.crt': pki.ca.cert,
    'ca.key': pki.ca.key,
    'serving.crt': pki.serving.cert,
    'serving.key': pki.serving.key,
    'admin.crt': pki.admin.cert,
    'admin.key': pki.admin.key,
    'front-proxy-ca.crt': pki.frontProxyCa.cert,
    'front-proxy-client.crt': pki.frontProxyClient.cert,
    'front-proxy-client.key': pki.frontProxyClient.key,
    'kcm.crt': pki.kcm.cert,
    'kcm.key': pki.kcm.key,
    'sa.pub': pki.sa.publicKey,
    'sa.key': pki.sa.privateKey,
  };
  const paths: Record<string, string> = {};
  for (const [name, pem] of Object.entries(files)) {
    paths[name] = join(dir, name);
    writeFileSync(paths[name] as string, pem, { mode: 0o600 });
  }
  return paths;
}

export function kubeconfigYaml(
  server: string,
  caPem: string,
  user: { cert: string; key: string } | { token: string },
  userName: string,
): string {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const creds = 'token' in user ? { token: user.token } : { 'client-certificate-data': b64(user.cert), 'client-key-data': b64(user.key) };
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
      users: [{ name: userName, user: creds }],
      contexts: [{ name: userName, context: { cluster: 'local', user: userName } }],
      'current-context': userName,
    },
    null,
    2,
  );
}

function httpsGet(url: string, pki: Pki): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(url, { ca: pki.ca.cert, cert: pki.admin.cert, key: pki.admin.key, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string, failed: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const why = failed();
    if (why) throw new ControlPlaneStartError(why);
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new ControlPlaneStartError(`${what} not ready after ${timeoutMs} ms`);
}

function tail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

const SERVICE_CIDR = '10.0.0.0/24';

/** The API server's flags; one given in `extra` replaces the default (list flags append when repeated). */
function apiserverArgs(p: Record<string, string>, ports: { etcd: number; secure: number }, extra: string[]): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${ports.etcd}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${ports.secure}`,
    `--tls-cert-file=${p['serving.crt']}`,
    `--tls-private-key-file=${p['serving.key']}`,
    `--client-ca-file=${p['ca.crt']}`,
    `--service-account-key-file=${p['sa.pub']}`,
    `--service-account-signing-key-file=${p['sa.key']}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    '--api-audiences=https://kubernetes.default.svc.cluster.local',
    '--authorization-mode=RBAC',
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--allow-privileged=true',
    `--requestheader-client-ca-file=${p['front-proxy-ca.crt']}`,
    '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${p['front-proxy-client.crt']}`,
    `--proxy-client-key-file=${p['front-proxy-client.key']}`,
    '--enable-aggregator-routing=false',
    '--profiling=false',
    '--endpoint-reconciler-type=none',
    '--disable-admission-plugins=ServiceAccount',
  ]
    .filter((flag) => !extra.some((e) => e.split('=')[0] === flag.split('=')[0]))
    .concat(extra);
}

/** With a node: the API server on the host address, node authorization, ServiceAccount admission. */
function nodeApiserverArgs(p: Record<string, string>, hostIp: string): string[] {
  return [
    '--bind-address=0.0.0.0',
    `--advertise-address=${hostIp}`,
    // the `kubernetes` Service's endpoints, so pods reach the API server through its ClusterIP
    '--endpoint-reconciler-type=lease',
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--disable-admission-plugins=',
    `--kubelet-client-certificate=${p['kubelet-client.crt']}`,
    `--kubelet-client-key=${p['kubelet-client.key']}`,
    // the node's name resolves nowhere; logs and exec dial its address
    '--kubelet-preferred-address-types=InternalIP',
  ];
}

/** Controllers a node's workloads need on top of the ones a cluster without nodes runs. */
const NODE_CONTROLLERS =
  'daemonset-controller,disruption-controller,endpoints-controller,endpointslice-controller,endpointslice-mirroring-controller,node-lifecycle-controller,pod-garbage-collector-controller,root-ca-certificate-publisher-controller,statefulset-controller,ttl-after-finished-controller,job-controller';

function kcmArgs(p: Record<string, string>, kubeconfig: string, node: boolean): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=0',
    `--service-account-private-key-file=${p['sa.key']}`,
    `--root-ca-file=${p['ca.crt']}`,
    '--use-service-account-credentials=true',
    // the controllers a cluster without nodes still needs: GC, namespaces, SAs and their tokens
    // and the HorizontalPodAutoscaler controller, which scales SandboxWarmPools through their scale subresource
    `--controllers=garbagecollector,namespace,serviceaccount,serviceaccount-token,clusterrole-aggregation,replicaset,deployment,horizontalpodautoscaling${node ? `,${NODE_CONTROLLERS}` : ''}`,
    // an HPA reads its metrics every second (default 15 s), so a suite sees a scale within seconds
    // of the metric; the scale-down stabilization window (default 5 minutes) stays as kube's default
    '--horizontal-pod-autoscaler-sync-period=1s',
    ...(node ? ['--node-monitor-grace-period=20s'] : []),
  ];
}

/**
 * Starts etcd + kube-apiserver (+ kube-controller-manager) on free loopback ports with freshly
 * generated certificates. Resolves once /readyz answers ok; stop() leaves no process or file.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? (() => undefined);
  const binDir = opts.node ? nodeToolsDir() : toolsDir();
  if (opts.node) takeNodeLock();
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-scale-cp-'));
  const group = new ProcessGroup(dir);
  let node: LocalNode | undefined;
  if (opts.node) group.beforeRemove(() => cleanupNode(dir));
  let earlyExit: string | undefined;
  const onEarlyExit = (name: string) => (code: number | null, logPath: string) => {
    earlyExit = `${name} exited with code ${code} before it was ready:\n${tail(logPath)}`;
  };
  try {
    const started = Date.now();
    const hostIp = opts.node ? nodeHostAddress() : undefined;
    const pki = await makePki(hostIp ? [hostIp] : []);
    const p = writeFiles(dir, pki);
    if (hostIp) {
      const kubeletClient = await createLeaf(pki.ca, {
        commonName: 'kube-apiserver-kubelet-client',
        organizations: ['system:masters'],
        client: true,
      });
      for (const [name, pem] of [
        ['kubelet-client.crt', kubeletClient.cert],
        ['kubelet-client.key', kubeletClient.key],
      ] as const) {
        p[name] = join(dir, name);
        writeFileSync(p[name], pem, { mode: 0o600 });
      }
    }
    const [etcdPort, peerPort, securePort] = [await freePort(), await freePort(), await freePort()];
    log(`starting etcd on 127.0.0.1:${etcdPort}`);
    group.start(
      'etcd',
      toolPath(binDir, 'etcd'),
      [
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
        '--unsafe-no-fsync=true',
        '--quota-backend-bytes=8589934592',
        '--log-level=warn',
      ],
      onEarlyExit('etcd'),
    );
    log(`starting kube-apiserver on https://127.0.0.1:${securePort}`);
    group.start(
      'kube-apiserver',
      toolPath(binDir, 'kube-apiserver'),
      apiserverArgs(p, { etcd: etcdPort, secure: securePort }, [
        ...(hostIp ? nodeApiserverArgs(p, hostIp) : []),
        ...(opts.apiserverArgs ?? []),
      ]),
      onEarlyExit('kube-apiserver'),
    );
    const server = `https://127.0.0.1:${securePort}`;
    await waitFor(
      async () => (await httpsGet(`${server}/readyz`, pki)).status === 200,
      90_000,
      'kube-apiserver',
      () => earlyExit,
    );
    const kubeconfigPath = join(dir, 'admin.kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfigYaml(server, pki.ca.cert, pki.admin, 'admin'), { mode: 0o600 });
    if (opts.controllerManager !== false) {
      const kcmKubeconfig = join(dir, 'kcm.kubeconfig');
      writeFileSync(kcmKubeconfig, kubeconfigYaml(server, pki.ca.cert, pki.kcm, 'kube-controller-manager'), { mode: 0o600 });
      log('starting kube-controller-manager');
      group.start(
        'kube-controller-manager',
        toolPath(binDir, 'kube-controller-manager'),
        kcmArgs(p, kcmKubeconfig, !!hostIp),
        onEarlyExit('kube-controller-manager'),
      );
    }
    if (hostIp) {
      const nodeServer = `https://${hostIp}:${securePort}`;
      const schedulerCert = await createLeaf(pki.ca, { commonName: 'system:kube-scheduler', client: true });
      const schedulerKubeconfig = kubeconfigFile(join(dir, 'scheduler.kubeconfig'), server, pki.ca.cert, schedulerCert, 'kube-scheduler');
      log('starting kube-scheduler');
      group.start(
        'kube-scheduler',
        join(binDir, 'kube-scheduler'),
        [
          `--kubeconfig=${schedulerKubeconfig}`,
          `--authentication-kubeconfig=${schedulerKubeconfig}`,
          `--authorization-kubeconfig=${schedulerKubeconfig}`,
          '--leader-elect=false',
          '--bind-address=127.0.0.1',
          '--secure-port=0',
        ],
        onEarlyExit('kube-scheduler'),
      );
      node = await startNode(
        {
          dir,
          binDir,
          server: nodeServer,
          ca: pki.ca,
          hostIp,
          serviceCidr: SERVICE_CIDR,
          group,
          sandboxImage: pauseImage(binDir),
          onEarlyExit,
          log,
        },
        () => earlyExit,
      );
      const nodeReady = async (): Promise<boolean> => {
        const res = await httpsGet(`${server}/api/v1/nodes/${NODE_NAME}`, pki);
        if (res.status !== 200) return false;
        const n = JSON.parse(res.body) as {
          spec?: { taints?: { key: string }[] };
          status?: { conditions?: { type: string; status: string }[] };
        };
        const ready = n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
        return ready && !(n.spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/not-ready'));
      };
      await waitFor(nodeReady, 120_000, `Node ${NODE_NAME} Ready`, () => earlyExit);
      log(`node ${NODE_NAME} Ready (host ${hostIp})`);
    }
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfigPath);
    const files: ControlPlaneFiles = {
      caCert: p['ca.crt'] as string,
      caKey: p['ca.key'] as string,
      frontProxyCaCert: p['front-proxy-ca.crt'] as string,
      serviceAccountKey: p['sa.key'] as string,
      serviceAccountPub: p['sa.pub'] as string,
    };
    return {
      kubeconfigPath,
      kubeConfig,
      server,
      etcdUrl: `http://127.0.0.1:${etcdPort}`,
      binDir,
      dir,
      files,
      startupMs: Date.now() - started,
      node,
      stop: () => group.stop(),
    };
  } catch (err) {
    await group.stop();
    throw err;
  }
}
