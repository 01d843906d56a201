import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

/** Requests a kubeconfig made, by `METHOD path` (query left out). */
export interface KubeRequestCount {
  readonly kubeConfig: KubeConfig;
  /** Every request since the start or the last reset. */
  total(): number;
  byRoute(): Map<string, number>;
  reset(): void;
}

/**
 * A copy of `kc` that counts every request made with it: typed and raw calls authenticate each
 * request through applySecurityAuthentication, watches through applyToFetchOptions. Counted on
 * the client, so only the holder's requests are seen, never the control plane's own.
 */
export function countingKubeConfig(kc: KubeConfig): KubeRequestCount {
  const routes = new Map<string, number>();
  const count = (method: string, url: string): void => {
    const key = `${method} ${new URL(url).pathname}`;
    routes.set(key, (routes.get(key) ?? 0) + 1);
  };
  class Counting extends KubeConfig {
    override async applySecurityAuthentication(ctx: RequestContext): Promise<void> {
      count(ctx.getHttpMethod(), ctx.getUrl());
      return super.applySecurityAuthentication(ctx);
    }
    override async applyToFetchOptions(
      ...args: Parameters<KubeConfig['applyToFetchOptions']>
    ): ReturnType<KubeConfig['applyToFetchOptions']> {
      count('WATCH', 'https://watch/');
      return super.applyToFetchOptions(...args);
    }
  }
  const out = new Counting();
  out.loadFromString(kc.exportConfig());
  return {
    kubeConfig: out,
    total: () => [...routes.values()].reduce((a, b) => a + b, 0),
    byRoute: () => new Map(routes),
    reset: () => routes.clear(),
  };
}
