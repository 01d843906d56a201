import { KubeConfig } from '@kubernetes/client-node';
import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';

export class KubeConfigError extends SandboxScaleError {}

export function isKubeConfigError(err: unknown): boolean {
  return findInCauseChain(err, 'KubeConfigError') !== undefined;
}

/**
 * The kubeconfig every app uses: the file given by --kubeconfig, else $KUBECONFIG (first
 * entry), else the in-cluster service account. No fallback to ~/.kube/config or localhost:
 * a controller silently talking to the wrong cluster is worse than one that refuses to start.
 */
export function loadKubeConfig(path?: string, env: Record<string, string | undefined> = process.env): KubeConfig {
  const kc = new KubeConfig();
  const file = path || env.KUBECONFIG?.split(':').find((p) => p.length > 0);
  try {
    if (file) {
      kc.loadFromFile(file);
    } else {
      if (!env.KUBERNETES_SERVICE_HOST) {
        throw new KubeConfigError('no --kubeconfig, no $KUBECONFIG and not running in a cluster (KUBERNETES_SERVICE_HOST unset)');
      }
      kc.loadFromCluster();
    }
  } catch (err) {
    if (err instanceof KubeConfigError) throw err;
    throw new KubeConfigError(`cannot load kubeconfig ${file ?? '(in-cluster)'}: ${(err as Error).message}`, { cause: err });
  }
  if (!kc.getCurrentCluster()) throw new KubeConfigError(`kubeconfig ${file ?? '(in-cluster)'} has no current cluster`);
  return kc;
}
