import { createHmac } from 'node:crypto';
import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { normalizeBaseUrl, type AddressedInventory } from './addresses';
import { SandboxdClientSet, type SandboxdClientSetOptions } from './client-set';

/**
 * How the control plane authenticates to each node's sandboxd:
 * - `per-node`: every node has a root token of its own, derived from the fleet key and the node's
 *   name (nodeToken). The control plane holds the key and derives the token of the node it
 *   dials; a node holds only its own, so a node taken over cannot act as root on any other.
 * - `fleet`: every node's root token is the fleet token itself.
 */
export const NODE_TOKEN_MODES = ['per-node', 'fleet'] as const;
export type NodeTokenMode = (typeof NODE_TOKEN_MODES)[number];

/** Versioned, so a later derivation cannot collide with this one. */
const DERIVATION = 'sandbox-scale/sandboxd-node-token/v1';

/**
 * The root api_token of node `node`'s sandboxd under `fleetKey`: hex HMAC-SHA256 of the node's
 * name. The same as `printf 'sandbox-scale/sandboxd-node-token/v1\n%s' "$NODE" | openssl dgst
 * -sha256 -hmac "$FLEET_KEY"`, which is how a node is provisioned with it.
 */
export function nodeToken(fleetKey: string, node: string): string {
  if (fleetKey === '') throw new SandboxScaleError('a node token needs a non-empty fleet key');
  return createHmac('sha256', fleetKey).update(`${DERIVATION}\n${node}`).digest('hex');
}

/** No NodeInventory, or more than one, advertises the address: there is no node whose token to send. */
export class NoNodeTokenError extends SandboxScaleError {
  constructor(readonly address: string) {
    super(`no single NodeInventory advertises ${address}: no node token is sent there`);
  }
}

export function isNoNodeToken(err: unknown): boolean {
  return findInCauseChain(err, 'NoNodeTokenError') !== undefined;
}

/**
 * The token of the node at an address, from the inventories that advertise addresses: the node
 * named by the one inventory at that address (a Stale one too: its VMs are still released and
 * renewed). An address two inventories claim, or none, gets no token. Built from the informer
 * cache's list and rebuilt only when that list changes; tokens are derived once per node.
 */
export class NodeTokens {
  readonly #key: string;
  readonly #inventories: () => readonly AddressedInventory[];
  #seen: readonly AddressedInventory[] | undefined;
  /** Normalised base URL → node name, or null when more than one inventory claims it. */
  #byUrl = new Map<string, string | null>();
  readonly #tokens = new Map<string, string>();

  constructor(fleetKey: string, inventories: () => readonly AddressedInventory[]) {
    if (fleetKey === '') throw new SandboxScaleError('per-node sandboxd tokens need a fleet key');
    this.#key = fleetKey;
    this.#inventories = inventories;
  }

  /** The root token of the node at `baseUrl`; NoNodeTokenError when no single inventory advertises it. */
  forAddress = (baseUrl: string): string => {
    const list = this.#inventories();
    if (list !== this.#seen) this.#rebuild(list);
    const node = this.#byUrl.get(normalizeBaseUrl(baseUrl));
    if (node === undefined || node === null) throw new NoNodeTokenError(baseUrl);
    return this.forNode(node);
  };

  /** The root token of node `node`. */
  forNode(node: string): string {
    let t = this.#tokens.get(node);
    if (t === undefined) {
      t = nodeToken(this.#key, node);
      this.#tokens.set(node, t);
    }
    return t;
  }

  #rebuild(list: readonly AddressedInventory[]): void {
    const next = new Map<string, string | null>();
    for (const inv of list) {
      // the node's own object only, whose name is the node's (the chart's admission policy ties
      // both to the publisher's node-bound token): a node cannot have another's token sent to it
      if (!inv.address || !inv.node || inv.metadata?.name !== inv.node) continue;
      const key = normalizeBaseUrl(inv.address);
      const prior = next.get(key);
      // two nodes on one address: neither is sent a token there
      next.set(key, prior === undefined ? inv.node : null);
    }
    this.#byUrl = next;
    this.#seen = list;
  }
}

/** `--sandboxd-tokens` of the apps that call every node (claim-controller, sandbox-apiserver, warmpool-driver). */
export const sandboxdTokensFlag = z
  .enum(NODE_TOKEN_MODES)
  .default('fleet')
  .describe(
    "How nodes' sandboxd root tokens are made. per-node: each node's is derived from the fleet token (the key) and the node's name, and only that node holds it (the chart's default); fleet: every node's is the fleet token",
  );

export interface FleetClientsOptions extends Omit<SandboxdClientSetOptions, 'token' | 'tokenFor'> {
  /** The fleet token: every node's root token (`fleet`), or the key each node's is derived from (`per-node`). */
  fleetToken: string;
  mode: NodeTokenMode;
  /** The NodeInventories whose addresses name the nodes (the informer cache's list). */
  inventories: () => readonly AddressedInventory[];
}

/** The clients the control plane calls nodes with, each presenting that node's root token. */
export function fleetClients(o: FleetClientsOptions): SandboxdClientSet {
  const { fleetToken, mode, inventories, ...rest } = o;
  // no token at all: nothing to derive from, and every node call is refused by its node
  if (mode === 'fleet' || fleetToken === '') return new SandboxdClientSet({ ...rest, token: fleetToken });
  return new SandboxdClientSet({ ...rest, tokenFor: new NodeTokens(fleetToken, inventories).forAddress });
}
