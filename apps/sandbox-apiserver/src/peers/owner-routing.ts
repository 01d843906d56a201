import type { Logger } from '@sandbox-scale/kube-runtime';
import { AlreadyExistsError, ANNOTATIONS, StatusError, statusErrorOf, type Sandbox, type ServedSandbox } from '@sandbox-scale/scale-core';
import { admitSandbox } from '../storage/create-sandbox';
import type { DeleteRequest } from '../storage/delete-sandbox';
import { SANDBOX_RESOURCE } from '../storage/sandbox-storage';
import type { PeerCall } from './peer-protocol';
import { isPeerUnreachable, type PeerClient, type PeerSet } from '@sandbox-scale/kube-runtime';
import type { LocalVerbs, SandboxVerbs } from './sandbox-verbs';
import { findOnNodes } from './node-lookup';
import { ListContinuation } from './list-continuation';
import type { ListQuery } from '../resource/list-query';
import type { ObjectList } from '../storage/rest';

const isNotFound = (err: unknown): boolean => statusErrorOf(err)?.code === 404;

/** The name a claimsnapshot body asks for; '' when it has none (the owner's parse answers 400). */
function claimTargetOf(body: unknown): string {
  const name = typeof body === 'object' && body !== null ? (body as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name : '';
}

export interface OwnerRoutingOptions {
  readonly local: LocalVerbs;
  readonly peers: PeerSet;
  /** Undefined: peers cannot be called (no delegated auth, no CA): this replica acts alone. */
  readonly client: PeerClient<PeerCall> | undefined;
  /**
   * How long after the peer set changes a name may still be held by its previous owner: a miss
   * then also asks every other peer and the nodes. The created-overlay's lifetime is the bound:
   * past it, the node's own NodeInventory lists the sandbox.
   */
  readonly settleMs: number;
  readonly log: Logger;
}

/**
 * One answer whichever replica is asked (docs/adr/0003). Every `namespace/name` has an owner
 * replica (PeerSet): a create goes to the owner, which alone decides whether the name is taken
 * and keeps the claim-time index and created-overlay of what it created. A read, delete or
 * lifecycle verb is served here when this replica knows the sandbox and otherwise asks the
 * owner before a 404; a delete of a name owned elsewhere runs on the owner, so its overlay
 * hides the sandbox too. Calls a peer hands over run here and are never handed on.
 */
export class OwnerRouting implements SandboxVerbs {
  readonly #pages: ListContinuation | undefined;

  constructor(private readonly o: OwnerRoutingOptions) {
    this.#pages =
      o.client === undefined
        ? undefined
        : new ListContinuation({ peers: o.peers, client: o.client, ownEpoch: () => o.local.storage.reads.snapshots.epoch, log: o.log });
  }

  async list(q: ListQuery): Promise<ObjectList> {
    if (this.#pages?.isForeign(q)) {
      const page = await this.#pages.page(q);
      if (page !== undefined) return page;
    }
    // ours, or held by no listed peer: the local answer (a 410 with a token to resume from here)
    return this.o.local.list(q);
  }

  async create(namespace: string, body: unknown, opts: { dryRun: boolean }): Promise<Sandbox> {
    // the name (a generateName resolved once, here) decides the owner
    const s = admitSandbox(body, namespace);
    const name = s.metadata.name ?? '';
    const owner = this.#ownerElsewhere(namespace, name);
    if (owner !== undefined)
      return (await this.#forward(owner, { op: 'create', namespace, body: s, dryRun: opts.dryRun })) as unknown as Sandbox;
    if (this.o.peers.changedWithin(this.o.settleMs) && !opts.dryRun) await this.#refuseIfHeldElsewhere(namespace, name);
    return this.o.local.create(namespace, s, opts);
  }

  async get(namespace: string, name: string): Promise<ServedSandbox> {
    try {
      return await this.o.local.get(namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      const found = await this.#askElsewhere({ op: 'get', namespace, name }, err);
      return found as unknown as ServedSandbox;
    }
  }

  async delete(namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox> {
    const owner = this.#ownerElsewhere(namespace, name);
    let ownerUnreachable: unknown;
    if (owner !== undefined) {
      try {
        const object = (await this.o.client?.call(owner, {
          op: 'delete',
          namespace,
          name,
          body: req.body,
          dryRun: req.dryRun,
        })) as unknown as ServedSandbox;
        if (!req.dryRun) this.#hideReleased(namespace, name, object);
        return object;
      } catch (err) {
        // the owner is gone: the sandbox is still deletable here when this replica lists it
        if (!isPeerUnreachable(err)) throw err;
        ownerUnreachable = err;
        this.o.log.warn({ err, owner, namespace, name }, 'owner replica unreachable; deleting through this replica');
      }
    }
    try {
      return await this.o.local.delete(namespace, name, req);
    } catch (err) {
      if (isNotFound(err) && ownerUnreachable !== undefined) {
        throw new StatusError(
          'ServiceUnavailable',
          `the sandbox-apiserver replica that owns ${namespace}/${name} is unreachable; retry`,
          { retryAfterSeconds: 1 },
          { cause: ownerUnreachable },
        );
      }
      if (!isNotFound(err) || owner !== undefined) throw err;
      return (await this.#askElsewhere(
        { op: 'delete', namespace, name, body: req.body, dryRun: req.dryRun },
        err,
      )) as unknown as ServedSandbox;
    }
  }

  async act(
    namespace: string,
    name: string,
    action: string,
    body: unknown,
    dryRun: boolean,
  ): Promise<Record<string, unknown> | ServedSandbox> {
    if (action === 'claimsnapshot') {
      // creates the sandbox named in the body: run by that name's owner, like a create, so the
      // name check there is the one every create of it meets. Snapshots are found on the nodes,
      // whichever replica asks, so a miss there is final.
      const owner = this.#ownerElsewhere(namespace, claimTargetOf(body));
      if (owner !== undefined) return this.#forward(owner, { op: 'act', namespace, name, action, body, dryRun });
      return this.o.local.act(namespace, name, action, body, dryRun);
    }
    try {
      return await this.o.local.act(namespace, name, action, body, dryRun);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return this.#askElsewhere({ op: 'act', namespace, name, action, body, dryRun }, err);
    }
  }

  /** The owner of a name when it is another replica that can be called; else undefined. */
  #ownerElsewhere(namespace: string, name: string): string | undefined {
    if (this.o.client === undefined) return undefined;
    const owner = this.o.peers.ownerOf(namespace, name);
    return owner === this.o.peers.self ? undefined : owner;
  }

  async #forward(peer: string, call: Extract<PeerCall, { op: 'create' | 'act' }>): Promise<Record<string, unknown>> {
    try {
      return await (this.o.client as PeerClient<PeerCall>).call(peer, call);
    } catch (err) {
      if (!isPeerUnreachable(err)) throw err;
      // unknown to this replica is not "absent": answer retry-later, never a guess
      this.o.log.warn({ err, peer, op: call.op }, 'owner replica unreachable');
      throw new StatusError(
        'ServiceUnavailable',
        `the sandbox-apiserver replica that owns ${call.namespace}/${call.op === 'create' ? '' : call.name} is unreachable; retry`,
        { retryAfterSeconds: 1 },
        { cause: err },
      );
    }
  }

  /**
   * A local miss: the owner (when another replica) may hold the sandbox in its claim-time index;
   * right after the peers changed, any replica may (the previous owner), and so may a node
   * whose NodeInventory is not out yet. Only when all of them miss is it a 404.
   */
  async #askElsewhere(call: Exclude<PeerCall, { op: 'create' | 'list' }>, miss: unknown): Promise<Record<string, unknown>> {
    const owner = this.#ownerElsewhere(call.namespace, call.name);
    const unsettled = this.o.peers.changedWithin(this.o.settleMs);
    const candidates = new Set<string>(owner !== undefined ? [owner] : []);
    if (unsettled && this.o.client !== undefined) for (const p of this.o.peers.others()) candidates.add(p);
    let ownerUnreachable: unknown;
    for (const peer of candidates) {
      try {
        const object = await (this.o.client as PeerClient<PeerCall>).call(peer, call);
        if (call.op === 'delete' && !call.dryRun) this.#hideReleased(call.namespace, call.name, object as unknown as ServedSandbox);
        return object;
      } catch (err) {
        if (isNotFound(err)) continue;
        if (!isPeerUnreachable(err)) throw err;
        if (peer === owner) ownerUnreachable = err;
      }
    }
    if (unsettled && (await findOnNodes(this.o.local.storage.reads, call.namespace, call.name, this.o.log))) {
      // now in the local claim-time index: run the verb here
      return (await this.o.local.run(call)) as Record<string, unknown>;
    }
    if (ownerUnreachable !== undefined) {
      throw new StatusError(
        'ServiceUnavailable',
        `the sandbox-apiserver replica that owns ${call.namespace}/${call.name} is unreachable; retry`,
        { retryAfterSeconds: 1 },
        { cause: ownerUnreachable },
      );
    }
    throw miss;
  }

  /** A create right after the peers changed: the previous owner or a node may hold the name. */
  async #refuseIfHeldElsewhere(namespace: string, name: string): Promise<void> {
    try {
      await this.#askElsewhere({ op: 'get', namespace, name }, new StatusError('NotFound', 'not found'));
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    throw new AlreadyExistsError(SANDBOX_RESOURCE, name);
  }

  #hideReleased(namespace: string, name: string, object: ServedSandbox | undefined): void {
    const claimId = object?.metadata?.annotations?.[ANNOTATIONS.claimId] ?? '';
    if (claimId === '') return;
    this.o.local.storage.reads.index.deleteByName(namespace, name);
    this.o.local.storage.cache.markReleased(namespace, name, claimId);
  }
}
