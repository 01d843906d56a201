import { Agent } from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  APIServiceResource,
  createInformer,
  kubeAuthorization,
  postJson,
  type Informer,
  type KubeResource,
  type Logger,
} from '@sandbox-scale/kube-runtime';
import {
  findInCauseChain,
  NODE_NOTICE_PATH,
  type NodeNotice,
  type NoticeOutcome,
  parseObject,
  parseUntrustedJson,
  SandboxScaleError,
} from '@sandbox-scale/scale-core';
import { z } from 'zod';
import type { NoticeSender } from './node-notifier';

/** A replica refused a notice or could not be reached; the message never holds a credential. */
export class NoticeRefusedError extends SandboxScaleError {
  constructor(
    message: string,
    readonly code: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isNoticeRefused(err: unknown): boolean {
  return findInCauseChain(err, 'NoticeRefusedError') !== undefined;
}

const ENDPOINT_SLICES: KubeResource = {
  group: 'discovery.k8s.io',
  version: 'v1',
  plural: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};

const SliceSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({ name: z.string().optional(), namespace: z.string().optional(), resourceVersion: z.string().optional() }),
  endpoints: z
    .array(z.looseObject({ addresses: z.array(z.string()), conditions: z.looseObject({ ready: z.boolean().nullish() }).nullish() }))
    .nullish(),
  ports: z.array(z.looseObject({ name: z.string().nullish(), port: z.number().int().nullish() })).nullish(),
});
type Slice = z.infer<typeof SliceSchema>;

const ApiServiceSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({ name: z.string().optional(), resourceVersion: z.string().optional() }),
  spec: z.looseObject({ caBundle: z.string().nullish() }).nullish(),
});
type ApiService = z.infer<typeof ApiServiceSchema>;

/** The PEM of an APIService's caBundle (base64 in the object); '' when it holds none. */
export function caPemOfApiService(apiService: ApiService): string {
  const bundle = apiService.spec?.caBundle ?? '';
  const pem = Buffer.from(bundle, 'base64').toString('utf8');
  return pem.includes('-----BEGIN CERTIFICATE-----') ? pem : '';
}

/** The ready replicas one slice lists, as host:port on its `https` port (or its only port). */
export function replicasOfSlice(slice: Slice): string[] {
  const ports = slice.ports ?? [];
  const port = (ports.find((p) => p.name === 'https') ?? (ports.length === 1 ? ports[0] : undefined))?.port;
  if (port === undefined || port === null) return [];
  // a nil ready condition means ready (discovery.k8s.io/v1 EndpointConditions)
  return (slice.endpoints ?? [])
    .filter((ep) => ep.conditions?.ready !== false)
    .flatMap((ep) => ep.addresses.map((a) => (a.includes(':') ? `[${a}]:${port}` : `${a}:${port}`)));
}

export interface NoticeClientOptions {
  kubeConfig: KubeConfig;
  /** The sandbox-apiserver Service whose EndpointSlices list the replicas. */
  service: { namespace: string; name: string };
  /** The CA the replicas' serving certificate chains to, when known at start. */
  caPem?: string;
  /**
   * The APIService whose caBundle is that CA (a publisher in a namespace of its own cannot mount
   * the serving Secret): watched by name, so every CA rotation's bundle is trusted as it lands.
   */
  caApiService?: string;
  log: Logger;
  timeoutMs?: number;
}

const MAX_REPLY_BYTES = 64 * 1024;

/**
 * Sends notices to every ready sandbox-apiserver replica. The request carries this publisher's
 * own ServiceAccount token (bound to its pod, so it names the node), and goes only to a server
 * whose certificate is the replicas' serving certificate (`<service>.<namespace>.svc`), so the
 * token is never handed to whatever address an EndpointSlice happens to list.
 */
export class NoticeClient implements NoticeSender {
  readonly informer: Informer<Slice>;
  /** The APIService informer when the CA comes from one. */
  readonly caInformer: Informer<ApiService> | undefined;
  /** Undefined until a CA is known: no notice (and no token) leaves before. */
  #agent: Agent | undefined;
  readonly #timeoutMs: number;

  constructor(private readonly o: NoticeClientOptions) {
    if (o.caPem !== undefined) this.#agent = this.#agentFor(o.caPem);
    this.#timeoutMs = o.timeoutMs ?? 2_000;
    this.caInformer = o.caApiService === undefined ? undefined : this.#followApiService(o.caApiService);
    this.informer = createInformer<Slice>(o.kubeConfig, {
      resource: ENDPOINT_SLICES,
      namespace: o.service.namespace,
      labelSelector: `kubernetes.io/service-name=${o.service.name}`,
      parse: (obj) => parseObject(SliceSchema, obj),
      log: o.log,
    });
  }

  /** Trusts this CA bundle from now on (a CA rotation); notices under way finish on their connections. */
  trust(caPem: string): void {
    this.#agent = this.#agentFor(caPem);
  }

  #followApiService(name: string): Informer<ApiService> {
    const informer = createInformer<ApiService>(this.o.kubeConfig, {
      resource: APIServiceResource,
      fieldSelector: `metadata.name=${name}`,
      parse: (obj) => parseObject(ApiServiceSchema, obj),
      log: this.o.log,
    });
    let trusted = '';
    const follow = (apiService: ApiService): void => {
      const pem = caPemOfApiService(apiService);
      if (pem === '' || pem === trusted) return;
      trusted = pem;
      this.trust(pem);
      this.o.log.info({ apiService: name }, 'trusting the CA bundle of the APIService for node notices');
    };
    informer.on({ add: follow, update: follow });
    return informer;
  }

  #agentFor(caPem: string): Agent {
    const serverName = `${this.o.service.name}.${this.o.service.namespace}.svc`;
    return new Agent({
      keepAlive: true,
      maxSockets: 4,
      ca: caPem,
      servername: serverName,
      checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(serverName, cert),
    });
  }

  targets(): string[] {
    return [...new Set(this.informer.list(this.o.service.namespace).flatMap(replicasOfSlice))];
  }

  async send(target: string, notice: NodeNotice): Promise<NoticeOutcome> {
    const agent = this.#agent;
    if (agent === undefined)
      throw new NoticeRefusedError(
        `no CA to verify replica ${target} with yet (APIService ${this.o.caApiService ?? ''} has no caBundle)`,
        0,
      );
    const authorization = await kubeAuthorization(this.o.kubeConfig);
    if (!authorization.startsWith('Bearer ')) throw new NoticeRefusedError('no ServiceAccount token to authenticate node notices with', 0);
    const reply = await postJson(`https://${target}${NODE_NOTICE_PATH}`, notice, {
      agent,
      authorization,
      timeoutMs: this.#timeoutMs,
      maxReplyBytes: MAX_REPLY_BYTES,
      peer: `replica ${target}`,
      fail: ({ message, cause }) => new NoticeRefusedError(message, 0, { cause }),
    });
    if (reply.code === 409) return 'conflict';
    const parsed = parseReply(reply.text);
    if (reply.code === 200 && parsed.applied !== undefined) return parsed.applied ? 'applied' : 'ignored';
    throw new NoticeRefusedError(`replica ${target} answered ${reply.code}: ${parsed.message ?? 'not a notice reply'}`, reply.code);
  }

  close(): void {
    this.#agent?.destroy();
  }
}

const ReplySchema = z.object({ applied: z.boolean().optional(), message: z.string().optional() });

function parseReply(text: string): z.infer<typeof ReplySchema> {
  try {
    const r = ReplySchema.safeParse(parseUntrustedJson(text));
    return r.success ? r.data : {};
  } catch {
    return {};
  }
}
