import PQueue from 'p-queue';
import { retry, type BackoffOptions, type Sleep } from '@sandbox-scale/scale-core';
import type { Logger } from '@sandbox-scale/kube-runtime';
import type { Assignment, BoundRecorder, ClaimTarget } from './assignment';

export interface RecordQueueOptions {
  recorder: BoundRecorder;
  log: Logger;
  /** Records written at once; the rest wait (the reference's fan-out is unbounded, §13.16). */
  concurrency?: number;
  /** Tries per record, including the first (the reference tries once). */
  attempts?: number;
  backoff?: BackoffOptions;
  /** Bound on each attempt. */
  attemptTimeoutMs?: number;
  sleep?: Sleep;
  onOutcome?: (outcome: 'recorded' | 'failed') => void;
}

/**
 * The async Bound record: jobs live on the queue's lifetime, not the request's, so a caller
 * that already has its Assignment and went away does not cancel its record. Failures back off
 * and retry; one that still fails is left for the OrphanReconciler, which adopts it from the
 * node's own list. `drain()` waits for every job, so shutdown never drops a record it holds.
 */
export class RecordQueue {
  readonly #queue: PQueue;
  readonly #lifetime = new AbortController();
  readonly #opts: RecordQueueOptions;
  #closed = false;

  constructor(opts: RecordQueueOptions) {
    this.#opts = opts;
    this.#queue = new PQueue({ concurrency: opts.concurrency ?? 16 });
  }

  /** Jobs queued or running. */
  get pending(): number {
    return this.#queue.size + this.#queue.pending;
  }

  /** Queues the record and returns at once. After close() the record is left to the orphan pass. */
  enqueue(target: ClaimTarget, assignment: Assignment): void {
    if (this.#closed) {
      this.#opts.log.warn({ namespace: target.namespace, name: target.name, sandboxId: assignment.claimId }, 'record queue closed; orphan left for the OrphanReconciler');
      return;
    }
    void this.#queue.add(() => this.#run(target, assignment)).catch(() => undefined);
  }

  async #run(target: ClaimTarget, assignment: Assignment): Promise<void> {
    const o = this.#opts;
    const timeoutMs = o.attemptTimeoutMs ?? 10_000;
    try {
      await retry(
        (_attempt, signal) => o.recorder.recordBound(target, assignment, AbortSignal.any([signal ?? this.#lifetime.signal, AbortSignal.timeout(timeoutMs)])),
        {
          attempts: o.attempts ?? 5,
          ...(o.backoff ?? { baseMs: 200, maxMs: 5000, jitter: 0.2 }),
          signal: this.#lifetime.signal,
          ...(o.sleep ? { sleep: o.sleep } : {}),
          onRetry: (err, attempt, delayMs) => o.log.warn({ err, namespace: target.namespace, name: target.name, attempt, delayMs }, 'bound record failed; retrying'),
        },
      );
      o.onOutcome?.('recorded');
    } catch (err) {
      o.onOutcome?.('failed');
      o.log.error({ err, namespace: target.namespace, name: target.name, sandboxId: assignment.claimId, node: assignment.node }, 'bound record failed; orphan left for the OrphanReconciler');
    }
  }

  /** Resolves when every queued and running record has finished (tests, graceful shutdown). */
  async drain(): Promise<void> {
    await this.#queue.onIdle();
  }

  /** Stops taking records, waits for the queued ones; `abort` also cancels their retries. */
  async close(opts: { abort?: boolean } = {}): Promise<void> {
    this.#closed = true;
    if (opts.abort) this.#lifetime.abort(new Error('record queue closed'));
    await this.drain();
  }
}
