import { TtlLru, untilAborted } from '@sandbox-scale/kube-runtime';
import { NotFoundError, StatusError } from '@sandbox-scale/scale-core';
import { isNotFound as isSandboxdMissing, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { actionable, SANDBOX_RESOURCE, type SandboxLocation } from '../storage/sandbox-storage';

/** How long a sandbox token read from its node is reused. */
export const TOKEN_TTL_MS = 30_000;

/** Tokens held at once; the oldest go first past it. */
export const TOKEN_CACHE_MAX = 100_000;

/** How long the read of one token from its node may take. */
const TOKEN_READ_TIMEOUT_MS = 10_000;

/** What a data-plane call needs to reach one sandbox: its node's client, its id there and its own token. */
export interface SandboxTarget {
  readonly client: SandboxdClient;
  readonly id: string;
  readonly token: string;
  readonly node: string;
}

/** The reads SandboxAccess makes of the served sandboxes (SandboxStorage is one). */
export interface SandboxLocator {
  locate(namespace: string, name: string): Promise<SandboxLocation>;
  readonly router: { clientFor(node: string, verb: string, id: string): SandboxdClient };
}

export interface SandboxAccessOptions {
  readonly ttlMs?: number;
  readonly maxEntries?: number;
  /** Milliseconds now; injected so expiry is tested without waiting. */
  readonly now?: () => number;
}

/**
 * The way from a served sandbox (namespace/name) to its data plane on its node. The sandbox's
 * own token is read from the node by id with the fleet (root) token and kept in this process
 * only, briefly: it is never part of a reply, a log line, an event or a metric label.
 */
export class SandboxAccess {
  readonly #locator: SandboxLocator;
  /** By node and id. */
  readonly #tokens: TtlLru<string, string>;
  /** Reads under way, shared by concurrent callers of the same sandbox. */
  readonly #reading = new Map<string, Promise<string>>();

  constructor(locator: SandboxLocator, opts: SandboxAccessOptions = {}) {
    this.#locator = locator;
    this.#tokens = new TtlLru(opts.maxEntries ?? TOKEN_CACHE_MAX, opts.ttlMs ?? TOKEN_TTL_MS, opts.now ?? Date.now);
  }

  /**
   * Locates the sandbox and reads its token (from the cache while it is fresh). NotFound when no
   * sandbox is served under the name or its node no longer knows it; a sandbox served without a
   * claim id is refused, as the lifecycle verbs refuse it: the node is only ever asked by id.
   */
  async resolve(namespace: string, name: string, signal?: AbortSignal): Promise<SandboxTarget> {
    signal?.throwIfAborted();
    const loc = actionable(await this.#locator.locate(namespace, name), namespace, name, 'exec, files, port-forward and the router');
    if (loc.claimId === '')
      throw new StatusError('InternalError', `sandbox ${namespace}/${name} carries no claim id; refusing to reach it by name`);
    const client = this.#locator.router.clientFor(loc.node, 'reach', loc.claimId);
    const token = await this.#tokenOf(client, loc.node, loc.claimId, name, signal);
    return { client, id: loc.claimId, token, node: loc.node };
  }

  /** Drops the token of a sandbox its node answered 404 for (released, reaped, or not the token it holds). */
  forget(node: string, id: string): void {
    this.#tokens.delete(keyOf(node, id));
  }

  /** Tokens held now (for tests and the cache bound). */
  get size(): number {
    return this.#tokens.size;
  }

  async #tokenOf(client: SandboxdClient, node: string, id: string, name: string, signal?: AbortSignal): Promise<string> {
    const key = keyOf(node, id);
    const hit = this.#tokens.get(key);
    if (hit !== undefined) return hit;
    let reading = this.#reading.get(key);
    if (reading === undefined) {
      // one read per sandbox however many callers wait: bounded by its own deadline, not by the
      // first caller's signal, so a caller that gives up does not fail the others
      reading = this.#read(client, node, id, name).finally(() => this.#reading.delete(key));
      this.#reading.set(key, reading);
    }
    return signal === undefined ? reading : untilAborted(reading, signal, (reason) => reason as Error);
  }

  async #read(client: SandboxdClient, node: string, id: string, name: string): Promise<string> {
    let token: string | undefined;
    try {
      token = (await client.sandbox(id, { signal: AbortSignal.timeout(TOKEN_READ_TIMEOUT_MS) })).token;
    } catch (err) {
      if (isSandboxdMissing(err)) {
        this.forget(node, id);
        throw new NotFoundError(SANDBOX_RESOURCE, name, { cause: err });
      }
      throw err;
    }
    // an open node (no api_token) never tells a token, and its sandbox-scoped verbs still need one
    if (token === undefined || token === '')
      throw new StatusError('InternalError', `node ${node} gives no token for sandbox ${id}: it runs without an api_token`);
    this.#tokens.set(keyOf(node, id), token);
    return token;
  }
}

const keyOf = (node: string, id: string): string => `${node}\u0000${id}`;
