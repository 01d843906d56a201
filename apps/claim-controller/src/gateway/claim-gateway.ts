import { randomUUID } from 'node:crypto';
import {
  asNodeAtCapacity,
  DeadlineSignals,
  isNodeAtCapacity as isSandboxdAtCapacity,
  isNotFound as isSandboxNotFound,
  isUnusableReply,
  KnownNodeAddresses,
  type AddressRefusal,
  type SandboxdClientSet,
  type CallOptions,
  type ClaimRequest,
  type ClaimResult,
} from '@sandbox-scale/sandboxd-client';
import {
  CapacityLedger,
  formatRfc3339Seconds,
  ClaimRoutingNotConfiguredError,
  inventoryName,
  NoWarmCapacityError,
  SandboxScaleError,
  formatOwnerRef,
  OWNER_KINDS,
  withDeadline,
  type InventoryLike,
  type OwnerRefKey,
  type SandboxOwner,
  type PoolKey,
  type Rng,
  type WarmCandidate,
} from '@sandbox-scale/scale-core';
import type { Logger } from '@sandbox-scale/kube-runtime';
import type { Assignment, ClaimTarget } from './assignment';
import { coldCandidates, type ColdInventoryLike } from './cold-candidates';
import type { FastPathDelivery } from '../record/fast-path-recorder';
import type { RecordQueue } from '../record/record-queue';

export interface GatewayClaimRequest extends ClaimTarget {
  /**
   * Who the VM is for, recorded on the node as its claim_ref: a SandboxClaim (uid = the claim's
   * metadata.uid) or a fast-path delivery (uid = the delivery uid its record carries).
   */
  owner: { kind: typeof OWNER_KINDS.claim | typeof OWNER_KINDS.fastclaim; uid: string };
  key: PoolKey;
  /** 0 or absent: the node's default. */
  ttlSeconds?: number;
  signal?: AbortSignal;
  /**
   * Told the node chosen first, synchronously, right before its claim request is sent (the
   * caller records it as a hint beside that request). Not told when no node is chosen; a
   * delivery made by a redirect peer or a later candidate lands elsewhere.
   */
  onFirstNode?: (node: string) => void;
}

export interface ClaimGatewayOptions {
  /** Node clients over one keep-alive dispatcher, carrying the fleet token. */
  clients: SandboxdClientSet;
  /** Empty: every node write is refused (fail closed). */
  fleetToken: string;
  /** Proves the claim references written on nodes (sandbox-apiserver holds the same key). */
  refKey: OwnerRefKey;
  /** The current NodeInventory objects (an informer cache, or a static list). */
  inventories: () => readonly ColdInventoryLike[];
  /** Async Bound records of fast-path deliveries; without one the caller records. */
  records?: RecordQueue<FastPathDelivery>;
  rng?: Rng;
  log: Logger;
  /**
   * Bound on each sandboxd call (claim, list, read back), so a node that stops answering fails
   * the attempt and the claim is retried and routed around instead of waiting forever. Default 10 s
   * (sandbox-apiserver's create uses the same).
   */
  callTimeoutMs?: number;
  /**
   * Bound on a cold claim call, which blocks while the node boots a VM. Longer than the daemon's
   * own 90 s cold readiness limit, so a node that is still booting answers (200 or 500) before we
   * give up: a timed-out cold call then means the node is not answering, not a late delivery.
   * Default 120 s.
   */
  coldClaimTimeoutMs?: number;
  /** After a failed claim call (timeout, 5xx, refused), the node is chosen only when no other node can serve, for this long. Default 15 s. */
  failedNodeCooldownMs?: number;
  onClaim?: (outcome: 'delivered' | 'no_capacity' | 'error', seconds: number, how: ClaimHow) => void;
  /** A node named an address (a redirect target, a recorded owner address) no known, non-stale inventory advertises: not followed. */
  onAddressRefused?: (reason: AddressRefusal) => void;
}

