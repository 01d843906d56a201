import type { IncomingMessage, ServerResponse } from 'node:http';
import { counter, histogram, readRequestBody, sendJson, type DelegatedAuth, type Logger } from '@sandbox-scale/kube-runtime';
import {
  ConflictError,
  InvalidError,
  MAX_NOTICE_BYTES,
  NodeNoticeSchema,
  StatusError,
  type NodeInventory,
} from '@sandbox-scale/scale-core';
import type { Registry } from 'prom-client';
import { authenticatePublisher, decideNotice } from './notice-auth';
import { MAX_SEQ_AHEAD_MS, mergeNotice, seqAhead, supersede } from './node-view';

/** The part of the sandbox cache notices act on. */
export interface NodeViewCache {
  inventory(node: string): NodeInventory | undefined;
  upsertInventory(inv: NodeInventory): void;
  admit: (next: NodeInventory, current: NodeInventory | undefined) => NodeInventory;
}

export interface NodeNoticesOptions {
  readonly cache: NodeViewCache;
  readonly auth: Pick<DelegatedAuth, 'authenticateToken'>;
  /** `system:serviceaccount:<namespace>:<name>` of the chart's inventory-publisher; the only caller accepted. */
  readonly publisher: string;
  readonly log: Logger;
  readonly registry?: Registry;
}

/**
 * Serves POST NODE_NOTICE_PATH (docs/adr/0007): an inventory-publisher tells of a change on its
 * node, and this replica serves it at once as the node's newest view (the watch events go out
 * as the view is applied), until a publish at least as new supersedes it. Nothing is written
 * to etcd. Answers `{applied}`, 409 for a delta over a view older than its base, or a Status.
 */
export class NodeNotices {
  readonly #count: ((result: string) => void) | undefined;
  readonly #age: ((seconds: number) => void) | undefined;

  constructor(private readonly o: NodeNoticesOptions) {
    // a publish older than a notice must not take the notice's entries back
    o.cache.admit = supersede;
    if (o.registry !== undefined) {
      const c = counter(
        o.registry,
        'sandbox_scale_apiserver_node_notices_total',
        'Node change notices from inventory-publishers, by result (applied, ignored, conflict).',
        ['result'],
      );
      this.#count = (result) => c.inc({ result });
      // the node's read time is its wall clock: across hosts this includes their clock skew
      const h = histogram(
        o.registry,
        'sandbox_scale_apiserver_node_notice_age_seconds',
        "From the node's read of sandboxd to its notice applied here (watch events sent).",
        [],
        [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      );
      this.#age = (seconds) => h.observe(Math.max(0, seconds));
    }
  }

  async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') throw new StatusError('MethodNotAllowed', `${req.method ?? ''} is not supported on the notice endpoint`);
    // who calls is settled before the body is read: a stranger's body is never parsed
    const user = await authenticatePublisher(req, this.o.auth, this.o.publisher);
    const parsed = NodeNoticeSchema.safeParse(await readRequestBody(req, { maxBytes: MAX_NOTICE_BYTES }));
    if (!parsed.success)
      throw new InvalidError(
        { group: 'internal.sandbox-scale', kind: 'NodeNotice' },
        '',
        parsed.error.issues.slice(0, 10).map((i) => ({ reason: 'FieldValueInvalid', field: i.path.join('.'), message: i.message })),
      );
    const notice = parsed.data;
    for (const [field, seq] of [
      ['seq', notice.seq],
      ['base', notice.base],
    ] as const)
      if (seq !== undefined && seqAhead(seq))
        throw new InvalidError({ group: 'internal.sandbox-scale', kind: 'NodeNotice' }, notice.node, [
          {
            reason: 'FieldValueInvalid',
            field,
            message: `is more than ${MAX_SEQ_AHEAD_MS / 60_000}m ahead of this server's clock: a node's read sequence is its read time in milliseconds`,
          },
        ]);
    const d = decideNotice(user, this.o.publisher, notice.node);
    if (!d.allowed) throw new StatusError('Forbidden', `forbidden: ${d.reason}`);
    const merged = mergeNotice(this.o.cache.inventory(notice.node), notice);
    this.#count?.(merged.kind);
    if (merged.kind === 'conflict')
      throw new ConflictError(
        `the view of node "${notice.node}" held here (read ${merged.viewSeq}) predates the notice's base; send the whole set`,
      );
    if (merged.kind === 'applied') {
      this.o.cache.upsertInventory(merged.view);
      this.#age?.((Date.now() - notice.seq) / 1000);
    }
    this.o.log.debug({ node: notice.node, seq: notice.seq, result: merged.kind }, 'node notice');
    sendJson(res, 200, { applied: merged.kind === 'applied' });
  }
}
