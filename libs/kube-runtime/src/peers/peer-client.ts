import { Agent } from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import {
  findInCauseChain,
  isPrototypeKeyError,
  parseUntrustedJson,
  SandboxScaleError,
  StatusError,
  STATUS_REASON_CODES,
  type StatusDetails,
  type StatusReason,
} from '@sandbox-scale/scale-core';
import { kubeAuthorization } from '../client/kube-transport';
import { postJson } from '../http/post-json';

/** A peer that could not be reached, or answered with something that is not a reply. */
export class PeerUnreachableError extends SandboxScaleError {}

export function isPeerUnreachable(err: unknown): boolean {
  return findInCauseChain(err, 'PeerUnreachableError') !== undefined;
}

/** A peer's answer to a call: the object it produced. */
export const PeerReplySchema = z.object({ object: z.record(z.string(), z.unknown()) });

const StatusBodySchema = z.looseObject({
  kind: z.literal('Status'),
  reason: z.string().optional(),
  message: z.string().optional(),
  details: z.looseObject({}).optional(),
});

/** The Status a peer answered, as the same StatusError (a 409 stays a 409 for the end user). */
export function statusErrorOfReply(code: number, body: unknown): StatusError | undefined {
  const s = StatusBodySchema.safeParse(body);
  if (!s.success) return undefined;
  const reason =
    s.data.reason !== undefined && Object.hasOwn(STATUS_REASON_CODES, s.data.reason) ? (s.data.reason as StatusReason) : undefined;
  if (reason === undefined || STATUS_REASON_CODES[reason] !== code) return undefined;
  return new StatusError(reason, s.data.message ?? '', (s.data.details ?? {}) as StatusDetails);
}

export interface PeerClientOptions {
  readonly kubeConfig: KubeConfig;
  /** The CA the replicas' serving certificate chains to: a peer must prove it holds that cert. */
  readonly caPem: string;
  /** The name every replica's certificate carries: `<service>.<namespace>.svc`. */
  readonly serverName: string;
  /** The one path the replicas call each other on (never proxied by kube-apiserver). */
  readonly path: string;
  readonly timeoutMs?: number;
}

const MAX_REPLY_BYTES = 4 * 1024 * 1024;

/**
 * Calls another replica's peer endpoint. The request carries this replica's own ServiceAccount
 * credentials (the receiver checks them by TokenReview against its own identity: PeerIdentity),
 * and goes only to a server whose certificate is the replicas' serving certificate, so the token
 * is never handed to whatever address an EndpointSlice happens to list. `Call` is the app's own
 * schema of what one replica may ask another.
 */
export class PeerClient<Call = unknown> {
  #agent: Agent;
  readonly #timeoutMs: number;

  constructor(private readonly o: PeerClientOptions) {
    this.#agent = this.#agentFor(o.caPem);
    // longer than a create may take on the owner (claim, then asking the node about a lost reply)
    this.#timeoutMs = o.timeoutMs ?? 50_000;
  }

  /**
   * Trusts this CA bundle from now on (a CA rotation: both CAs while it overlaps). New calls open
   * connections checked against it; calls under way finish on the connections they have.
   */
  trust(caPem: string): void {
    this.#agent = this.#agentFor(caPem);
  }

  #agentFor(caPem: string): Agent {
    return new Agent({
      keepAlive: true,
      maxSockets: 64,
      ca: caPem,
      servername: this.o.serverName,
      checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(this.o.serverName, cert),
    });
  }

  /** `maxReplyBytes`: the largest reply taken (default 4 MiB; a page of a list may be larger). */
  async call(peer: string, body: Call, opts: { maxReplyBytes?: number } = {}): Promise<Record<string, unknown>> {
    const authorization = await this.#authorization();
    const reply = await postJson(`https://${peer}${this.o.path}`, body, {
      agent: this.#agent,
      authorization,
      timeoutMs: this.#timeoutMs,
      maxReplyBytes: opts.maxReplyBytes ?? MAX_REPLY_BYTES,
      peer: `peer ${peer}`,
      fail: ({ message, cause }) => new PeerUnreachableError(message, { cause }),
    });
    let parsed: unknown;
    try {
      parsed = parseUntrustedJson(reply.text);
    } catch (err) {
      const what = isPrototypeKeyError(err) ? `a key naming a prototype (${err.field})` : 'a body that is not JSON';
      throw new PeerUnreachableError(`peer ${peer} answered ${reply.code} with ${what}`, { cause: err });
    }
    if (reply.code === 200) {
      const ok = PeerReplySchema.safeParse(parsed);
      if (ok.success) return ok.data.object;
    }
    const status = statusErrorOfReply(reply.code, parsed);
    if (status !== undefined && reply.code !== 401 && reply.code !== 403) throw status;
    // a peer that refuses our identity is a misconfiguration, not the end user's problem
    throw new PeerUnreachableError(`peer ${peer} answered ${reply.code}: ${status?.message ?? 'not a reply'}`);
  }

  close(): void {
    this.#agent.destroy();
  }

  /** This replica's own credentials, as its API calls carry them (a token file is reread as it rotates). */
  async #authorization(): Promise<string> {
    const value = await kubeAuthorization(this.o.kubeConfig);
    if (!value.startsWith('Bearer '))
      throw new PeerUnreachableError('this replica has no bearer token to authenticate to its peers (run it under a ServiceAccount)');
    return value;
  }
}
