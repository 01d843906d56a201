import { nodeToken } from '@sandbox-scale/sandboxd-client';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toolPath } from '../control-plane/tools';
import { repoVersion } from '../images/images';
import type { InstallTarget } from './install-target';
import { release, releaseReport, type Release } from '../release/release';
import { runCommand } from '../system/run-command';
import { eventually } from '../testing/eventually';
import { NODE_NAMESPACE } from './installed-values';

/**
 * sandbox-scale as a user installs it, on an InstallTarget (a control plane with a real node on
 * this machine, or a kind cluster): a release (npm run release) pushed to an OCI registry the
 * node's containerd pulls from (no image is preloaded); `helm install oci://…` of the chart that release pushed, with its defaults
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
  target: InstallTarget;
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
  /**
   * sandboxd-sim latency multiplier (0 = instant, the default: as most suites' local systems run,
   * so the faults suite's failover measures the failover, not one simulated node's boot rate).
   */
  speed?: number;
  /** Extra `helm install` arguments (the suite's own, e.g. a shorter publish interval). */
  helmArgs?: string[];
}

export async function startInstalledSystem(target: InstallTarget, opts: InstallOptions = {}): Promise<InstalledSystem> {
  const log = opts.log ?? (() => undefined);
  const stop = async (): Promise<void> => {
    await keepPodLogs(target);
    await target.stop();
  };
  try {
    const env = { KUBECONFIG: target.kubeconfigPath };
    const kubectl = (args: string[], input?: string): Promise<string> => runCommand(toolPath(target.binDir, 'kubectl'), args, env, input);
    const helm = (args: string[]): Promise<string> => runCommand(toolPath(target.binDir, 'helm'), args, env);

    const t1 = Date.now();
    const released = await release({ registry: target.registry, version: INSTALLED_VERSION, plainHttp: true, log, binDir: target.binDir });
    const imagesMs = Date.now() - t1;
    log(`released to ${target.registry} in ${imagesMs} ms:\n${releaseReport(released)}`);
    const sim = released.images.find((i) => i.app === 'sandboxd-sim');
    if (sim === undefined) throw new InstallError('the release pushed no sandboxd-sim image');

    const fleetToken = randomBytes(24).toString('hex');
    // as a platform team sets them up: the control plane under Pod Security "restricted", the
    // node side (the publisher's hostPath mount of the node's token, sandboxd) at "privileged"
    for (const [name, level] of [
      [INSTALLED_NAMESPACE, 'restricted'],
      [NODE_NAMESPACE, 'privileged'],
    ] as const)
      await kubectl(['apply', '-f', '-'], JSON.stringify(podSecurityNamespace(name, level)));
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'sandbox-scale-fleet-token', namespace: INSTALLED_NAMESPACE },
        stringData: { token: fleetToken },
      }),
    );
    // the node's provisioning: its own root token, readable by the pods' user (65532) only
    const sandboxdToken = nodeToken(fleetToken, target.node.name);
    const nodeTokenPath = await target.provisionNodeToken(sandboxdToken);
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify(sandboxdSimDaemonSet(`${target.registry}/sandbox-scale/sandboxd-sim@${sim.digest}`, opts.speed ?? 0, nodeTokenPath)),
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
      target,
      fleetToken,
      sandboxdUrl: `http://${target.node.hostIp}:${SANDBOXD_PORT}`,
      nodeName: target.node.name,
      sandboxdToken,
      figures: { controlPlaneMs: target.startMs, imagesMs, installToReadyMs },
      release: released,
      kubectl,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * What a run against a cluster that already runs removes before and after it: the release, its
 * namespaces (the node's sandboxd with them) and what the chart leaves cluster-wide.
 */
export async function removeInstalled(
  kubectl: (args: string[]) => Promise<string>,
  helm: (args: string[]) => Promise<string>,
): Promise<void> {
  await helm(['uninstall', INSTALLED_RELEASE, '-n', INSTALLED_NAMESPACE, '--ignore-not-found', '--wait']);
  await kubectl(['delete', 'namespace', ...INSTALLED_NAMESPACES, '--ignore-not-found', '--wait=true', '--timeout=300s']);
}

/** SANDBOX_SCALE_KEEP_LOGS=<dir>: every container's log (current and previous) beside the components' logs. */
async function keepPodLogs(target: InstallTarget): Promise<void> {
  const keep = process.env.SANDBOX_SCALE_KEEP_LOGS;
  if (!keep) return;
  const to = join(keep, `${target.dir.split('/').pop() as string}-pods`);
  mkdirSync(to, { recursive: true });
  const kubectl = (args: string[]): Promise<string> =>
    runCommand(toolPath(target.binDir, 'kubectl'), args, { KUBECONFIG: target.kubeconfigPath });
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
