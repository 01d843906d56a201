import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const TOOLS_SCRIPT = resolve(__dirname, '../../tools/tools.mjs');

/** Directory holding kube-apiserver, kube-controller-manager, etcd, kubectl, helm and helm-docs; builds what is missing. */
export function toolsDir(): string {
  const out = execFileSync(process.execPath, [TOOLS_SCRIPT, 'path'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = out.trim().split('\n');
  return lines[lines.length - 1] as string;
}

/** The same directory, with the node's tools too (kubelet, kube-scheduler, kube-proxy, pause); builds and installs what is missing. */
export function nodeToolsDir(): string {
  const out = execFileSync(process.execPath, [TOOLS_SCRIPT, 'node'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = out.trim().split('\n');
  return lines[lines.length - 1] as string;
}

/** The same directory, with Prometheus and prometheus-adapter too (the HPA suite's metrics path); builds what is missing. */
export function monitoringToolsDir(): string {
  const out = execFileSync(process.execPath, [TOOLS_SCRIPT, 'monitoring'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = out.trim().split('\n');
  return lines[lines.length - 1] as string;
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
    | 'prometheus-adapter',
): string {
  return join(dir, name);
}
