import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const TOOLS_SCRIPT = resolve(__dirname, '../../tools/tools.mjs');

/** Directory holding kube-apiserver, kube-controller-manager, etcd, kubectl, helm and helm-docs; builds what is missing. */
export function toolsDir(): string {
  return toolsDirFor('path');
}

/** The same directory, with the node's tools too (kubelet, kube-scheduler, kube-proxy, pause); builds and installs what is missing. */
export function nodeToolsDir(): string {
  return toolsDirFor('node');
}

/** What `node e2e/tools/tools.mjs <set>` prints last: the directory, once the set is built. */
function toolsDirFor(set: string): string {
  const out = execFileSync(process.execPath, [TOOLS_SCRIPT, set], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = out.trim().split('\n');
  return lines[lines.length - 1] as string;
}

/** The same directory, with Prometheus and prometheus-adapter too (the HPA suite's metrics path); builds what is missing. */
export function monitoringToolsDir(): string {
  return toolsDirFor('monitoring');
}

/** The same directory, with the node and agent-sandbox's controller too (bench:upstream); builds what is missing. */
export function upstreamToolsDir(): string {
  return toolsDirFor('upstream');
}

export function toolPath(
  dir: string,
  name:
    | 'kube-apiserver'
    | 'kube-controller-manager'
    | 'etcd'
    | 'kubectl'
    | 'helm'
    | 'helm-docs'
    | 'prometheus'
    | 'promtool'
    | 'prometheus-adapter'
    | 'agent-sandbox-controller',
): string {
  return join(dir, name);
}
