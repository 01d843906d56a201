import type { Dispatcher } from 'undici';
import { normalizeBaseUrl, type AddressRefusal, type KnownNodeAddresses } from './addresses';
import { SandboxdClient } from './client';
import { createSandboxdAgent, type SandboxdAgentOptions } from './transport';

export interface SandboxdClientSetOptions extends SandboxdAgentOptions {
  /** The fleet (root) token every node client presents unless a call overrides it. */
  token?: string;
  /** Per-node root tokens, by the node's base URL (see SandboxdClientOptions.tokenFor); wins over `token`. */
  tokenFor?: (baseUrl: string) => string;
  /** Use this dispatcher instead of creating one (the set then does not close it). */
  dispatcher?: Dispatcher;
  keepAlive?: boolean;
  followRedirects?: boolean;
  /** Redirects are followed only to these inventories' addresses (see SandboxdClientOptions.known). */
  known?: KnownNodeAddresses;
  onRefused?: (reason: AddressRefusal) => void;
}

/**
 * One keep-alive dispatcher for the whole fleet and one client per node, created on first
 * use: sub-millisecond claims must not pay for TCP setup, and a fleet of hundreds of nodes
 * must not hold hundreds of pools.
 */
export class SandboxdClientSet {
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #clients = new Map<string, SandboxdClient>();
  readonly #token: string;
  readonly #tokenFor: ((baseUrl: string) => string) | undefined;
  readonly #keepAlive: boolean;
  readonly #follow: boolean;
  readonly #known: Pick<SandboxdClientSetOptions, 'known' | 'onRefused'>;

  constructor(opts: SandboxdClientSetOptions = {}) {
    this.#ownsDispatcher = opts.dispatcher === undefined;
    this.#dispatcher = opts.dispatcher ?? createSandboxdAgent(opts);
    this.#token = opts.token ?? '';
    this.#tokenFor = opts.tokenFor;
    this.#keepAlive = opts.keepAlive ?? true;
    this.#follow = opts.followRedirects ?? false;
    this.#known = { ...(opts.known ? { known: opts.known } : {}), ...(opts.onRefused ? { onRefused: opts.onRefused } : {}) };
  }

  /** The client of the node at `baseUrl` (`http://host:port` or `host:port`). */
  forNode(baseUrl: string): SandboxdClient {
    // looked up as given first: callers pass the same address on every claim, and normalising
    // it (two regular expressions) each time is work the claim path need not repeat
    const known = this.#clients.get(baseUrl);
    if (known !== undefined) return known;
    const key = normalizeBaseUrl(baseUrl);
    let client = this.#clients.get(key);
    if (client === undefined) {
      client = new SandboxdClient({
        baseUrl: key,
        token: this.#token,
        ...(this.#tokenFor ? { tokenFor: this.#tokenFor } : {}),
        dispatcher: this.#dispatcher,
        keepAlive: this.#keepAlive,
        followRedirects: this.#follow,
        ...this.#known,
      });
      this.#clients.set(key, client);
    }
    this.#clients.set(baseUrl, client);
    return client;
  }

  async close(): Promise<void> {
    this.#clients.clear();
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }
}
