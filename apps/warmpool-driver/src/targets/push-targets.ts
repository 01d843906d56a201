import PQueue from 'p-queue';
import type { Registry } from 'prom-client';
import { counter, type Logger } from '@sandbox-scale/kube-runtime';
import { LIMITS } from '@sandbox-scale/scale-core';
import type { KnownNodeAddresses, NodeInfo, SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { withCarriedOver } from './carry-over';
import type { NodePoolSpec } from './plan-targets';

export type PushResult = { node: string; ok: true; info: NodeInfo; carried: number } | { node: string; ok: false; error: string };

export interface PushTarget {
  node: string;
  /** host:port from the node's NodeInventory. */
  address: string;
  pools: readonly NodePoolSpec[];
  /** resourceVersion of the node's NodeInventory as the driver saw it when composing this PUT (see node-drift.ts). */
  reportRv?: string;
  /** Send even though the node last accepted this very set: its report shows it drifted (see node-drift.ts). */
  repush?: boolean;
  /**
   * Set when `pools` is not the node's whole set (see carry-over.ts): the node's current set is
   * read (GET /v1/info) right before the PUT and its other keys are sent back unchanged, except
   * the `draining` key ids.
   */
  carryOver?: { draining: ReadonlySet<string> };
}

export interface TargetPusherOptions {
  clients: SandboxdClientSet;
  /**
   * The addresses the fleet token may be sent to: each advertised by exactly one known, non-stale
   * NodeInventory. A target's address is checked again right before its PUT, since the
   * inventory it came from may have turned Stale, or been joined by another claiming the same address.
   */
  known: KnownNodeAddresses;
  log: Logger;
  registry: Registry;
  concurrency?: number;
  timeoutMs?: number;
}

/**
 * PUT /v1/pools to each node whose composed set differs from the last one it accepted. The
 * daemon replaces its whole set, so the body is always the full set. At most 16 nodes in
 * flight, 10 s each; one failing node never stops the others and is retried next sync.
 */
export class TargetPusher {
  private readonly lastAccepted = new Map<string, string>();
  /** Node -> the NodeInventory resourceVersion seen when its last PUT was sent. */
  private readonly rvAtPut = new Map<string, string>();
  private readonly queue: PQueue;
  private readonly timeoutMs: number;
  private readonly results;
  private readonly repushes;
  private readonly refused;
  /** PUTs sent since start (read by the bench). */
  puts = 0;

  constructor(private readonly opts: TargetPusherOptions) {
    this.queue = new PQueue({ concurrency: opts.concurrency ?? LIMITS.warmPoolPutConcurrency });
    this.timeoutMs = opts.timeoutMs ?? LIMITS.warmPoolPutTimeoutMs;
    this.results = counter(opts.registry, 'sandbox_scale_warmpool_driver_pool_puts_total', 'PUT /v1/pools sent to nodes, by result.', [
      'result',
    ]);
    // No node label: the node is in the log line, and a per-node series would grow with the fleet.
    this.repushes = counter(
      opts.registry,
      'sandbox_scale_warmpool_driver_repushes_total',
      'Unchanged pool sets PUT again because a node reported a different set after the last PUT.',
      [],
    );
    this.refused = counter(
      opts.registry,
      'sandbox_scale_warmpool_driver_addresses_refused_total',
      'Pool sets not PUT because the node address is advertised by no known, non-stale NodeInventory or by more than one, by reason (unknown, stale, ambiguous).',
      ['reason'],
    );
  }

  /** The NodeInventory resourceVersion the last PUT to this node was composed against; undefined before any. */
  rvAtLastPut(node: string): string | undefined {
    return this.rvAtPut.get(node);
  }

  /** Whether the node's last accepted set equals this one (nothing to send). */
  isCurrent(t: PushTarget): boolean {
    return this.lastAccepted.get(t.node) === bodyOf(t);
  }

  /** Sends the changed sets; resolves with one result per node actually sent to. */
  async push(targets: readonly PushTarget[], signal?: AbortSignal): Promise<PushResult[]> {
    const changed = targets.filter((t) => t.repush === true || !this.isCurrent(t));
    const out = await Promise.all(changed.map((t) => this.queue.add(() => this.pushOne(t, signal))));
    return out.filter((r): r is PushResult => r !== undefined);
  }

  /** Forget nodes that left the fleet, so a returning node gets its set again. */
  retain(nodes: ReadonlySet<string>): void {
    for (const n of this.lastAccepted.keys()) if (!nodes.has(n)) this.lastAccepted.delete(n);
    for (const n of this.rvAtPut.keys()) if (!nodes.has(n)) this.rvAtPut.delete(n);
  }

  private async pushOne(t: PushTarget, signal?: AbortSignal): Promise<PushResult> {
    const known = this.opts.known.check(t.address);
    if ('refused' in known || known.node !== t.node) {
      const reason = 'refused' in known ? known.refused : 'ambiguous';
      this.refused.inc({ reason });
      this.opts.log.warn(
        { node: t.node, address: t.address, reason },
        'not sending the fleet token to an address no known, non-stale NodeInventory of this node advertises',
      );
      return { node: t.node, ok: false, error: `address refused (${reason})` };
    }
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const body = bodyOf(t);
    this.puts++;
    if (t.reportRv !== undefined) this.rvAtPut.set(t.node, t.reportRv);
    else this.rvAtPut.delete(t.node);
    if (t.repush === true && this.isCurrent(t)) {
      this.repushes.inc();
      this.opts.log.info(
        { node: t.node, address: t.address },
        'node reports a pool set other than the one it accepted (sandboxd restarted or another writer); PUT it again',
      );
    }
    try {
      const client = this.opts.clients.forNode(t.address);
      const opts = { signal: signal ? AbortSignal.any([signal, timeout]) : timeout };
      // Read as late as possible: the window in which another writer's change can be lost is
      // this GET-to-PUT round trip, not a publish interval of the NodeInventory.
      const pools = t.carryOver ? withCarriedOver(t.pools, (await client.info(opts)).pools, t.carryOver.draining) : t.pools;
      const info = await client.setPools(pools, opts);
      this.lastAccepted.set(t.node, body);
      this.results.inc({ result: 'ok' });
      return { node: t.node, ok: true, info, carried: pools.length - t.pools.length };
    } catch (err) {
      this.lastAccepted.delete(t.node);
      this.results.inc({ result: 'error' });
      this.opts.log.warn({ err, node: t.node }, 'PUT /v1/pools failed; the node keeps its previous set until the next sync');
      return { node: t.node, ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  }
}

/** What the driver decides for a node; carried-over keys are the node's own and never make a PUT. */
function bodyOf(t: PushTarget): string {
  return JSON.stringify([t.address, t.pools, t.carryOver !== undefined]);
}
