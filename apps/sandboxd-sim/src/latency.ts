import { z } from 'zod';
import type { Rng } from './rng';

/** A latency distribution: log-normal through p50 and p90, clamped at max (milliseconds). */
export const DistSchema = z.object({
  p50: z.number().nonnegative(),
  p90: z.number().nonnegative(),
  max: z.number().nonnegative(),
});
export type Dist = z.infer<typeof DistSchema>;

/**
 * Defaults are sandboxd's published bare-metal figures. Warm claims are
 * an ownership transfer below timer resolution, so they carry no artificial delay.
 */
export const LatencyProfileSchema = z.object({
  clone: DistSchema.default({ p50: 32, p90: 40, max: 48 }),
  cold: DistSchema.default({ p50: 350, p90: 400, max: 414 }),
  hibernate: DistSchema.default({ p50: 220, p90: 260, max: 270 }),
  wake: DistSchema.default({ p50: 60, p90: 67, max: 190 }),
  release: DistSchema.default({ p50: 3, p90: 5, max: 8 }),
  goldenBuildMs: z.number().nonnegative().default(20_000),
  /** Each concurrent provision slows a clone by this fraction (16 in flight ≈ 3.7×, as measured). */
  inflightSlowdown: z.number().nonnegative().default(0.18),
  /** Readiness limits after which a provision fails (`500 provisioning failed`). */
  cloneReadyLimitMs: z.number().positive().default(15_000),
  coldReadyLimitMs: z.number().positive().default(90_000),
});
export type LatencyProfile = z.infer<typeof LatencyProfileSchema>;
export type LatencyProfileInput = z.input<typeof LatencyProfileSchema>;

export type LatencyOp = 'clone' | 'cold' | 'hibernate' | 'wake' | 'release';

/** Nested virtualisation multiplies VM-lifecycle costs by about 2.4. */
export const NESTED_FACTOR = 2.4;

const Z90 = 1.2815515655446004;

export class LatencyModel {
  readonly #profile: LatencyProfile;
  readonly #speed: number;
  readonly #lifecycleFactor: number;
  readonly #rng: Rng;

  constructor(opts: { profile: LatencyProfile; speed: number; nested: boolean; rng: Rng }) {
    this.#profile = opts.profile;
    this.#speed = opts.speed;
    this.#lifecycleFactor = opts.nested ? NESTED_FACTOR : 1;
    this.#rng = opts.rng;
  }

  get profile(): LatencyProfile {
    return this.#profile;
  }

  /** Milliseconds for one operation; `inflight` other provisions slow clones and cold boots. */
  sample(op: LatencyOp, inflight = 0): number {
    if (this.#speed === 0) return 0;
    const d = this.#profile[op];
    const sigma = d.p90 > d.p50 && d.p50 > 0 ? Math.log(d.p90 / d.p50) / Z90 : 0;
    let ms = Math.min(d.p50 * Math.exp(sigma * this.#rng.normal()), d.max);
    if (op === 'clone' || op === 'cold') ms *= 1 + this.#profile.inflightSlowdown * Math.max(0, inflight);
    return ms * this.#lifecycleFactor * this.#speed;
  }

  goldenBuildMs(): number {
    return this.#profile.goldenBuildMs * this.#lifecycleFactor * this.#speed;
  }

  /** Readiness limits are the daemon's, in real time: scaled by speed like everything else. */
  readyLimitMs(op: 'clone' | 'cold'): number {
    return (op === 'clone' ? this.#profile.cloneReadyLimitMs : this.#profile.coldReadyLimitMs) * this.#speed;
  }
}
