import { Agent } from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeAuthorization, postJson } from '@sandbox-scale/kube-runtime';
import { findInCauseChain, isPrototypeKeyError, parseUntrustedJson, SandboxScaleError } from '@sandbox-scale/scale-core';
import { PEER_PATH, PeerReplySchema, statusErrorOfReply, type PeerCall } from './peer-protocol';

/** A peer that could not be reached, or answered with something that is not a reply. */
export class PeerUnreachableError extends SandboxScaleError {}

export function isPeerUnreachable(err: unknown): boolean {
  return findInCauseChain(err, 'PeerUnreachableError') !== undefined;
}

export interface PeerClientOptions {
  readonly kubeConfig: KubeConfig;
  /** The CA the replicas' serving certificate chains to: a peer must prove it holds that cert. */
  readonly caPem: string;
  /** The name every replica's certificate carries: `<service>.<namespace>.svc`. */
  readonly serverName: string;
  readonly timeoutMs?: number;
}

const MAX_REPLY_BYTES = 4 * 1024 * 1024;

/**
 * Calls another replica's peer endpoint. The request carries this replica's own ServiceAccount
 * credentials (the receiver checks them by TokenReview against its own identity), and goes only
 * to a server whose certificate is the replicas' serving certificate, so the token is never
 * handed to whatever address an EndpointSlice happens to list.
 */
export class PeerClient {
  readonly #agent: Agent;
  readonly #timeoutMs: number;

  constructor(private readonly o: PeerClientOptions) {
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: 64,
      ca: o.caPem,
      servername: o.serverName,
      checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(o.serverName, cert),
    });
    // longer than a create may take on the owner (claim, then asking the node about a lost reply)
    this.#timeoutMs = o.timeoutMs ?? 50_000;
  }

  /** `maxReplyBytes`: the largest reply taken (default 4 MiB; a page of a list may be larger). */
  async call(peer: string, body: PeerCall, opts: { maxReplyBytes?: number } = {}): Promise<Record<string, unknown>> {
    const authorization = await this.#authorization();
    const reply = await postJson(`https://${peer}${PEER_PATH}`, body, {
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
