import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { closeKubeTransport, kubeTransport } from './kube-transport';

function kubeConfig(user: Parameters<KubeConfig['loadFromOptions']>[0]['users'][number]): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: false }],
    users: [user],
    contexts: [{ name: 'x', cluster: 'c', user: user.name }],
    currentContext: 'x',
  });
  return kc;
}

/** Authenticates `n` requests through the transport; how often client-node itself was asked, and the agents set. */
async function authenticate(
  kc: KubeConfig,
  n: number,
): Promise<{ clientNode: number; agents: Set<unknown>; headers: Record<string, string> }> {
  let clientNode = 0;
  const own = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = (ctx) => {
    clientNode++;
    return own(ctx);
  };
  const agents = new Set<unknown>();
  let headers: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    const ctx = new RequestContext('https://127.0.0.1:1/api', HttpMethod.GET);
    ctx.setHeaderParam('Accept', 'application/json');
    await kubeTransport(kc).auth.applySecurityAuthentication(ctx);
    agents.add(ctx.getAgent());
    headers = ctx.getHeaders();
  }
  return { clientNode, agents, headers };
}

describe('kubeTransport authentication', () => {
  it("reuses client-node's outcome for static credentials: one agent, the same headers, every call counted", async () => {
    const kc = kubeConfig({ name: 'u', token: 'static-token' });
    try {
      const r = await authenticate(kc, 5);
      expect(r.clientNode).toBe(1);
      expect(r.agents.size).toBe(1);
      expect(r.headers).toEqual({ Accept: 'application/json', Authorization: 'Bearer static-token' });
      expect(kubeTransport(kc).stats().api.requests).toBe(5);
    } finally {
      closeKubeTransport(kc);
    }
  });

  it('asks client-node again once the current user is another object', async () => {
    const kc = kubeConfig({ name: 'u', token: 'first' });
    try {
      await authenticate(kc, 2);
      kc.loadFromOptions({
        clusters: kc.clusters,
        users: [{ name: 'u', token: 'second' }],
        contexts: kc.contexts,
        currentContext: 'x',
      });
      const r = await authenticate(kc, 2);
      expect(r.clientNode).toBe(1);
      expect(r.headers.Authorization).toBe('Bearer second');
    } finally {
      closeKubeTransport(kc);
    }
  });

  it('asks a KubeConfig subclass that authenticates its own way on every call', async () => {
    let calls = 0;
    class Custom extends KubeConfig {
      override async applySecurityAuthentication(ctx: RequestContext): Promise<void> {
        calls++;
        return super.applySecurityAuthentication(ctx);
      }
    }
    const kc = new Custom();
    kc.loadFromString(kubeConfig({ name: 'u', token: 'static-token' }).exportConfig());
    try {
      for (let i = 0; i < 3; i++)
        await kubeTransport(kc).auth.applySecurityAuthentication(new RequestContext('https://127.0.0.1:1/api', HttpMethod.GET));
      expect(calls).toBe(3);
    } finally {
      closeKubeTransport(kc);
    }
  });

  it('leaves an exec plugin to client-node on every call (it caches and renews that credential itself)', async () => {
    const kc = kubeConfig({
      name: 'e',
      exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'true', args: [], env: [], interactiveMode: 'Never' },
    });
    let clientNode = 0;
    kc.applySecurityAuthentication = (ctx) => {
      clientNode++;
      ctx.setHeaderParam('Authorization', `Bearer exec-${clientNode}`);
      return Promise.resolve();
    };
    try {
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const ctx = new RequestContext('https://127.0.0.1:1/api', HttpMethod.GET);
        await kubeTransport(kc).auth.applySecurityAuthentication(ctx);
        seen.push(ctx.getHeaders().Authorization ?? '');
      }
      expect(clientNode).toBe(3);
      expect(seen).toEqual(['Bearer exec-1', 'Bearer exec-2', 'Bearer exec-3']);
    } finally {
      closeKubeTransport(kc);
    }
  });
});