/** How a claim was made, for metrics: the fast path or a SandboxClaim, from a warm VM or a cold boot. */
export interface ClaimHow {
  path: 'fast' | 'claim';
  start: 'warm' | 'cold';
}

/** What a warm delivery reads of its request; the owner is passed beside it. */
type WarmRequest = Omit<GatewayClaimRequest, 'owner'>;

/** One claim attempt: who the VM is for, the call's bound, and whether the node came from the ledger (its count is put back or exhausted). */
interface ClaimAttempt {
  owner: GatewayClaimRequest['owner'];
  timeoutMs: number;
  warm: boolean;
}

const pathOf = (req: GatewayClaimRequest): ClaimHow['path'] => (req.owner.kind === OWNER_KINDS.fastclaim ? 'fast' : 'claim');

/** A delivered sandbox's node is in no NodeInventory and no address was recorded for it: it cannot be reached to release or renew. */
export class ReleaseTargetUnknownError extends SandboxScaleError {}

export const DEFAULT_SANDBOXD_CALL_TIMEOUT_MS = 10_000;
export const DEFAULT_COLD_CLAIM_TIMEOUT_MS = 120_000;

/**
 * The node-local claim transaction: choose a node (power of two over advertised warm pools,
 * corrected by a local ledger between publishes), claim there with claim_ref = ns/name, follow
 * the node's redirect candidates, then the next node; only when every candidate raced to zero
 * is it NoWarmCapacity. The Assignment is returned before any Bound record is written.
 */
export class ClaimGateway {
  readonly #ledger = new CapacityLedger();
  readonly #failedUntil = new Map<string, number>();
  readonly #deadlines = new DeadlineSignals();
  readonly #o: ClaimGatewayOptions;
  /** The addresses claims and the fleet token may go to: those the inventories advertise. */
  readonly #known: KnownNodeAddresses;

  constructor(opts: ClaimGatewayOptions) {
    this.#o = opts;
    this.#known = new KnownNodeAddresses(opts.inventories);
  }

