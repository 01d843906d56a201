import { z } from 'zod';
import type { Rng } from './rng';
import type { KeyTable, SimKey } from './wire-key';

/** Verbs fault injection can target: one per route of the API. */
export const VERBS = [
  'claim',
  'release',
  'hibernate',
  'wake',
  'renew',
  'fork',
  'promote',
  'delete_template',
  'checkpoint',
  'checkpoint_claim',
  'checkpoints',
  'delete_checkpoint',
  'sandboxes',
  'sandbox',
  'stats',
  'owner',
  'info',
  'peers',
  'pools',
  'drain',
  'metrics',
  'exec',
  'agent',
  'ports',
] as const;
export type Verb = (typeof VERBS)[number];
const VerbSchema = z.enum(VERBS);

/** The daemon's 500 text per verb (`<verb> failed`, with its few irregular names). */
export const FAILURE_TEXT: Readonly<Record<Verb, string>> = {
  claim: 'provisioning failed',
  release: 'release failed',
  hibernate: 'hibernate failed',
  wake: 'wake failed',
  renew: 'renew failed',
  fork: 'fork failed',
  promote: 'promote failed',
  delete_template: 'delete template failed',
  checkpoint: 'checkpoint failed',
  checkpoint_claim: 'provisioning failed',
  checkpoints: 'list checkpoints failed',
  delete_checkpoint: 'delete checkpoint failed',
  sandboxes: 'list sandboxes failed',
  sandbox: 'get sandbox failed',
  stats: 'stats failed',
  owner: 'owner failed',
  info: 'info failed',
  peers: 'peers failed',
  pools: 'set pools failed',
  drain: 'drain failed',
  metrics: 'metrics failed',
  exec: 'exec failed',
  agent: 'agent relay failed',
  ports: 'port relay failed',
};

export const MALFORMED_MODES = ['invalid-json', 'wrong-shape', 'oversized'] as const;
export type MalformedMode = (typeof MALFORMED_MODES)[number];

/**
 * Faults of one node, settable by flag (`--faults`), by `POST /_sim/faults` and by tests.
 * - errorRate: probability of `500 <verb> failed` (no side effect).
 * - unavailable: forced `503` with `Retry-After: <seconds>`.
 * - latencyMs: added before every API request is handled.
 * - slow: added before a request of that verb is handled (ms), e.g. a claim that outlives the
 *   caller's timeout and still hands the VM over.
 * - partition: `hang` accepts the request and never answers; `close` drops the connection.
 * - malformed: the verb's success reply replaced by invalid JSON, a wrong shape or > 1 MiB.
 * - failProvision: provisions (claims, refill, golden builds) of these keys fail.
 * - failedSandboxes: sandbox ids whose guest has failed; their data-plane calls answer 409.
 */
export const FaultsSchema = z.object({
  errorRate: z.partialRecord(VerbSchema, z.number().min(0).max(1)).default({}),
  unavailable: z.partialRecord(VerbSchema, z.number().int().min(0)).default({}),
  latencyMs: z.number().min(0).default(0),
  slow: z.partialRecord(VerbSchema, z.number().min(0)).default({}),
  partition: z.enum(['none', 'hang', 'close']).default('none'),
  malformed: z.partialRecord(VerbSchema, z.enum(MALFORMED_MODES)).default({}),
  failProvision: z.array(z.object({ template: z.string().min(1), net: z.string().optional(), size: z.string().optional() })).default([]),
  failedSandboxes: z.array(z.string()).default([]),
});
export type Faults = z.infer<typeof FaultsSchema>;
export type FaultsInput = z.input<typeof FaultsSchema>;

export class FaultState {
  #faults: Faults = FaultsSchema.parse({});
  #failKeys = new Set<string>();
  #failed = new Set<string>();
  readonly #listeners: Array<(faults: Faults) => void> = [];

  constructor(
    private readonly keys: KeyTable,
    private readonly rng: Rng,
  ) {}

  get current(): Faults {
    return this.#faults;
  }

  /** Replaces every fault at once (validated; throws a ZodError on a bad shape). */
  set(input: FaultsInput): Faults {
    const faults = FaultsSchema.parse(input);
    this.#failKeys = new Set(faults.failProvision.map((k) => this.keys.parse(k.template, k.net, k.size).id));
    this.#failed = new Set(faults.failedSandboxes);
    this.#faults = faults;
    for (const fn of this.#listeners) fn(faults);
    return faults;
  }

  /** Called after every change (open relays follow a partition). */
  onChange(fn: (faults: Faults) => void): void {
    this.#listeners.push(fn);
  }

  isFailed(sandboxId: string): boolean {
    return this.#failed.has(sandboxId);
  }

  clear(): void {
    this.set({});
  }

  /** Draws against the verb's error rate. */
  shouldFail(verb: Verb): boolean {
    const rate = this.#faults.errorRate[verb] ?? 0;
    return rate > 0 && this.rng.next() < rate;
  }

  provisionFails(key: SimKey): boolean {
    return this.#failKeys.has(key.id);
  }
}
