import { TtlLru, type Logger } from '@sandbox-scale/kube-runtime';
import { statusErrorOf, type ServedSandbox } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { encodeContinue, type ListQuery } from '../resource/list-query';
import type { ObjectList } from '../storage/rest';
import { FORWARDED_PAGE_ITEMS, LIST_REPLY_MAX_BYTES, type PeerListCall } from './peer-protocol';
import { isPeerUnreachable, PeerUnreachableError, type PeerClient, type PeerSet } from '@sandbox-scale/kube-runtime';

export interface ListContinuationOptions {
  readonly peers: PeerSet;
  readonly client: PeerClient<PeerListCall>;
  /** The epoch of this replica's own list snapshots (ListSnapshots.epoch). */
  readonly ownEpoch: () => number;
  readonly log: Logger;
}

/** A page as the peer that served it answered; its items are that replica's served objects. */
const PageReplySchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({
    resourceVersion: z.string(),
    continue: z.string().optional(),
    remainingItemCount: z.number().int().optional(),
  }),
  items: z.array(z.looseObject({})),
});

/** How many snapshot epochs (replica lifetimes) the issuer of is remembered. */
const REMEMBERED_ISSUERS = 64;

/**
 * The pages of a list another replica began. Every page of one list comes from the snapshot its
 * first page took, and that snapshot lives in the replica that took it. Behind
 * one Service, kube-apiserver's aggregator sends each request over whichever of its kept-alive
 * connections is free, so the pages of one `kubectl get` land on different replicas whenever
 * anything else is asking at the same time. A token of another replica's (its epoch is not
 * ours) is handed to the peer that issued it: the one that served that epoch last, else each
 * other listed peer in turn; a peer that did not issue it answers 410 and the next is asked.
 * Only listed peers are ever called, whatever a token says. When none holds the snapshot the
 * caller answers 410 Expired, as kube-apiserver does once etcd has compacted the revision.
 */
export class ListContinuation {
  /**
   * epoch -> the peer that served a page of it; the least recently used goes first. No expiry: a
   * snapshot that is gone is answered 410 by its issuer like by any other peer.
   */
  readonly #issuers = new TtlLru<number, string>(REMEMBERED_ISSUERS, Number.POSITIVE_INFINITY);

  constructor(private readonly o: ListContinuationOptions) {}

  /** Whether `q` continues a list of another replica's, with peers that could hold it. */
  isForeign(q: ListQuery): boolean {
    const c = q.continue;
    return c !== undefined && c.snapshot !== 0 && c.epoch !== this.o.ownEpoch() && this.o.peers.others().length > 0;
  }

  /** The page from the replica whose snapshot the token names; undefined when no listed peer holds it. */
  async page(q: ListQuery): Promise<ObjectList | undefined> {
    const c = q.continue;
    if (c === undefined) return undefined;
    const call: PeerListCall = {
      op: 'list',
      namespace: q.namespace,
      labelSelector: q.selectorText.labelSelector,
      fieldSelector: q.selectorText.fieldSelector,
      limit: Math.min(q.limit > 0 ? q.limit : FORWARDED_PAGE_ITEMS, FORWARDED_PAGE_ITEMS),
      continue: encodeContinue(c),
    };
    for (const peer of this.#candidates(c.epoch)) {
      let reply: Record<string, unknown>;
      try {
        reply = await this.o.client.call(peer, call, { maxReplyBytes: LIST_REPLY_MAX_BYTES });
      } catch (err) {
        // 410: not the peer that took the snapshot (or it has dropped it); unreachable: gone or
        // restarting, and its snapshots with it unless it answers again
        if (statusErrorOf(err)?.code === 410) continue;
        if (!isPeerUnreachable(err)) throw err;
        this.o.log.warn({ err, peer }, 'peer unreachable while continuing a list it may have begun');
        continue;
      }
      const page = PageReplySchema.safeParse(reply);
      if (!page.success) throw new PeerUnreachableError(`peer ${peer} answered a list page that is not one`);
      this.#issuers.set(c.epoch, peer);
      return { ...page.data, items: page.data.items as unknown as ServedSandbox[] };
    }
    return undefined;
  }

  #candidates(epoch: number): string[] {
    const others = this.o.peers.others();
    const known = this.#issuers.get(epoch);
    return known !== undefined && others.includes(known) ? [known, ...others.filter((p) => p !== known)] : others;
  }
}
