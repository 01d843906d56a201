import type { Logger } from '@sandbox-scale/kube-runtime';
import { Counter, Histogram, type Registry } from 'prom-client';
import { statusOf } from '../http/status';

/** What a data-plane request did; the metric label, so a bounded set. */
export const DATA_PLANE_OPS = ['exec', 'read', 'list', 'stat', 'write', 'delete', 'portforward'] as const;
export type DataPlaneOp = (typeof DATA_PLANE_OPS)[number];

/** The operations that change a sandbox or run in it: each gets an audit line. */
const AUDITED: ReadonlySet<DataPlaneOp> = new Set(['exec', 'write', 'delete', 'portforward']);

/**
 * The facts of one request an audit line holds: who, which sandbox, and what (the argv and the
 * env keys of an exec, the path of a file, the port). Never file contents, env values or tokens.
 */
export interface AuditFields {
  readonly user: string;
  readonly namespace: string;
  readonly name: string;
  readonly argv?: readonly string[];
  readonly envKeys?: readonly string[];
  readonly cwd?: string;
  readonly timeoutSeconds?: number;
  readonly path?: string;
  readonly recursive?: boolean;
  readonly tar?: boolean;
  readonly port?: number;
}

/** What the call adds once it has run: where the sandbox was, how much moved, how it ended. */
export interface AuditOutcome {
  /** The operation, when the call finds it is another than it began as (a read of a directory is a list). */
  op?: DataPlaneOp;
  node?: string;
  sandboxId?: string;
  bytes?: number;
  exitCode?: number;
}

/**
 * The audit log and the metrics of the data plane: every request counted by operation and
 * HTTP code, its duration observed, and each exec, file write or delete and port-forward logged
 * once (info) with the caller, the sandbox and what was asked.
 */
export class DataPlaneAudit {
  readonly #log: Logger;
  readonly #total: Counter<'op' | 'code'>;
  readonly #duration: Histogram<'op'>;
  readonly #bytes: Counter<'op'>;

  constructor(log: Logger, registry: Registry) {
    this.#log = log;
    this.#total = new Counter({
      name: 'sandbox_scale_apiserver_data_plane_requests_total',
      help: 'Data-plane requests on sandboxes (exec, files, portforward) by operation and HTTP code',
      labelNames: ['op', 'code'],
      registers: [registry],
    });
    this.#duration = new Histogram({
      name: 'sandbox_scale_apiserver_data_plane_request_duration_seconds',
      help: 'Data-plane request latency by operation (a file transfer until its last byte; a port-forward until it is relayed)',
      labelNames: ['op'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120],
      registers: [registry],
    });
    this.#bytes = new Counter({
      name: 'sandbox_scale_apiserver_data_plane_file_bytes_total',
      help: 'File bytes moved by the files subresource (read, write), tar streams included',
      labelNames: ['op'],
      registers: [registry],
    });
  }

  /**
   * Runs one data-plane request and records it: the code is the reply's (success) or the Status
   * the failure becomes. `outcome` is filled in by the call as it learns the node, the bytes moved…
   */
  async observe<T>(asked: DataPlaneOp, fields: AuditFields, fn: (outcome: AuditOutcome) => Promise<T>, successCode = 200): Promise<T> {
    const began = process.hrtime.bigint();
    const outcome: AuditOutcome = {};
    let code = successCode;
    try {
      return await fn(outcome);
    } catch (err) {
      code = statusOf(err).code;
      throw err;
    } finally {
      const seconds = Number(process.hrtime.bigint() - began) / 1e9;
      const op = outcome.op ?? asked;
      this.#total.inc({ op, code: String(code) });
      this.#duration.observe({ op }, seconds);
      if ((op === 'read' || op === 'write') && outcome.bytes !== undefined) this.#bytes.inc({ op }, outcome.bytes);
      if (AUDITED.has(op))
        this.#log.info({ op, ...fields, ...outcome, code, durationMs: Math.round(seconds * 1000) }, 'sandbox data plane');
    }
  }
}
