import { nodeToken } from '@sandbox-scale/sandboxd-client';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../control-plane/control-plane';
import { toolPath } from '../control-plane/tools';
import { repoVersion } from '../images/images';
import { startLocalRegistry, type LocalRegistry } from '../release/local-registry';
import { release, releaseReport, type Release } from '../release/release';
import { runCommand } from '../system/run-command';
import { eventually } from '../testing/eventually';
import { NODE_NAMESPACE } from './installed-values';

/**
 * sandbox-scale as a user installs it: a control plane with a real node; a release (npm run
 * release) pushed to an OCI registry on this machine, which the node's containerd pulls from (no
 * image is preloaded); `helm install oci://…` of the chart that release pushed, with its defaults
 * (the images by digest) plus the suites' values; and sandboxd-sim, from the same release, as a
 * DaemonSet on the node's host network standing in for sandboxd. The node is provisioned as a
 * platform provisions one for per-node tokens (the chart's default): its own sandboxd root token
 * in a file on the node, which its sandboxd and its publisher read.
 */

export const INSTALLED_NAMESPACE = 'sandbox-system';
export const INSTALLED_RELEASE = 'sandbox-scale';
/** The chart's default `inventoryPublisher.sandboxdUrl` port on the node address. */
export const SANDBOXD_PORT = 7777;

export interface InstalledFigures {
  controlPlaneMs: number;
  /** The release: every image built and pushed, the chart packaged and pushed. */
  imagesMs: number;
  /** From `helm install` to every pod Ready and the APIService Available. */
  installToReadyMs: number;
}

export interface InstalledSystem {
  cp: ControlPlane;
  kubeconfigPath: string;
  fleetToken: string;
  /** The simulated sandboxd of the node, as the node's pods reach it. */
  sandboxdUrl: string;
  /** The node's name and its own sandboxd root token (derived from the fleet token and that name). */
  nodeName: string;
  sandboxdToken: string;
  figures: InstalledFigures;
  /** What the release the chart was installed from printed. */
  release: Release;
  kubectl(args: string[], input?: string): Promise<string>;
  stop(): Promise<void>;
}

export class InstallError extends Error {
  override readonly name = 'InstallError';
}
export const isInstallError = (e: unknown): e is InstallError => e instanceof InstallError;

/**
 * The uids sandboxd-sim hands its sandboxes, one each: none of them may read the node's token
 * (65532's, mode 0400) or anything of the simulator's.
 */
export const GUEST_UIDS = { first: 200_000, last: 299_999 };

/**
 * sandboxd-sim on every node, listening on the node address as sandboxd would, with the node's own
 * token from the node. It runs as root with only the capabilities it needs to start each sandbox's
 * commands as a uid of its own and give it its files (SETUID, SETGID, CHOWN, FOWNER), read and
 * remove those files (DAC_OVERRIDE) and signal those commands (KILL); the guests hold none of them.
 */
function sandboxdSimDaemonSet(image: string, speed: number, tokenPath: string): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'sandboxd-sim', namespace: NODE_NAMESPACE, labels: { 'app.kubernetes.io/name': 'sandboxd-sim' } },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': 'sandboxd-sim' } },
      template: {
        metadata: { labels: { 'app.kubernetes.io/name': 'sandboxd-sim' } },
        spec: {
          hostNetwork: true,
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: false, runAsUser: 0, runAsGroup: 0, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'sandboxd-sim',
              image,
              imagePullPolicy: 'IfNotPresent',
              args: [
                '--nodes=1',
                `--base-port=${SANDBOXD_PORT}`,
                '--host=$(NODE_IP)',
                `--speed=${speed}`,
                '--name-prefix=$(NODE_NAME)-',
                '--token-file=/var/run/sandboxd/api-token',
                '--data-plane=on',
                // the root filesystem is read-only: sandbox roots live on the pod's emptyDir
                '--data-dir=/var/lib/sandboxd-sim',
                `--guest-uids=${GUEST_UIDS.first}-${GUEST_UIDS.last}`,
                // the pod's /dev/shm is the one directory every guest could write otherwise (the root filesystem is read-only)
                '--guest-closed-dirs=/dev/shm',
              ],
              env: [
                { name: 'NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
                { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              ],
              volumeMounts: [
                { name: 'api-token', mountPath: '/var/run/sandboxd/api-token', readOnly: true },
                { name: 'data', mountPath: '/var/lib/sandboxd-sim' },
              ],
              readinessProbe: { tcpSocket: { port: SANDBOXD_PORT }, periodSeconds: 1 },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'], add: ['SETUID', 'SETGID', 'CHOWN', 'FOWNER', 'DAC_OVERRIDE', 'KILL'] },
              },
            },
          ],
          volumes: [
            { name: 'api-token', hostPath: { path: tokenPath, type: 'File' } },
            { name: 'data', emptyDir: {} },
          ],
        },
      },
    },
  };
}

