import type { Logger } from '@sandbox-scale/kube-runtime';
import { isNotFound as isSandboxGone } from '@sandbox-scale/sandboxd-client';
import {
  isUidOwner,
  leaseRenewAtMs,
  parseOwnerRef,
  renewalFraction,
  sleep,
  type OwnerRefKey,
  type Rng,
  TokenBucket,
} from '@sandbox-scale/scale-core';
import type { NodeRouter } from './node-router';
import type { SandboxCache } from './sandbox-cache';

export interface LeaseRenewerOptions {
  cache: SandboxCache;
  router: NodeRouter;
  /** Lease asked for on each renewal (the one LeasePolicy claims with); 0 = the node's default. */
  leaseTtlSeconds: number;
  /** Renewals per second over every node. */
  ratePerSecond: number;
  log: Logger;
  /**
   * Only references this key proves are renewed: a `+renew` reference a node or a sandboxd
   * tenant wrote (no MAC, or a wrong one) is left to run out its node lease.
   */
  refKey: OwnerRefKey;
  /** Told once per sandbox, when a pass first finds it under an unproven `+renew` reference. */
  onUnproven?: () => void;
  /**
   * Whether this replica renews `namespace/name` (peers/renewal-scope.ts: the name's owner
   * replica); absent = every sandbox, as a replica acting alone.
   */
  renewsHere?: (namespace: string, name: string) => boolean;
  now?: () => number;
  rng?: Rng;
}

export interface RenewPass {
  candidates: number;
  /** Left to the replica that owns them. */
  elsewhere: number;
  renewed: number;
  gone: number;
  errors: number;
  /** Refused a token this pass; the next pass takes them. */
  deferred: number;
  /** Marked `+renew` by a reference this control plane did not write (no MAC, or a wrong one): never renewed. */
  unproven: number;
}

const MIN_INTERVAL_MS = 250;
const MAX_INTERVAL_MS = 10_000;

/**
 * Keeps alive the sandboxes that live until deleted (claim reference marked `renewed`: Sandboxes
 * created through this API, fork children and snapshot claims without a TTL). A pass looks at
 * every served sandbox, and renews the node lease of those past their renewal point in it, bounded in rate
 * and spread so leases granted together are not renewed together. The deadline a renewal
 * returns is remembered until the node's next publish carries it, so nothing is renewed twice
 * for one lease. A sandbox the node no longer has is left to the next publish.
 *
 * With several replicas each renews the sandboxes whose name it owns (`renewsHere`), and every
 * one whenever owners are uncertain: renewals are idempotent, so a doubled one costs only node
 * work, while a missed one would end a sandbox. A replica that goes away leaves the Service's
 * endpoints within seconds, far inside the half lease left at the renewal point.
 */
export class LeaseRenewer {
  readonly #o: LeaseRenewerOptions;
  readonly #bucket: TokenBucket;
  /** node/id → the deadline (ms) our last renewal got, kept until a publish catches up. */
  readonly #renewedTo = new Map<string, number>();
  /** node/id → this sandbox's point in its lease to renew at (the shared renewal window), fixed per sandbox. */
  readonly #spread = new Map<string, number>();
  /** node/id of sandboxes under an unproven `+renew` reference, told once each while they last. */
  readonly #unproven = new Set<string>();

  constructor(o: LeaseRenewerOptions) {
    this.#o = o;
    this.#bucket = new TokenBucket({ ratePerSecond: o.ratePerSecond });
  }

  /** Pass cadence: an eighth of the lease, between 250 ms and 10 s. */
  get intervalMs(): number {
    const leaseMs = (this.#o.leaseTtlSeconds || 300) * 1000;
    return Math.min(MAX_INTERVAL_MS, Math.max(MIN_INTERVAL_MS, Math.floor(leaseMs / 8)));
  }

  /** Runs passes until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (this.#o.router.configured) {
        try {
          await this.pass(signal);
        } catch (err) {
          this.#o.log.warn({ err }, 'lease renewal pass failed');
        }
      }
      // resolves early on abort (the loop re-checks it) and lets go of its listener each pass
      await sleep(this.intervalMs, signal, { onAbort: 'resolve' });
    }
  }

  async pass(signal?: AbortSignal): Promise<RenewPass> {
    const now = (this.#o.now ?? Date.now)();
    const leaseMs = (this.#o.leaseTtlSeconds || 300) * 1000;
    const out: RenewPass = { candidates: 0, elsewhere: 0, renewed: 0, gone: 0, errors: 0, deferred: 0, unproven: 0 };
    const due: { key: string; node: string; id: string }[] = [];
    const live = new Set<string>();
    const unproven = new Set<string>();
    for (const row of this.#o.cache.rows()) {
      const { entry, node } = row;
      const owner = parseOwnerRef(entry.claimRef, this.#o.refKey);
      if (!entry.id || !isUidOwner(owner) || owner.renewed !== true) continue;
      if (owner.proven !== true) {
        // served under the name it gives, but a lease kept alive by this control plane must be one it asked for
        const key = `${node}/${entry.id}`;
        unproven.add(key);
        out.unproven++;
        if (!this.#unproven.has(key)) {
          this.#unproven.add(key);
          this.#o.onUnproven?.();
          this.#o.log.warn(
            { node, sandboxId: entry.id, namespace: owner.namespace, name: owner.name },
            'not renewing a sandbox whose +renew claim reference this control plane did not write',
          );
        }
        continue;
      }
      const slash = row.key.indexOf('/');
      if (this.#o.renewsHere !== undefined && !this.#o.renewsHere(row.key.slice(0, slash), row.key.slice(slash + 1))) {
        out.elsewhere++;
        continue;
      }
      const key = `${node}/${entry.id}`;
      live.add(key);
      out.candidates++;
      const published = entry.deadline ? Date.parse(entry.deadline) : NaN;
      const ours = this.#renewedTo.get(key);
      if (ours !== undefined && Number.isFinite(published) && published >= ours) this.#renewedTo.delete(key);
      const deadline = Math.max(Number.isFinite(published) ? published : 0, ours ?? 0);
      if (deadline === 0) continue; // the node granted no deadline: nothing runs out
      let at = this.#spread.get(key);
      if (at === undefined) {
        at = renewalFraction(this.#o.rng);
        this.#spread.set(key, at);
      }
      // the lease that runs out at `deadline` was a whole lease long
      if (now >= leaseRenewAtMs(deadline - leaseMs, deadline, at)) due.push({ key, node, id: entry.id });
    }
    for (const k of this.#unproven) if (!unproven.has(k)) this.#unproven.delete(k);
    for (const k of this.#spread.keys()) {
      if (live.has(k)) continue;
      this.#spread.delete(k);
      this.#renewedTo.delete(k);
    }
    for (const d of due) {
      if (signal?.aborted) break;
      if (this.#bucket.take() > 0) {
        out.deferred = due.length - out.renewed - out.gone - out.errors;
        break;
      }
      try {
        const { deadline } = await this.#o.router
          .clientFor(d.node, 'renew', d.id)
          .renew(d.id, this.#o.leaseTtlSeconds, { signal: AbortSignal.timeout(10_000) });
        if (deadline) this.#renewedTo.set(d.key, deadline.getTime());
        out.renewed++;
      } catch (err) {
        if (isSandboxGone(err)) out.gone++;
        else {
          out.errors++;
          this.#o.log.warn({ err, node: d.node, sandboxId: d.id }, 'node lease renewal failed; retried next pass');
        }
      }
    }
    return out;
  }
}
