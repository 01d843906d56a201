import { EXTENSIONS_GROUP, RESOURCES, StatusError, type PoolKey } from '@sandbox-scale/scale-core';
import { isPeerUnreachable, type Logger, type PeerClient, type PeerSet } from '@sandbox-scale/kube-runtime';
import { AssignmentSchema, type Assignment, type ClaimTarget } from '../gateway/assignment';
import { namespaceNotEnabledMessage, type SecretAccessDecision } from '../record/secret-access';
import { type FastPathPeerCall, type ForwardedClaim } from './fast-path-peers';
import type { FastClaimRequest } from './fast-path-request';

export type FastClaim = FastClaimRequest & { name: string };

/** Outcomes of calls to other replicas, for the peer-calls metric. */
export type PeerCallOutcome = 'ok' | 'refused' | 'unreachable';

export interface FastPathClaimsDeps {
  /** warmPool -> pool key, or a StatusError (the pool or its template is unknown). */
  resolvePool: (namespace: string, warmPool: string) => PoolKey;
  /** Reserves the claim name (false: a claim of it exists or is being delivered); released when nothing is delivered. */
  names: { take(target: ClaimTarget): boolean; release(target: ClaimTarget): void };
  /** The per-namespace cap on live fast-path claims: throws 429 over it, before any VM is claimed. */
  cap?: { admit(target: ClaimTarget): void; release(target: ClaimTarget): void };
  /** Whether the claim's token Secret may be written in the namespace; refused before any VM is claimed. */
  secretAccess?: (namespace: string) => Promise<SecretAccessDecision>;
  /** Delivers and queues the async record (the gateway's fast path); `requestedBy` is written on the record. */
  deliver: (target: ClaimTarget & { key: PoolKey; ttlSeconds: number; warmPool: string; requestedBy: string }) => Promise<Assignment>;
  /**
   * The other replicas serving the fast path, and how to call them; undefined: this replica
   * serves every namespace itself (one replica, or no peers configured).
   */
  peers?: {
    set: PeerSet;
    client: Pick<PeerClient<FastPathPeerCall>, 'call'>;
    /** After the replicas' set changes, how long deliveries also reserve on every other replica. */
    settleMs: number;
    /** Whether the replicas' set has been read: before, no replica knows which namespaces it serves. */
    synced: () => boolean;
    onCall?: (op: FastPathPeerCall['op'], outcome: PeerCallOutcome) => void;
  };
  log: Logger;
}

/**
 * The fast path's claims, one namespace served by one replica. Every replica reads the same
 * EndpointSlices of the fast path's Service, so all pick the same replica for a namespace
 * (rendezvous hashing); a replica asked for a namespace it does not serve hands the claim to the
 * one that does, which alone takes names and counts the cap there: both hold across replicas.
 * While the set of replicas has just changed, a replica may still serve a namespace another now
 * serves (it has not seen the change yet), so for the settle window each delivery first takes
 * its name and a place under the cap on every other replica too.
 */
export class FastPathClaims {
  constructor(private readonly d: FastPathClaimsDeps) {}

