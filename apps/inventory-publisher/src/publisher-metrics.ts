import { counter, gauge } from '@sandbox-scale/kube-runtime';
import type { Registry } from 'prom-client';
import type { NoticeResult } from './node-notifier';

export type PublishResult = 'applied' | 'unchanged' | 'stale' | 'failed';

export interface PublisherMetrics {
  publish(result: PublishResult): void;
  stale(isStale: boolean): void;
  entries(n: number): void;
  /** sandboxd was read (the inventory is current as of now). */
  fresh(atMs: number): void;
}

/** Labels are bounded: one publisher per process, so the node is not a label. */
export function publisherMetrics(registry: Registry): PublisherMetrics {
  const publishes = counter(
    registry,
    'sandbox_scale_inventory_publisher_publishes_total',
    'Publish ticks, by result (applied, unchanged, stale, failed).',
    ['result'],
  );
  const stale = gauge(
    registry,
    'sandbox_scale_inventory_publisher_stale',
    '1 while sandboxd cannot be read and the NodeInventory is marked Stale.',
    [],
  );
  const entries = gauge(registry, 'sandbox_scale_inventory_publisher_entries', 'Live sandboxes in the last published NodeInventory.', []);
  // an alert on `time() - this` catches a publisher that stopped ticking, which the stale flag cannot
  const freshAt = gauge(
    registry,
    'sandbox_scale_inventory_publisher_last_fresh_timestamp_seconds',
    'Unix time of the last successful read of sandboxd (0 before the first).',
    [],
  );
  stale.set(0);
  freshAt.set(0);
  return {
    publish: (result) => publishes.inc({ result }),
    stale: (s) => stale.set(s ? 1 : 0),
    entries: (n) => entries.set(n),
    fresh: (atMs) => freshAt.set(atMs / 1000),
  };
}

/** Node notices to sandbox-apiserver replicas, by how each ended (applied, ignored, full, conflict, failed). */
export function noticeMetrics(registry: Registry): (result: NoticeResult) => void {
  const notices = counter(
    registry,
    'sandbox_scale_inventory_publisher_notices_total',
    'Change notices sent to sandbox-apiserver replicas between publishes, by result (applied, ignored, full, conflict, failed).',
    ['result'],
  );
  return (result) => notices.inc({ result });
}
