import { ClaimRoutingNotConfiguredError, SandboxScaleError } from '@sandbox-scale/scale-core';
import type { SandboxdClient, SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import type { SandboxCache } from './sandbox-cache';

export class NodeRoutingError extends SandboxScaleError {}

/**
 * The sandboxd client of a node, by its NodeInventory address, with the fleet token.
 * Without a token there is no client set: every write fails closed.
 */
export class NodeRouter {
  constructor(
    private readonly cache: SandboxCache,
    private readonly clients: SandboxdClientSet | undefined,
  ) {}

  get configured(): boolean {
    return this.clients !== undefined;
  }

  /** Throws when writes are not configured (no fleet token). */
  assertConfigured(): SandboxdClientSet {
    if (this.clients === undefined) {
      throw new ClaimRoutingNotConfiguredError(
        'sandbox-apiserver has no sandboxd fleet token (--fleet-token-file or SANDBOX_SCALE_FLEET_TOKEN): writes to sandboxd are refused',
      );
    }
    return this.clients;
  }

  clientFor(node: string, verb: string, id: string): SandboxdClient {
    const clients = this.assertConfigured();
    if (node === '') throw new NodeRoutingError(`${verb} of ${id} requires an owning node`);
    const inv = this.cache.inventory(node);
    if (inv === undefined) throw new NodeRoutingError(`resolve node "${node}" for ${verb} of ${id}: no inventory published`);
    if (!inv.address) throw new NodeRoutingError(`node "${node}" advertises no sandboxd address; cannot ${verb} ${id}`);
    return clients.forNode(inv.address);
  }

  clientAt(address: string): SandboxdClient {
    return this.assertConfigured().forNode(address);
  }
}
