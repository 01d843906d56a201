import PQueue from 'p-queue';
import { setMaxListeners } from 'node:events';
import { retry, withDeadline, type BackoffOptions, type Sleep } from '@sandbox-scale/scale-core';
import type { Logger } from '@sandbox-scale/kube-runtime';
import type { Assignment, ClaimTarget } from '../gateway/assignment';
import { isForeignRecordTarget } from './record-errors';

/** Writes the Bound record of a delivery; idempotent, so the queue and the orphan pass may both call it. */
export interface BoundRecorder {
  recordBound(target: ClaimTarget, assignment: Assignment, signal?: AbortSignal): Promise<void>;
}

export type RecordOutcome = 'recorded' | 'failed' | 'refused' | 'deferred';

export interface RecordQueueOptions<T extends ClaimTarget = ClaimTarget> {
  recorder: { recordBound(target: T, assignment: Assignment, signal?: AbortSignal): Promise<void> };
  log: Logger;
  /** Records written at once; the rest wait, so a burst of deliveries never opens a write per delivery at once. */
  concurrency?: number;
  /** Tries per record, including the first; after the last the delivery is left to the orphan pass. */
  attempts?: number;
  backoff?: BackoffOptions;
  /** Bound on each attempt. */
  attemptTimeoutMs?: number;
  sleep?: Sleep;
  /**
   * Records held at once (queued and running), each with its token. A delivery that finds the
   * queue full is not recorded here (outcome `deferred`): the orphan pass records it from the
   * node's own list, so a burst neither grows memory without bound nor blocks the caller.
   */
  maxPending?: number;
  /** `refused`: the name is taken by an object that is not this delivery's (never retried). */
  onOutcome?: (outcome: RecordOutcome, target: T) => void;
}

export const DEFAULT_RECORD_QUEUE_MAX_PENDING = 10_000;

/**
 * The async Bound record: jobs live on the queue's lifetime, not the request's, so a caller
 * that already has its Assignment and went away does not cancel its record. Failures back off
 * and retry; one that still fails is left for the OrphanReconciler, which adopts it from the
 * node's own list. `drain()` waits for every job, so shutdown never drops a record it holds.
 */
export class RecordQueue<T extends ClaimTarget = ClaimTarget> {
  readonly #queue: PQueue;
  readonly #lifetime = new AbortController();
  readonly #opts: RecordQueueOptions<T>;
  #closed = false;
  #scheduled = 0;

  constructor(opts: RecordQueueOptions<T>) {
    this.#opts = opts;
    this.#queue = new PQueue({ concurrency: opts.concurrency ?? 16 });
    // each running record (and its retry's backoff sleep) listens on the lifetime signal while
    // it runs, and lets go when it ends: up to `concurrency` listeners is expected, not a leak
    setMaxListeners(0, this.#lifetime.signal);
  }

  /** Jobs accepted and not yet finished (about to be queued, queued or running). */
  get pending(): number {
    return this.#scheduled + this.#queue.size + this.#queue.pending;
  }

  /**
   * Queues the record and returns at once; false when it was left to the orphan pass instead
   * (the queue is closed or full).
   */
  enqueue(target: T, assignment: Assignment): boolean {
    const full = this.pending >= (this.#opts.maxPending ?? DEFAULT_RECORD_QUEUE_MAX_PENDING);
    if (this.#closed || full) {
      this.#opts.log.warn(
        { namespace: target.namespace, name: target.name, sandboxId: assignment.claimId },
        `record queue ${this.#closed ? 'closed' : 'full'}; the record is left to the OrphanReconciler`,
      );
      this.#opts.onOutcome?.('deferred', target);
      return false;
    }
    // queued on the next turn of the event loop: the caller's answer (the fast path's response)
    // goes out first, and the record's own start-up work is not paid on that path
    this.#scheduled++;
    setImmediate(() => {
      this.#scheduled--;
      void this.#queue.add(() => this.#run(target, assignment)).catch(() => undefined);
    });
    return true;
  }

  async #run(target: T, assignment: Assignment): Promise<void> {
    const o = this.#opts;
    const timeoutMs = o.attemptTimeoutMs ?? 10_000;
    try {
      await retry(
        (_attempt, signal) =>
          withDeadline(signal ?? this.#lifetime.signal, timeoutMs, (s) => o.recorder.recordBound(target, assignment, s)),
        {
          attempts: o.attempts ?? 5,
          ...(o.backoff ?? { baseMs: 200, maxMs: 5000, jitter: 0.2 }),
          signal: this.#lifetime.signal,
          ...(o.sleep ? { sleep: o.sleep } : {}),
          shouldRetry: (err) => !isForeignRecordTarget(err),
          onRetry: (err, attempt, delayMs) =>
            o.log.warn({ err, namespace: target.namespace, name: target.name, attempt, delayMs }, 'bound record failed; retrying'),
        },
      );
      o.onOutcome?.('recorded', target);
    } catch (err) {
      if (isForeignRecordTarget(err)) {
        o.onOutcome?.('refused', target);
        o.log.warn(
          { err, namespace: target.namespace, name: target.name, sandboxId: assignment.claimId, node: assignment.node },
          'bound record refused: the name belongs to another object; the delivery is not recorded on it',
        );
        return;
      }
      o.onOutcome?.('failed', target);
      o.log.error(
        { err, namespace: target.namespace, name: target.name, sandboxId: assignment.claimId, node: assignment.node },
        'bound record failed; orphan left for the OrphanReconciler',
      );
    }
  }

  /** Resolves when every queued and running record has finished (tests, graceful shutdown). */
  async drain(): Promise<void> {
    while (this.#scheduled > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    await this.#queue.onIdle();
  }

  /** Stops taking records, waits for the queued ones; `abort` also cancels their retries. */
  async close(opts: { abort?: boolean } = {}): Promise<void> {
    this.#closed = true;
    if (opts.abort) this.#lifetime.abort(new Error('record queue closed'));
    await this.drain();
  }
}