  /** A caller's claim (authenticated and authorized): served here, or by the namespace's replica. */
  async claim(username: string, body: FastClaim): Promise<Assignment> {
    const owner = this.#ownerElsewhere(body.namespace);
    if (owner === undefined) return this.serve(username, body);
    const call: ForwardedClaim = {
      op: 'claim',
      username,
      request: { namespace: body.namespace, name: body.name, warmPool: body.warmPool, ttlSeconds: body.ttlSeconds },
    };
    const object = await this.#call(owner, call, () => {
      throw new StatusError(
        'ServiceUnavailable',
        `the fast-path replica serving namespace ${body.namespace} (${owner}) cannot be reached; retry, or create a SandboxClaim`,
        { name: body.name, retryAfterSeconds: 1 },
      );
    });
    const a = AssignmentSchema.safeParse(object);
    if (!a.success) throw new StatusError('InternalError', `the fast-path replica ${owner} answered a claim with no assignment`);
    return a.data;
  }

  /** Serves a claim on this replica (its own namespace, or one a peer handed over): never handed on. */
  async serve(username: string, body: FastClaim): Promise<Assignment> {
    const target = { namespace: body.namespace, name: body.name };
    if (!this.d.names.take(target)) throw alreadyExists(body.name);
    try {
      const key = this.d.resolvePool(body.namespace, body.warmPool);
      const access = await this.d.secretAccess?.(body.namespace);
      if (access && !access.allowed) throw namespaceNotEnabled(body.name, body.namespace, access);
      this.d.cap?.admit(target);
      try {
        const unreserve = await this.#reserveElsewhere(target);
        try {
          return await this.d.deliver({ ...target, key, ttlSeconds: body.ttlSeconds ?? 0, warmPool: body.warmPool, requestedBy: username });
        } catch (err) {
          unreserve();
          throw err;
        }
      } catch (err) {
        this.d.cap?.release(target);
        throw err;
      }
    } catch (err) {
      this.d.names.release(target);
      throw err;
    }
  }

  /** A peer's reservation: the name is taken and counted here as if delivered here. */
  reserve(target: ClaimTarget): void {
    if (!this.d.names.take(target)) throw alreadyExists(target.name);
    try {
      this.d.cap?.admit(target);
    } catch (err) {
      this.d.names.release(target);
      throw err;
    }
  }

  unreserve(target: ClaimTarget): void {
    this.d.names.release(target);
    this.d.cap?.release(target);
  }

  #ownerElsewhere(namespace: string): string | undefined {
    const p = this.d.peers;
    if (p === undefined) return undefined;
    if (!p.synced()) throw new StatusError('ServiceUnavailable', 'the fast-path replicas are not known yet', { retryAfterSeconds: 1 });
    const owner = p.set.ownerOfKey(namespace);
    return owner === p.set.self ? undefined : owner;
  }

  /**
   * Within the settle window, takes the name and a place under the cap on every other replica;
   * returns what undoes it. A replica that cannot be reached is passed over (it is most often the
   * one that just left); one that refuses refuses this delivery too.
   */
  async #reserveElsewhere(target: ClaimTarget): Promise<() => void> {
    const p = this.d.peers;
    if (p === undefined || !p.set.changedWithin(p.settleMs)) return () => undefined;
    const call = { namespace: target.namespace, name: target.name };
    const taken: string[] = [];
    const undo = (): void => {
      for (const peer of taken) void this.#call(peer, { op: 'unreserve', ...call }, () => undefined).catch(() => undefined);
    };
    const results = await Promise.allSettled(
      p.set.others().map(async (peer) => {
        const ok = await this.#call(peer, { op: 'reserve', ...call }, () => undefined);
        if (ok !== undefined) taken.push(peer);
      }),
    );
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (refused !== undefined) {
      undo();
      throw refused.reason;
    }
    return undo;
  }

  /** One call to a peer; `unreachable` decides what a peer that cannot be reached means. */
  async #call<T>(peer: string, call: FastPathPeerCall, unreachable: () => T): Promise<Record<string, unknown> | T> {
    const p = this.d.peers;
    if (p === undefined) return unreachable();
    try {
      const object = await p.client.call(peer, call);
      p.onCall?.(call.op, 'ok');
      return object;
    } catch (err) {
      if (!isPeerUnreachable(err)) {
        p.onCall?.(call.op, 'refused');
        throw err;
      }
      p.onCall?.(call.op, 'unreachable');
      this.d.log.warn(
        { err, peer, op: call.op, namespace: call.op === 'claim' ? call.request.namespace : call.namespace },
        'fast-path peer unreachable',
      );
      return unreachable();
    }
  }
}

function alreadyExists(name: string): StatusError {
  return new StatusError('AlreadyExists', `${RESOURCES.sandboxClaim.plural}.${EXTENSIONS_GROUP} "${name}" already exists`, {
    name,
    group: EXTENSIONS_GROUP,
    kind: RESOURCES.sandboxClaim.plural,
  });
}

function namespaceNotEnabled(name: string, namespace: string, access: SecretAccessDecision): StatusError {
  return new StatusError('Forbidden', namespaceNotEnabledMessage(namespace, access), {
    name,
    group: EXTENSIONS_GROUP,
    kind: RESOURCES.sandboxClaim.plural,
    causes: [
      { reason: 'NamespaceNotEnabled', field: 'namespace', message: `claim Secrets may not be written in namespace "${namespace}"` },
    ],
  });
}
