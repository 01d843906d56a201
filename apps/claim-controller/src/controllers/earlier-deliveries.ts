import { isNotFound as isSandboxGone } from '@sandbox-scale/sandboxd-client';
import { inventoryName, OWNER_KINDS, parseOwnerRef, type InventoryLike } from '@sandbox-scale/scale-core';
import type { Assignment } from '../gateway/assignment';
import type { NodeDelivery } from '../gateway/claim-gateway';

/**
 * How long one listing of a node answers for every claim older than the leadership. Long enough
 * that a failover's burst of reconciles shares one listing per node; short enough that no answer
 * is much older than the node's own state (a request an earlier leader sent just before it died
 * may land after the listing, as it may land after any check).
 */
export const DEFAULT_EARLIER_LISTING_MAX_AGE_MS = 10_000;

export interface EarlierDeliveriesOptions {
  /** The nodes that can be asked now (NodeInventories with an address). */
  nodes: () => readonly InventoryLike[];
  /** One node's deliveries that carry a claim_ref, without tokens: one request. */
  list: (inv: InventoryLike, signal?: AbortSignal) => Promise<readonly NodeDelivery[]>;
  /** A delivery with its token read back from its node: one request. */
  withToken: (d: NodeDelivery, signal?: AbortSignal) => Promise<NodeDelivery>;
  /** Default DEFAULT_EARLIER_LISTING_MAX_AGE_MS. */
  maxAgeMs?: number;
  now?: () => number;
  /** Told each node listing sent (a metric). */
  onList?: () => void;
}

export interface EarlierDeliveryQuery {
  /** The claim's claim_ref (kind SandboxClaim, its uid, namespace and name). */
  claimRef: string;
  /** The node named by the claim's delivery-node annotation, if any: listed first. */
  hint?: string;
  /** Since when this process leads; a new leadership starts from fresh listings. */
  leadingSince: Date | undefined;
}

interface Listing {
  at: number;
  /** SandboxClaim deliveries on the node by claim_ref. */
  rows: Promise<Map<string, NodeDelivery[]>>;
}

/**
 * Finds a delivery an earlier process or leader made for a claim and did not record. Instead of
 * asking every node per claim (N claims x M nodes after a failover), each node's claim-ref'd
 * deliveries are listed once and that listing answers every claim for a short while: O(nodes)
 * per window, whatever the number of claims. The claim's delivery-node hint names the node the
 * earlier leader asked first; it is listed first, and a delivery found there is the claim's (a
 * claim never holds two), so it is adopted even while another node does not answer. A hint is
 * only an order: what is adopted is matched by the full claim_ref (uid included), and a claim
 * not found on its hinted node is looked for on every node.
 */
export class EarlierDeliveries {
  readonly #listings = new Map<string, Listing>();
  #epoch: number | undefined;

  constructor(private readonly o: EarlierDeliveriesOptions) {}

  /**
   * The delivery held for the claim, its token read back; undefined when no node holds one.
   * A node that cannot be listed fails the lookup (the claim is retried), unless the delivery was
   * found on the hinted node first.
   */
  async find(q: EarlierDeliveryQuery, signal?: AbortSignal): Promise<Assignment | undefined> {
    this.#startEpoch(q.leadingSince);
    const nodes = this.o.nodes().filter((i) => i.address);
    const hinted = q.hint === undefined ? undefined : nodes.find((i) => inventoryName(i) === q.hint);
    if (hinted !== undefined) {
      const d = (await this.#listing(hinted)).get(q.claimRef)?.[0];
      if (d !== undefined) return this.#withToken(hinted, d, signal);
    }
    const rest = nodes.filter((i) => i !== hinted);
    const listings = await Promise.all(rest.map((inv) => this.#listing(inv)));
    for (const [i, rows] of listings.entries()) {
      const d = rows.get(q.claimRef)?.[0];
      const inv = rest[i];
      if (d !== undefined && inv !== undefined) return this.#withToken(inv, d, signal);
    }
    return undefined;
  }

  /** Listings held now (a figure for leak checks). */
  get listings(): number {
    return this.#listings.size;
  }

  #startEpoch(since: Date | undefined): void {
    const epoch = since?.getTime();
    if (epoch !== this.#epoch) this.#listings.clear();
    this.#epoch = epoch;
    const oldest = this.#now() - this.#maxAgeMs();
    for (const [node, l] of this.#listings) if (l.at <= oldest) this.#listings.delete(node);
  }

  /**
   * The node's listing, shared by every claim asking within the window. Fetched without the
   * caller's signal, so one reconcile cut short does not fail the others waiting on it; the
   * gateway bounds each node call.
   */
  #listing(inv: InventoryLike): Promise<Map<string, NodeDelivery[]>> {
    const node = inventoryName(inv);
    const held = this.#listings.get(node);
    if (held !== undefined && held.at > this.#now() - this.#maxAgeMs()) return held.rows;
    this.o.onList?.();
    const listing: Listing = { at: this.#now(), rows: this.o.list(inv).then(byClaimRef) };
    this.#listings.set(node, listing);
    const drop = (): void => {
      if (this.#listings.get(node) === listing) this.#listings.delete(node);
    };
    listing.rows.catch(drop);
    // a listing may hold a node's whole claim fleet: it is not kept past its window, even when no older claim asks again
    setTimeout(drop, this.#maxAgeMs()).unref();
    return listing.rows;
  }

  /** A delivery the node no longer has (released, or its lease ran out) holds nothing: dropped, and the claim holds no sandbox. */
  async #withToken(inv: InventoryLike, d: NodeDelivery, signal?: AbortSignal): Promise<Assignment | undefined> {
    try {
      return (await this.o.withToken(d, signal)).assignment;
    } catch (err) {
      if (!isSandboxGone(err)) throw err;
      const rows = await this.#listings.get(inventoryName(inv))?.rows;
      const left = rows?.get(d.claimRef)?.filter((r) => r.assignment.claimId !== d.assignment.claimId) ?? [];
      if (left.length > 0) rows?.set(d.claimRef, left);
      else rows?.delete(d.claimRef);
      return undefined;
    }
  }

  #maxAgeMs(): number {
    return this.o.maxAgeMs ?? DEFAULT_EARLIER_LISTING_MAX_AGE_MS;
  }

  #now(): number {
    return (this.o.now ?? Date.now)();
  }
}

function byClaimRef(rows: readonly NodeDelivery[]): Map<string, NodeDelivery[]> {
  const out = new Map<string, NodeDelivery[]>();
  for (const d of rows) {
    // only SandboxClaim deliveries are looked up here; the rest of a node's fleet is not kept
    if (parseOwnerRef(d.claimRef)?.kind !== OWNER_KINDS.claim) continue;
    const list = out.get(d.claimRef);
    if (list === undefined) out.set(d.claimRef, [d]);
    else list.push(d);
  }
  return out;
}
