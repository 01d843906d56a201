import { KubeConfig } from '@kubernetes/client-node';
import { KubeConfigError } from '@sandbox-scale/kube-runtime';

export interface ContextOptions {
  /** A kubeconfig file; default: $KUBECONFIG (merged, as kubectl does), else ~/.kube/config, else in-cluster. */
  kubeconfig?: string;
  /** A context of the kubeconfig other than its current one. */
  context?: string;
}

/**
 * The kubeconfig a user's tool should use, the way kubectl picks it. Unlike the apps'
 * loadKubeConfig (which refuses to guess, so a controller never talks to the wrong cluster),
 * a client follows the user's current context: that is what `kubectl sandbox` promises.
 */
export function userKubeConfig(o: ContextOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (o.kubeconfig) kc.loadFromFile(o.kubeconfig);
    else kc.loadFromDefault();
    if (o.context) kc.setCurrentContext(o.context);
  } catch (err) {
    throw new KubeConfigError(`cannot load kubeconfig ${o.kubeconfig ?? '(default)'}: ${(err as Error).message}`, { cause: err });
  }
  if (o.context && !kc.getContextObject(o.context)) throw new KubeConfigError(`context "${o.context}" is not in the kubeconfig`);
  if (!kc.getCurrentCluster()) throw new KubeConfigError('the kubeconfig has no current cluster (is a context selected?)');
  return kc;
}

/** The namespace of the current context, else `default` (kubectl's rule). */
export function contextNamespace(kc: KubeConfig): string {
  const ctx = kc.getContextObject(kc.getCurrentContext());
  return ctx?.namespace || 'default';
}
