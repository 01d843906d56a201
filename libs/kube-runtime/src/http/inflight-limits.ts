import { StatusError } from '@sandbox-scale/scale-core';

export interface InflightCaps {
  /** Open watches of all callers together. */
  readonly maxWatches: number;
  /** Open watches of one identity. */
  readonly maxWatchesPerUser: number;
  /**
   * Open watches in one namespace, of every identity together: a tenant's ServiceAccounts share
   * it, so one namespace cannot fill the overall cap by minting identities.
   */
  readonly maxWatchesPerNamespace: number;
  /** Requests of one identity being served at once, watches not included. */
  readonly maxRequestsPerUser: number;
  /**
   * Streams (exec, file transfers, port-forwards: requests as long as their callers make them)
   * of all callers together.
   */
  readonly maxStreams: number;
  /** Streams of one namespace's sandboxes, every identity together, as watches. */
  readonly maxStreamsPerNamespace: number;
}

export const DEFAULT_INFLIGHT_CAPS: InflightCaps = {
  maxWatches: 4096,
  maxWatchesPerUser: 256,
  maxWatchesPerNamespace: 1024,
  maxRequestsPerUser: 400,
  maxStreams: 2048,
  maxStreamsPerNamespace: 256,
};

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
  readonly #watchesIn = new Map<string, number>();
  readonly #requestsOf = new Map<string, number>();
  #streams = 0;
  readonly #streamsIn = new Map<string, number>();

  constructor(private readonly caps: InflightCaps = DEFAULT_INFLIGHT_CAPS) {}

  /**
   * Takes a slot for `user` or throws 429; the returned release is idempotent. A watch of one
   * namespace (`namespace` set) also takes a slot of that namespace; one across all namespaces
   * counts against the user and overall caps only.
   */
  acquire(user: string, watch: boolean, namespace?: string): () => void {
    const perUser = watch ? this.#watchesOf : this.#requestsOf;
    const held = perUser.get(user) ?? 0;
    const inNamespace = watch && namespace ? namespace : undefined;
    if (watch) {
      if (this.#watches >= this.caps.maxWatches) throw tooMany('watches');
      if (held >= this.caps.maxWatchesPerUser) throw tooMany(`watches of user "${user}"`);
      if (inNamespace !== undefined && (this.#watchesIn.get(inNamespace) ?? 0) >= this.caps.maxWatchesPerNamespace)
        throw tooMany(`watches in namespace "${inNamespace}"`);
    } else if (held >= this.caps.maxRequestsPerUser) throw tooMany(`concurrent requests of user "${user}"`);
    perUser.set(user, held + 1);
    if (inNamespace !== undefined) this.#watchesIn.set(inNamespace, (this.#watchesIn.get(inNamespace) ?? 0) + 1);
    if (watch) this.#watches++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(perUser, user);
      if (inNamespace !== undefined) decrement(this.#watchesIn, inNamespace);
      if (watch) this.#watches--;
    };
  }

  /**
   * A stream's slot, beside the request slot its user holds already: one of the streams overall
   * and of the namespace, so one namespace (however many ServiceAccounts it mints) leaves the rest
   * of the streams to every other. Taken once the caller is allowed, so a caller refused for the
   * namespace never holds one of its slots. Throws 429 past either cap; the release is idempotent.
   */
  acquireStream(namespace: string): () => void {
    if (this.#streams >= this.caps.maxStreams) throw tooMany('streams (exec, files, port-forwards)');
    if ((this.#streamsIn.get(namespace) ?? 0) >= this.caps.maxStreamsPerNamespace)
      throw tooMany(`streams (exec, files, port-forwards) in namespace "${namespace}"`);
    this.#streams++;
    this.#streamsIn.set(namespace, (this.#streamsIn.get(namespace) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#streams--;
      decrement(this.#streamsIn, namespace);
    };
  }

  get streams(): number {
    return this.#streams;
  }

  get watches(): number {
    return this.#watches;
  }

  /** Identities holding a slot; entries go when their last slot does, so the maps stay bounded by live requests. */
  get identities(): number {
    return new Set([...this.#watchesOf.keys(), ...this.#requestsOf.keys()]).size;
  }

  /** Namespaces holding a watch or a stream slot (entries go with their last one). */
  get namespaces(): number {
    return new Set([...this.#watchesIn.keys(), ...this.#streamsIn.keys()]).size;
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const now = (counts.get(key) ?? 1) - 1;
  if (now <= 0) counts.delete(key);
  else counts.set(key, now);
}