/** A namespace whose Pod Security admission enforces `level`, and warns and audits at it too. */
function podSecurityNamespace(name: string, level: 'restricted' | 'privileged'): object {
  const labels = Object.fromEntries(
    ['enforce', 'warn', 'audit'].flatMap((mode) => [
      [`pod-security.kubernetes.io/${mode}`, level],
      [`pod-security.kubernetes.io/${mode}-version`, 'latest'],
    ]),
  );
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

interface PodList {
  items: {
    metadata: { name: string };
    status?: { phase?: string; conditions?: { type: string; status: string }[]; containerStatuses?: unknown[] };
  }[];
}

/** The version the installed run releases as: the repository's, marked as this run's. */
const INSTALLED_VERSION = `${repoVersion()}-installed`;

export interface InstallOptions {
  log?: (msg: string) => void;
  /** sandboxd-sim latency multiplier (0 = instant). */
  speed?: number;
  /** Extra `helm install` arguments (the suite's own, e.g. a shorter publish interval). */
  helmArgs?: string[];
  /** Extra kube-apiserver flags (e.g. an audit log). */
  apiserverArgs?: string[];
}

export async function startInstalledSystem(opts: InstallOptions = {}): Promise<InstalledSystem> {
  const log = opts.log ?? (() => undefined);
  const t0 = Date.now();
  const cp = await startControlPlane({ node: true, log, apiserverArgs: opts.apiserverArgs });
  const node = cp.node;
  const work = mkdtempSync(join(tmpdir(), 'sandbox-scale-installed-'));
  let registry: LocalRegistry | undefined;
  const stop = async (): Promise<void> => {
    await keepPodLogs(cp);
    await cp.stop();
    await registry?.stop();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    if (!node) throw new InstallError('the control plane started without its node');
    const controlPlaneMs = Date.now() - t0;
    const env = { KUBECONFIG: cp.kubeconfigPath };
    const kubectl = (args: string[], input?: string): Promise<string> => runCommand(toolPath(cp.binDir, 'kubectl'), args, env, input);
    const helm = (args: string[]): Promise<string> => runCommand(toolPath(cp.binDir, 'helm'), args, env);

    const t1 = Date.now();
    registry = await startLocalRegistry(cp.binDir);
    node.pullFrom(registry.host);
    const released = await release({ registry: registry.host, version: INSTALLED_VERSION, plainHttp: true, log, binDir: cp.binDir });
    const imagesMs = Date.now() - t1;
    log(`released to ${registry.host} in ${imagesMs} ms:\n${releaseReport(released)}`);
    const sim = released.images.find((i) => i.app === 'sandboxd-sim');
    if (sim === undefined) throw new InstallError('the release pushed no sandboxd-sim image');

    const fleetToken = randomBytes(24).toString('hex');
    const tokenFile = join(work, 'fleet-token');
    writeFileSync(tokenFile, fleetToken, { mode: 0o600 });
    // as a platform team sets them up: the control plane under Pod Security "restricted", the
    // node side (the publisher's hostPath mount of the node's token, sandboxd) at "privileged"
    for (const [name, level] of [
      [INSTALLED_NAMESPACE, 'restricted'],
      [NODE_NAMESPACE, 'privileged'],
    ] as const)
      await kubectl(['apply', '-f', '-'], JSON.stringify(podSecurityNamespace(name, level)));
    await kubectl([
      '-n',
      INSTALLED_NAMESPACE,
      'create',
      'secret',
      'generic',
      'sandbox-scale-fleet-token',
      `--from-file=token=${tokenFile}`,
    ]);
    // the node's provisioning: its own root token, readable by the pods' user (65532) only
    const sandboxdToken = nodeToken(fleetToken, node.name);
    const nodeTokenPath = join(work, 'sandboxd-api-token');
    writeFileSync(nodeTokenPath, sandboxdToken, { mode: 0o400 });
    chownSync(nodeTokenPath, 65532, 65532);
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify(sandboxdSimDaemonSet(`${registry.host}/sandbox-scale/sandboxd-sim@${sim.digest}`, opts.speed ?? 0.02, nodeTokenPath)),
    );

    const t2 = Date.now();
    log(`helm install ${released.chart.ref} --version ${released.chart.version}`);
    await helm([
      'install',
      INSTALLED_RELEASE,
      released.chart.ref,
      '--version',
      released.chart.version,
      '--plain-http',
      '-n',
      INSTALLED_NAMESPACE,
      '--set',
      `inventoryPublisher.sandboxdTokenPath=${nodeTokenPath}`,
      ...(opts.helmArgs ?? []),
    ]);
    await waitInstalled(kubectl);
    const installToReadyMs = Date.now() - t2;
    log(`every pod Ready and the APIService Available ${installToReadyMs} ms after helm install`);
    return {
      cp,
      kubeconfigPath: cp.kubeconfigPath,
      fleetToken,
      sandboxdUrl: `http://${node.hostIp}:${SANDBOXD_PORT}`,
      nodeName: node.name,
      sandboxdToken,
      figures: { controlPlaneMs, imagesMs, installToReadyMs },
      release: released,
      kubectl,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** SANDBOX_SCALE_KEEP_LOGS=<dir>: every container's log (current and previous) beside the components' logs. */
async function keepPodLogs(cp: ControlPlane): Promise<void> {
  const keep = process.env.SANDBOX_SCALE_KEEP_LOGS;
  if (!keep) return;
  const to = join(keep, `${cp.dir.split('/').pop() as string}-pods`);
  mkdirSync(to, { recursive: true });
  const kubectl = (args: string[]): Promise<string> => runCommand(toolPath(cp.binDir, 'kubectl'), args, { KUBECONFIG: cp.kubeconfigPath });
  try {
    const pods = JSON.parse(await kubectl(['get', 'pods', '-A', '-o', 'json'])) as {
      items: { metadata: { name: string; namespace: string } }[];
    };
    for (const { metadata: m } of pods.items) {
      for (const previous of [false, true]) {
        const text = await kubectl(['-n', m.namespace, 'logs', m.name, '--all-containers', ...(previous ? ['--previous'] : [])]).catch(
          () => '',
        );
        if (text) writeFileSync(join(to, `${m.namespace}_${m.name}${previous ? '.previous' : ''}.log`), text);
      }
    }
  } catch {
    /* the control plane is gone: nothing to keep */
  }
}

/** The namespaces the installed run puts pods in: the control plane's, then the node side's. */
export const INSTALLED_NAMESPACES = [INSTALLED_NAMESPACE, NODE_NAMESPACE] as const;

/** Every pod of the installed run's namespaces, as `kubectl get pods -o json` lists them. */
export async function installedPods<P>(kubectl: (args: string[]) => Promise<string>): Promise<P[]> {
  const out: P[] = [];
  for (const ns of INSTALLED_NAMESPACES)
    out.push(...(JSON.parse(await kubectl(['-n', ns, 'get', 'pods', '-o', 'json'])) as { items: P[] }).items);
  return out;
}

/** Every pod of both namespaces Ready and the APIService Available (kube-apiserver reached it through the Service). */
export async function waitInstalled(kubectl: (args: string[]) => Promise<string>, timeoutMs = 300_000): Promise<void> {
  await eventually(
    async () => {
      const pods: PodList = { items: await installedPods<PodList['items'][number]>(kubectl) };
      const notReady = pods.items.filter((p) => !p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      if (pods.items.length === 0 || notReady.length) {
        throw new InstallError(
          `pods not Ready: ${notReady.map((p) => `${p.metadata.name} ${JSON.stringify(p.status?.containerStatuses ?? p.status?.phase)}`).join('; ')}`,
        );
      }
      const api = JSON.parse(await kubectl(['get', 'apiservice', 'v1beta1.agents.x-k8s.io', '-o', 'json'])) as {
        status?: { conditions?: { type: string; status: string; message?: string }[] };
      };
      const available = api.status?.conditions?.find((c) => c.type === 'Available');
      if (available?.status !== 'True') throw new InstallError(`APIService not Available: ${available?.message ?? 'no condition'}`);
    },
    { timeoutMs, intervalMs: 1000 },
  );
}