  /** Counts and logs an address a node named that is not followed; the address is logged, never a token. */
  #refused(from: string, addr: string, reason: AddressRefusal): void {
    this.#o.onAddressRefused?.(reason);
    this.#o.log.warn({ node: from, address: addr, reason }, 'not following an address no known, non-stale NodeInventory advertises');
  }

  /**
   * Where `target` is reached: its inventory's address, else the address recorded at delivery
   * (which the node wrote) only when a known, non-stale inventory advertises it.
   */
  #addressOf(target: { node: string; claimId: string; address?: string }, verb: string): string {
    const inv = this.#o.inventories().find((i) => inventoryName(i) === target.node);
    if (inv?.address) return inv.address;
    if (target.address) {
      const known = this.#known.check(target.address);
      if (!('refused' in known)) return target.address;
      this.#refused(target.node, target.address, known.refused);
    }
    throw new ReleaseTargetUnknownError(`cannot ${verb} ${target.claimId}: node ${target.node} has no known address`);
  }

  get recordQueue(): RecordQueue<FastPathDelivery> | undefined {
    return this.#o.records;
  }

  /** The claim_ref a delivery for `owner` carries on its node, proven with this control plane's key. */
  claimRefOf(owner: SandboxOwner): string {
    return formatOwnerRef(owner, this.#o.refKey);
  }

  /**
   * The fast path: delivers under a fresh delivery uid and queues the Bound record (when a queue
   * is set); never waits for the record, which is written after the caller has its answer.
   */
  deliverFastPath(
    req: Omit<GatewayClaimRequest, 'owner'> & { warmPool: string; bounded?: boolean; requestedBy?: string },
  ): Promise<Assignment> {
    const deliveryUid = randomUUID();
    const records = this.#o.records;
    // the record is queued by the delivery itself rather than by another async layer around it:
    // each layer is one more promise and turn between the node's answer and the caller
    const onDelivered =
      records === undefined
        ? undefined
        : (a: Assignment): void => {
            // optional fields set in place rather than spread: this runs before the caller's answer
            const target: FastPathDelivery = { namespace: req.namespace, name: req.name, warmPool: req.warmPool, deliveryUid };
            if (req.bounded) target.bounded = true;
            if (req.requestedBy) target.requestedBy = req.requestedBy;
            records.enqueue(target, a);
          };
    return this.#deliverWarm(req, { kind: OWNER_KINDS.fastclaim, uid: deliveryUid }, 'fast', onDelivered);
  }

  /** Delivers only (the SandboxClaim path): the caller writes the record before its reconcile ends. */
  deliver(req: GatewayClaimRequest): Promise<Assignment> {
    return this.#deliverWarm(req, req.owner, pathOf(req));
  }

  async #deliverWarm(
    req: WarmRequest,
    owner: GatewayClaimRequest['owner'],
    path: ClaimHow['path'],
    onDelivered?: (a: Assignment) => void,
  ): Promise<Assignment> {
    this.#requireToken();
    const t0 = performance.now();
    const tried = new Set<string>();
    let delivered: Assignment;
    try {
      for (;;) {
        const inventories = this.#o.inventories();
        const cand = this.#choose(inventories, req.key, tried);
        if (cand === undefined) throw new NoWarmCapacityError(req.key);
        if (tried.size === 0) req.onFirstNode?.(cand.node);
        tried.add(cand.node);
        const a = await this.#claimAt(cand, req, inventories, tried, {
          owner,
          timeoutMs: this.#o.callTimeoutMs ?? DEFAULT_SANDBOXD_CALL_TIMEOUT_MS,
          warm: true,
        });
        if (a !== undefined) {
          delivered = a;
          break;
        }
      }
    } catch (err) {
      this.#done(err instanceof NoWarmCapacityError ? 'no_capacity' : 'error', t0, path, 'warm');
      throw err;
    }
    this.#done('delivered', t0, path, 'warm');
    onDelivered?.(delivered);
    return delivered;
  }

  #done(outcome: 'delivered' | 'no_capacity' | 'error', t0: number, path: ClaimHow['path'], start: ClaimHow['start']): void {
    this.#o.onClaim?.(outcome, (performance.now() - t0) / 1000, { path, start });
  }

  /**
   * The next node to claim at: untried, and not among nodes whose last claim call failed unless
   * no other node can serve. The first attempt of a claim on a fleet without recent failures
   * (the usual case) hands the ledger the list as it is, without filtered copies.
   */
  #choose(inventories: readonly InventoryLike[], key: PoolKey, tried: ReadonlySet<string>): WarmCandidate | undefined {
    const rng = this.#o.rng ?? Math.random;
    const untried = tried.size === 0 ? inventories : inventories.filter((i) => !tried.has(inventoryName(i)));
    if (this.#failedUntil.size === 0) return this.#ledger.choose(untried, key, rng);
    const now = Date.now();
    // a cooldown that has run out routes nothing: dropping it brings claims back to the list as it is
    for (const [node, until] of this.#failedUntil) if (until <= now) this.#failedUntil.delete(node);
    const healthy = untried.filter((i) => (this.#failedUntil.get(inventoryName(i)) ?? 0) <= now);
    return this.#ledger.choose(healthy, key, rng) ?? this.#ledger.choose(untried, key, rng);
  }

  /**
   * Cold claim (the pool allows it and no node advertises a warm VM of the key): the same
   * POST /v1/claim with the same claim_ref at a routable node, which boots a VM and blocks until
   * it is up. Nodes are tried best first (coldCandidates); a node at max_claims or draining (429)
   * means the next one; when every routable node refused it is NoWarmCapacity. Any other failure
   * ends the attempt, as on the warm path: a lost reply is adopted from the node, never retried
   * elsewhere, so a claim is never delivered twice.
   */
  async coldDeliver(req: GatewayClaimRequest): Promise<Assignment> {
    this.#requireToken();
    const t0 = performance.now();
    const done = (outcome: 'delivered' | 'no_capacity' | 'error'): void => this.#done(outcome, t0, pathOf(req), 'cold');
    const tried = new Set<string>();
    const opts = { owner: req.owner, timeoutMs: this.#o.coldClaimTimeoutMs ?? DEFAULT_COLD_CLAIM_TIMEOUT_MS, warm: false };
    try {
      const inventories = this.#o.inventories();
      const now = Date.now();
      for (const cand of coldCandidates(inventories, (node) => (this.#failedUntil.get(node) ?? 0) > now)) {
        if (tried.has(cand.node)) continue;
        tried.add(cand.node);
        const a = await this.#claimAt({ node: cand.node, addr: cand.addr, warm: 0 }, req, inventories, tried, opts);
        if (a !== undefined) {
          done('delivered');
          return a;
        }
      }
      throw new NoWarmCapacityError(req.key);
    } catch (err) {
      done(err instanceof NoWarmCapacityError ? 'no_capacity' : 'error');
      throw err;
    }
  }

  /**
   * One node, then the peers it redirects to; undefined when all of them are at capacity.
   * `o.owner` is who the VM is for; `o.warm`: the node was chosen from the ledger, whose count is put back or exhausted.
   */
  #claimAt(
    cand: WarmCandidate,
    req: WarmRequest,
    inventories: readonly InventoryLike[],
    tried: Set<string>,
    o: ClaimAttempt,
  ): Promise<Assignment | undefined> {
    const claimRef = this.claimRefOf({ kind: o.owner.kind, uid: o.owner.uid, namespace: req.namespace, name: req.name });
    const body: ClaimRequest = { template: req.key.template, net: req.key.net, size: req.key.size, claimRef };
    if (req.ttlSeconds) body.ttlSeconds = req.ttlSeconds;
    // a plain continuation rather than an async frame: the delivered case is the common one and
    // pays one promise between the node's answer and the caller, not two; the failure handler's
    // context is only gathered when a claim fails
    let call: Promise<ClaimResult>;
    try {
      const client = this.#o.clients.forNode(cand.addr);
      // without a caller's signal the call is bounded by a shared deadline, with no closure per claim
      call =
        req.signal === undefined
          ? client.claim(body, { deadline: this.#deadlines.deadline(o.timeoutMs) })
          : this.#call(req.signal, (bound) => client.claim(body, bound), o.timeoutMs);
    } catch (err) {
      // an address the client refuses fails this node like any other failed call
      return this.#afterFailedClaim(err, cand, req, { claimRef, body, inventories, tried, o });
    }
    return call.then(
      (r) => {
        let a: Assignment;
        try {
          a = toAssignment(cand.node, r);
        } catch (err) {
          return this.#afterFailedClaim(err, cand, req, { claimRef, body, inventories, tried, o });
        }
        if (this.#failedUntil.size > 0) this.#failedUntil.delete(cand.node);
        return a;
      },
      (err: unknown) => this.#afterFailedClaim(err, cand, req, { claimRef, body, inventories, tried, o }),
    );
  }

  /**
   * The claim at `cand` failed: adopt a delivery whose reply was lost, or follow the node's
   * redirect candidates when it was at capacity; undefined when all of them are.
   */
  async #afterFailedClaim(
    err: unknown,
    cand: WarmCandidate,
    req: WarmRequest,
    c: { claimRef: string; body: ClaimRequest; inventories: readonly InventoryLike[]; tried: Set<string>; o: ClaimAttempt },
  ): Promise<Assignment | undefined> {
    const { claimRef, body, tried, o } = c;
    if (!isSandboxdAtCapacity(err)) {
      const adopted = await this.#adoptUnknownOutcome(cand, claimRef, err, req.signal);
      if (adopted) return adopted;
      if (o.warm) this.#ledger.putBack(cand.node, req.key);
      if (!req.signal?.aborted) this.#failedUntil.set(cand.node, Date.now() + (this.#o.failedNodeCooldownMs ?? 15_000));
      throw err;
    }
    if (o.warm) this.#ledger.exhaust(cand.node, req.key);
    const redirect = asNodeAtCapacity(err)?.candidates ?? [];
    for (const url of redirect) {
      // the node wrote these: only an address a known, non-stale inventory advertises gets the claim and the fleet token
      const peer = this.#known.check(url);
      if ('refused' in peer) {
        this.#refused(cand.node, url, peer.refused);
        continue;
      }
      const node = peer.node;
      if (tried.has(node)) continue;
      tried.add(node);
      try {
        return toAssignment(
          node,
          await this.#call(req.signal, (bound) => this.#o.clients.forNode(url).claim({ ...body, noRedirect: true }, bound), o.timeoutMs),
        );
      } catch (peerErr) {
        if (!isSandboxdAtCapacity(peerErr)) throw peerErr;
        if (o.warm) this.#ledger.exhaust(node, req.key);
      }
    }
    return undefined;
  }

  /**
   * A node that answered the claim with a reply that cannot be used (a 5xx, a malformed body,
   * one past the read cap) may still have handed the VM over: claiming elsewhere would deliver
   * twice. Ask the node for deliveries carrying this claim_ref and adopt one when it is there. A
   * node that did not answer at all is not asked again (it would only time out once more): a VM
   * it hands over late is found by the orphan pass, which adopts it or, once the claim holds
   * another, releases it.
   */
  async #adoptUnknownOutcome(cand: WarmCandidate, claimRef: string, err: unknown, signal?: AbortSignal): Promise<Assignment | undefined> {
    if (!isUnusableReply(err) || signal?.aborted) return undefined;
    const inv = this.#o.inventories().find((i) => inventoryName(i) === cand.node);
    if (!inv) return undefined;
    try {
      const found = await this.nodeDeliveries(inv, claimRef, signal);
      const a = found[0]?.assignment;
      if (a) this.#o.log.warn({ node: cand.node, sandboxId: a.claimId, claimRef }, 'adopted a delivery whose claim reply was lost');
      return a;
    } catch {
      return undefined;
    }
  }

  /**
   * Owner teardown: destroys the sandbox `claimId` on `node` with the fleet token. The node is
   * resolved from the inventories (falling back to the recorded address), so it works after a
   * restart — nothing of the delivery is kept in memory.
   */
  async release(target: { node: string; claimId: string; address?: string }, signal?: AbortSignal): Promise<void> {
    this.#requireToken();
    const addr = this.#addressOf(target, 'release');
    await this.#o.clients.forNode(addr).release(target.claimId, signal ? { signal } : {});
  }

  /**
   * Moves the node lease of a delivered sandbox to now + ttlSeconds (0: the node's default), with
   * the fleet token (operator path). The node's reply is authoritative; undefined = no deadline.
   * A sandbox the node no longer has is sandboxd-client's NotFound.
   */
  async renew(
    target: { node: string; claimId: string; address?: string },
    ttlSeconds: number,
    signal?: AbortSignal,
  ): Promise<Date | undefined> {
    this.#requireToken();
    const addr = this.#addressOf(target, 'renew');
    const { deadline } = await this.#call(signal, (bound) => this.#o.clients.forNode(addr).renew(target.claimId, ttlSeconds, bound));
    return deadline ?? undefined;
  }

  /**
   * Whether the node still has the delivered sandbox `claimId`: one read with the fleet token.
   * False only when the node answers that it does not (sandboxd-client's NotFound); a node that
   * does not answer throws, so an unreachable node never reads as a lost sandbox.
   */
  async holds(target: { node: string; claimId: string; address?: string }, signal?: AbortSignal): Promise<boolean> {
    this.#requireToken();
    const addr = this.#addressOf(target, 'look up');
    try {
      await this.#call(signal, (bound) => this.#o.clients.forNode(addr).sandbox(target.claimId, bound));
      return true;
    } catch (err) {
      if (isSandboxNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * The live deliveries of `claimRef` on a node, tokens read back (root only) so the caller can
   * record them. Filtered by the node, so this costs one list plus one read per match (normally
   * none or one), never one per sandbox on the node.
   */
  async nodeDeliveries(inv: InventoryLike, claimRef: string, signal?: AbortSignal): Promise<NodeDelivery[]> {
    const rows = await this.listDeliveries(inv, claimRef, signal);
    return Promise.all(rows.map((d) => this.withToken(d, signal)));
  }

  /**
   * A node's live deliveries that carry a claim_ref (all of them, or those of `claimRef`), from
   * the node's own list, which survives any restart of this process: one request per node.
   * The list carries no tokens, so each delivery's token is '' until `withToken` reads it.
   */
  async listDeliveries(inv: InventoryLike, claimRef?: string, signal?: AbortSignal): Promise<NodeDelivery[]> {
    this.#requireToken();
    const rows = await this.#call(signal, (bound) => this.#o.clients.forNode(inv.address ?? '').sandboxes(claimRef, bound));
    const node = inventoryName(inv);
    const out: NodeDelivery[] = [];
    for (const r of rows) {
      if (!r.claimRef) continue;
      const deadline = r.deadline ? formatRfc3339Seconds(r.deadline) : undefined;
      out.push({
        claimRef: r.claimRef,
        key: r.key,
        assignment: { claimId: r.id, node, address: inv.address ?? '', token: '', ...(deadline ? { deadline } : {}) },
      });
    }
    return out;
  }

  /** `d` with its token read back from its node (GET /v1/sandboxes/{id}, root only): one request. */
  async withToken(d: NodeDelivery, signal?: AbortSignal): Promise<NodeDelivery> {
    this.#requireToken();
    const detail = await this.#call(signal, (bound) => this.#o.clients.forNode(d.assignment.address).sandbox(d.assignment.claimId, bound));
    return { ...d, assignment: { ...d.assignment, token: detail.token ?? '' } };
  }

  /**
   * One node call under the caller's signal, if any, bounded by the per-call timeout. Without a
   * caller's signal (the fast path) the bound is a shared CallDeadline, not a timer per call.
   */
  #call<T>(
    signal: AbortSignal | undefined,
    fn: (bound: CallOptions) => Promise<T>,
    timeoutMs = this.#o.callTimeoutMs ?? DEFAULT_SANDBOXD_CALL_TIMEOUT_MS,
  ): Promise<T> {
    if (signal === undefined) return fn({ deadline: this.#deadlines.deadline(timeoutMs) });
    return withDeadline(signal, timeoutMs, (s) => fn({ signal: s }));
  }

  #requireToken(): void {
    if (this.#o.fleetToken === '') throw new ClaimRoutingNotConfiguredError();
  }
}

export interface NodeDelivery {
  claimRef: string;
  /** The pool key the VM was claimed from. */
  key: PoolKey;
  assignment: Assignment;
}

function toAssignment(node: string, r: ClaimResult): Assignment {
  const a: Assignment = { claimId: r.id, node, address: r.ownerAddr, token: r.token };
  if (r.deadline) a.deadline = deadlineText(r.deadline);
  return a;
}

let lastDeadline = { second: NaN, text: '' };

/**
 * formatRfc3339Seconds of a claim's deadline. Claims made within one second with one TTL end
 * in the same second, so the text of the last one is kept and reused.
 */
export function deadlineText(d: Date): string {
  const second = Math.floor(d.getTime() / 1000);
  if (second !== lastDeadline.second) lastDeadline = { second, text: formatRfc3339Seconds(d) };
  return lastDeadline.text;
}
