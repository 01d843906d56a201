import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { startControlPlane, type ControlPlane } from '../control-plane/control-plane';
import { toolPath, toolsDir } from '../control-plane/tools';
import { startLocalRegistry, type LocalRegistry } from '../release/local-registry';
import { runCommand } from '../system/run-command';

/**
 * Where the installed run installs the chart: a cluster with one node, an OCI registry its node
 * pulls from, and what the suites need beyond the API (the cluster CA to make users, the
 * front-proxy client to call sandbox-apiserver as kube-apiserver does, the audit log). Either a
 * control plane and node started on this machine (the default), or a cluster that already runs
 * (SANDBOX_SCALE_INSTALLED_CLUSTER: e2e/kind/run.sh's kind cluster).
 */
export interface InstallTarget {
  kubeconfigPath: string;
  /** Where kubectl and helm are. */
  binDir: string;
  /** The run's own directory (kept pod logs are named after it). */
  dir: string;
  clusterCa: PemPair;
  frontProxyClient: PemPair;
  /** HOST[:PORT] the release is pushed to and the node pulls from, over plain HTTP. */
  registry: string;
  auditLogPath?: string;
  node: { name: string; hostIp: string };
  /**
   * Puts the node's own sandboxd token on the node, as its provisioning would: readable by the
   * pods' user (65532) only. Returns its path on the node (the chart's `sandboxdTokenPath`).
   */
  provisionNodeToken(token: string): Promise<string>;
  /** Time to a control plane with a Ready node (0 for a cluster that already ran). */
  startMs: number;
  stop(): Promise<void>;
}

export interface PemPair {
  cert: string;
  key: string;
}

export class InstallTargetError extends Error {
  override readonly name = 'InstallTargetError';
}
export const isInstallTargetError = (e: unknown): e is InstallTargetError => e instanceof InstallTargetError;

/** A control plane with a real node on this machine, and a registry on loopback its containerd pulls from. */
export async function startLocalInstallTarget(opts: { log: (m: string) => void; apiserverArgs?: string[] }): Promise<InstallTarget> {
  const t0 = Date.now();
  const cp: ControlPlane = await startControlPlane({ node: true, log: opts.log, apiserverArgs: opts.apiserverArgs });
  const work = mkdtempSync(join(tmpdir(), 'sandbox-scale-installed-'));
  let registry: LocalRegistry | undefined;
  const stop = async (): Promise<void> => {
    await cp.stop();
    await registry?.stop();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    const node = cp.node;
    if (!node) throw new InstallTargetError('the control plane started without its node');
    const startMs = Date.now() - t0;
    registry = await startLocalRegistry(cp.binDir);
    node.pullFrom(registry.host);
    return {
      kubeconfigPath: cp.kubeconfigPath,
      binDir: cp.binDir,
      dir: cp.dir,
      clusterCa: { cert: readFileSync(cp.files.caCert, 'utf8'), key: readFileSync(cp.files.caKey, 'utf8') },
      frontProxyClient: {
        cert: readFileSync(join(cp.dir, 'front-proxy-client.crt'), 'utf8'),
        key: readFileSync(join(cp.dir, 'front-proxy-client.key'), 'utf8'),
      },
      registry: registry.host,
      node: { name: node.name, hostIp: node.hostIp },
      async provisionNodeToken(token) {
        // the node is this machine: a file only 65532 reads
        const path = join(work, 'sandboxd-api-token');
        writeFileSync(path, token, { mode: 0o400 });
        chownSync(path, 65532, 65532);
        return path;
      },
      startMs,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The file e2e/kind/run.sh writes to point the installed run at its cluster. */
export const EXISTING_CLUSTER_ENV = 'SANDBOX_SCALE_INSTALLED_CLUSTER';

export const ExistingClusterSchema = z
  .object({
    /** An admin kubeconfig. */
    kubeconfig: z.string().min(1),
    /** A directory with the cluster's ca.crt, ca.key, front-proxy-client.crt and front-proxy-client.key (kubeadm's pki). */
    pki: z.string().min(1),
    /** HOST[:PORT] of a plain-HTTP registry this machine pushes to and the node pulls the same names from. */
    registry: z.string().min(1),
    /** The command that runs a command on a node, the node's name appended (`docker exec -i` for kind). */
    nodeExec: z.array(z.string().min(1)).min(1),
    /** kube-apiserver's audit log as this machine reads it (policy from e2e/src/installed/audit-policy.ts). */
    auditLog: z.string().min(1).optional(),
  })
  .strict();
export type ExistingCluster = z.infer<typeof ExistingClusterSchema>;

export function readExistingCluster(path: string): ExistingCluster {
  const parsed = ExistingClusterSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) throw new InstallTargetError(`${EXISTING_CLUSTER_ENV}=${path}: ${parsed.error.message}`);
  return parsed.data;
}

/** Where the node keeps its own sandboxd token (the chart's `inventoryPublisher.sandboxdTokenPath`). */
const NODE_TOKEN_PATH = '/var/lib/sandbox-scale/sandboxd-api-token';

interface NodeList {
  items: {
    metadata: { name: string };
    status?: { addresses?: { type: string; address: string }[] };
  }[];
}

/**
 * A cluster that already runs, with exactly one node (the installed suites drive one node's
 * sandboxd). What the run installs there it removes first and at the end (`cleanup`), so a run
 * interrupted earlier does not stop the next.
 */
export async function connectExistingCluster(
  c: ExistingCluster,
  cleanup: (kubectl: (args: string[]) => Promise<string>, helm: (args: string[]) => Promise<string>) => Promise<void>,
): Promise<InstallTarget> {
  const binDir = toolsDir();
  const env = { KUBECONFIG: c.kubeconfig };
  const kubectl = (args: string[]): Promise<string> => runCommand(toolPath(binDir, 'kubectl'), args, env);
  const helm = (args: string[]): Promise<string> => runCommand(toolPath(binDir, 'helm'), args, env);
  const nodes = (JSON.parse(await kubectl(['get', 'nodes', '-o', 'json'])) as NodeList).items;
  const node = nodes[0];
  if (nodes.length !== 1 || node === undefined)
    throw new InstallTargetError(`the installed suites drive one node; ${c.kubeconfig} names a cluster of ${nodes.length}`);
  const hostIp = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
  if (hostIp === undefined) throw new InstallTargetError(`node ${node.metadata.name} has no InternalIP`);
  const pem = (file: string): string => readFileSync(join(c.pki, file), 'utf8');
  await cleanup(kubectl, helm);
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-scale-installed-'));
  const [exec, ...execArgs] = c.nodeExec as [string, ...string[]];
  return {
    kubeconfigPath: c.kubeconfig,
    binDir,
    dir,
    clusterCa: { cert: pem('ca.crt'), key: pem('ca.key') },
    frontProxyClient: { cert: pem('front-proxy-client.crt'), key: pem('front-proxy-client.key') },
    registry: c.registry,
    auditLogPath: c.auditLog,
    node: { name: node.metadata.name, hostIp },
    async provisionNodeToken(token) {
      const parent = NODE_TOKEN_PATH.slice(0, NODE_TOKEN_PATH.lastIndexOf('/'));
      const script = `mkdir -p -m 0755 ${parent} && (umask 077 && cat > ${NODE_TOKEN_PATH} && chown 65532:65532 ${NODE_TOKEN_PATH} && chmod 0400 ${NODE_TOKEN_PATH})`;
      await runCommand(exec, [...execArgs, node.metadata.name, 'sh', '-c', script], {}, token);
      return NODE_TOKEN_PATH;
    },
    startMs: 0,
    async stop() {
      await cleanup(kubectl, helm);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
