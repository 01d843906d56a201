import { CONDITION_STATUS, CONDITION_TYPES } from '@sandbox-scale/scale-core';

/**
 * Node addresses: sandboxd hands out `host:port` (its advertise_addr) or a full origin
 * (client_advertise). A bare address inherits the scheme of the URL that was dialed.
 */

/** `http://host:port/` or bare `host:port` → `http://host:port` (no trailing slash). */
export function normalizeBaseUrl(base: string): string {
  const trimmed = base.trim().replace(/\/+$/, '');
  if (trimmed === '') throw new TypeError('sandboxd base URL is empty');
  return hasScheme(trimmed) ? trimmed : `http://${trimmed}`;
}

/** Resolves an address from a reply (redirect, owner_addr) against the node that sent it. */
export function resolveNodeAddr(addr: string, dialedUrl: string): string {
  const trimmed = addr.trim().replace(/\/+$/, '');
  if (trimmed === '') return dialedUrl;
  if (hasScheme(trimmed)) return trimmed;
  return `${new URL(dialedUrl).protocol}//${trimmed}`;
}

function hasScheme(s: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(s);
}

/** What the allowlist reads of a NodeInventory: its name, the address it advertises, whether it is Stale. */
export interface AddressedInventory {
  readonly metadata?: { readonly name?: string | undefined } | undefined;
  readonly node: string;
  readonly address?: string | undefined;
  readonly conditions?: readonly { readonly type: string; readonly status: string }[] | undefined;
}

/**
 * Why an address is not followed: no NodeInventory advertises it (`unknown`), only a Stale one
 * does (`stale`), or more than one inventory claims it (`ambiguous`: a node naming another's).
 */
export type AddressRefusal = 'unknown' | 'stale' | 'ambiguous';

/**
 * The only addresses the control plane sends the fleet token to: each one advertised by exactly
 * one known, non-stale NodeInventory. A redirect target or an owner address is whatever the node
 * that answered wrote, so without this a node (or anyone answering as one) could send claims and
 * the root token in a plain-HTTP header to any host. Built from the informer cache's list and
 * rebuilt only when that list changes (the cache hands out the same array until then).
 */
export class KnownNodeAddresses {
  readonly #inventories: () => readonly AddressedInventory[];
  #seen: readonly AddressedInventory[] | undefined;
  /** Normalised base URL → the node advertising it, or a refusal. */
  #byUrl = new Map<string, string | AddressRefusal>();

  constructor(inventories: () => readonly AddressedInventory[]) {
    this.#inventories = inventories;
  }

  /** The node advertising `url` (`host:port` or an origin), or why it is refused. */
  check(url: string): { node: string } | { refused: AddressRefusal } {
    const list = this.#inventories();
    if (list !== this.#seen) this.#rebuild(list);
    let key: string;
    try {
      key = normalizeBaseUrl(url);
    } catch {
      return { refused: 'unknown' };
    }
    const found = this.#byUrl.get(key);
    if (found === undefined) return { refused: 'unknown' };
    return found === 'stale' || found === 'ambiguous' ? { refused: found } : { node: found };
  }

  #rebuild(list: readonly AddressedInventory[]): void {
    const next = new Map<string, string | AddressRefusal>();
    for (const inv of list) {
      if (!inv.address) continue;
      const key = normalizeBaseUrl(inv.address);
      const stale = inv.conditions?.some((c) => c.type === CONDITION_TYPES.stale && c.status === CONDITION_STATUS.true) ?? false;
      const prior = next.get(key);
      // two inventories on one address: neither is trusted with it
      next.set(key, prior !== undefined ? 'ambiguous' : stale ? 'stale' : inv.metadata?.name || inv.node);
    }
    this.#byUrl = next;
    this.#seen = list;
  }
}
