import { StatusError } from '@sandbox-scale/scale-core';

export interface InflightCaps {
  /** Open watches of all callers together. */
  readonly maxWatches: number;
  /** Open watches of one identity. */
  readonly maxWatchesPerUser: number;
  /** Requests of one identity being served at once, watches not included. */
  readonly maxRequestsPerUser: number;
}

export const DEFAULT_INFLIGHT_CAPS: InflightCaps = { maxWatches: 4096, maxWatchesPerUser: 256, maxRequestsPerUser: 400 };

function tooMany(what: string): StatusError {
  return new StatusError('TooManyRequests', `too many ${what}, please try again later`, { retryAfterSeconds: 1 });
}

/**
 * Concurrency caps per identity and overall, so one caller (or many idle watches) cannot hold
 * the server's memory and sockets: past a cap the request is a 429 with Retry-After, as
 * kube-apiserver's max-in-flight filter answers.
 */
export class InflightLimits {
  #watches = 0;
  readonly #watchesOf = new Map<string, number>();
  readonly #requestsOf = new Map<string, number>();

  constructor(private readonly caps: InflightCaps = DEFAULT_INFLIGHT_CAPS) {}

  /** Takes a slot for `user` or throws 429; the returned release is idempotent. */
  acquire(user: string, watch: boolean): () => void {
    const perUser = watch ? this.#watchesOf : this.#requestsOf;
    const held = perUser.get(user) ?? 0;
    if (watch) {
      if (this.#watches >= this.caps.maxWatches) throw tooMany('watches');
      if (held >= this.caps.maxWatchesPerUser) throw tooMany(`watches of user "${user}"`);
    } else if (held >= this.caps.maxRequestsPerUser) throw tooMany(`concurrent requests of user "${user}"`);
    perUser.set(user, held + 1);
    if (watch) this.#watches++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (perUser.get(user) ?? 1) - 1;
      if (now <= 0) perUser.delete(user);
      else perUser.set(user, now);
      if (watch) this.#watches--;
    };
  }

  get watches(): number {
    return this.#watches;
  }

  /** Identities holding a slot; entries go when their last slot does, so the maps stay bounded by live requests. */
  get identities(): number {
    return new Set([...this.#watchesOf.keys(), ...this.#requestsOf.keys()]).size;
  }
}
