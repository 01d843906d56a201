import { Agent, request } from 'node:https';
import { applyWarmPool, waitPoolReady } from '../system/suite-system';
import type { SystemUnderTest } from '../system/system-under-test';
import { eventually } from './eventually';
import { sandboxManifest } from './sandbox-manifests';

/**
 * The end user's view of sandbox-apiserver replicas, each called at its own address rather than
 * through kube-apiserver: the Sandboxes of one namespace, a request to one replica, a create as a
 * client makes it, and a warm pool that every replica serves. Works with any
 * SystemUnderTest (or a LocalSystem): what differs is passed in.
 */

/** A body as the suites read it; a reply that does not parse is kept as its message. */
export interface ReplicaBody {
  message?: string;
}

export interface ReplicaReply<B extends ReplicaBody> {
  code: number;
  body: B;
}

export interface ReplicaClientOptions {
  namespace: string;
  /** The image of the Sandboxes it creates. */
  image: string;
  /** Read at each request: the suites make them in beforeAll. */
  agent: () => Agent;
  token: () => string;
  /** The TLS servername a replica's URL is checked against (SystemUnderTest.servernameOf). */
  servernameOf?: (url: string) => string | undefined;
}

export interface ReplicaClient<B extends ReplicaBody> {
  readonly namespace: string;
  /** The Sandboxes collection of the namespace. */
  readonly sandboxes: string;
  /** A Sandbox manifest of that name. */
  sandbox(name: string): Record<string, unknown>;
  /** One request to one replica, as the end user unless other headers are given. */
  call(base: string, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ReplicaReply<B>>;
  /**
   * A create as a client makes it: a 503 for warm capacity (the pool refills within seconds, and
   * the Status says to retry after a second) is retried after its Retry-After, for up to a minute.
   * Any other answer is final: the replica behaviour under test is never retried away.
   */
  create(base: string, name: string): Promise<ReplicaReply<B>>;
}

export function replicaClient<B extends ReplicaBody>(opts: ReplicaClientOptions): ReplicaClient<B> {
  const sandboxes = `/apis/agents.x-k8s.io/v1beta1/namespaces/${opts.namespace}/sandboxes`;
  const sandbox = (name: string): Record<string, unknown> => sandboxManifest(name, opts.image);

  function call(base: string, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ReplicaReply<B>> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        `${base}${path}`,
        {
          method,
          agent: opts.agent(),
          servername: opts.servernameOf?.(base),
          headers: {
            ...(headers ?? { Authorization: `Bearer ${opts.token()}` }),
            Accept: 'application/json',
            ...(text ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            try {
              resolve({ code: res.statusCode ?? 0, body: raw ? (JSON.parse(raw) as B) : ({} as B) });
            } catch {
              resolve({ code: res.statusCode ?? 0, body: { message: raw } as B });
            }
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(text);
    });
  }

  async function create(base: string, name: string): Promise<ReplicaReply<B>> {
    let last: ReplicaReply<B> | undefined;
    try {
      return await eventually(
        async () => {
          last = await call(base, 'POST', sandboxes, sandbox(name));
          if (last.code === 503 && /no warm capacity/.test(last.body.message ?? '')) throw new Error(`${name}: no warm capacity yet`);
          return last;
        },
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
    } catch {
      // still no capacity after a minute: the 503 itself is the answer under test
      return last as ReplicaReply<B>;
    }
  }

  return { namespace: opts.namespace, sandboxes, sandbox, call, create };
}

/**
 * Creates the warm pool of `image`, then waits until it reports all its replicas ready and every
 * replica URL serves the Sandboxes list (200).
 */
export async function serveWarmPool<B extends ReplicaBody>(
  sys: Pick<SystemUnderTest, 'kubeConfig' | 'apiserverUrls'>,
  client: Pick<ReplicaClient<B>, 'namespace' | 'sandboxes' | 'call'>,
  pool: { name: string; image: string; replicas: number },
  timeoutMs: number,
): Promise<void> {
  await applyWarmPool(sys, client.namespace, pool);
  await waitPoolReady(sys, client.namespace, pool.replicas, { name: pool.name, timeoutMs });
  // every replica serves, and each sees the pool's warm capacity
  await eventually(
    async () => {
      for (const url of sys.apiserverUrls) {
        const list = await client.call(url, 'GET', client.sandboxes);
        if (list.code !== 200) throw new Error(`${url} answers ${list.code}`);
      }
    },
    { timeoutMs, intervalMs: 500 },
  );
}
