import { Agent } from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { createInformer, kubeAuthorization, postJson, type Informer, type KubeResource, type Logger } from '@sandbox-scale/kube-runtime';
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
  /** The CA the replicas' serving certificate chains to. */
  caPem: string;
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
  #agent: Agent;
  readonly #timeoutMs: number;

  constructor(private readonly o: NoticeClientOptions) {
    this.#agent = this.#agentFor(o.caPem);
    this.#timeoutMs = o.timeoutMs ?? 2_000;
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
    const authorization = await kubeAuthorization(this.o.kubeConfig);
    if (!authorization.startsWith('Bearer ')) throw new NoticeRefusedError('no ServiceAccount token to authenticate node notices with', 0);
    const reply = await postJson(`https://${target}${NODE_NOTICE_PATH}`, notice, {
      agent: this.#agent,
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
    this.#agent.destroy();
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
