import type { Logger } from '@sandbox-scale/kube-runtime';
import { CapacityLedger, ClaimIndex, RESOURCES, type Rng } from '@sandbox-scale/scale-core';
import type { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { WatchHub } from '../watch/watch-hub';
import { SandboxCreator } from './create-sandbox';
import { DEFAULT_LEASE_TTL_SECONDS, LeasePolicy } from './lease-policy';
import { LifecycleStorage } from './lifecycle-storage';
import { NodeRouter } from './node-router';
import { Revisions } from './revisions';
import { SandboxStorage } from './sandbox-storage';
import { SandboxView } from './sandbox-view';
import type { UserMetadataStore } from './user-metadata';

/** Everything one served resource needs; the server mounts it by resource name. */
export interface ResourceStorage {
  readonly reads: SandboxStorage;
  readonly creator: SandboxCreator;
  readonly lifecycle: LifecycleStorage;
  readonly hub: WatchHub;
  readonly view: SandboxView;
  /** Labels and annotations users set; absent when this replica runs without one (then PATCH of them is refused). */
  metadata?: UserMetadataStore;
}

export interface StorageOptions {
  readonly clients: SandboxdClientSet | undefined;
  readonly graceMs: number;
  readonly overlayTtlMs: number;
  readonly claimIndexMaxBytes: number;
  readonly watchHistory: number;
  readonly rng: Rng;
  readonly log: Logger;
  /** Lease of a VM that lives until deleted (see LeasePolicy); default 15 min. */
  readonly leaseTtlSeconds?: number;
}

/** The install point (like sample-apiserver's install.go): resource name -> storage. */
export function buildStorages(opts: StorageOptions): Map<string, ResourceStorage> {
  const hub = new WatchHub(opts.watchHistory);
  const revisions = new Revisions();
  const view = new SandboxView({ graceMs: opts.graceMs, hub, revisions, overlayTtlMs: opts.overlayTtlMs });
  const reads = new SandboxStorage(view, new ClaimIndex({ maxBytes: opts.claimIndexMaxBytes }), new NodeRouter(view, opts.clients), revisions);
  reads.leases = new LeasePolicy(opts.leaseTtlSeconds ?? DEFAULT_LEASE_TTL_SECONDS);
  const creator = new SandboxCreator(reads, new CapacityLedger(), opts.rng, opts.log);
  return new Map([[RESOURCES.sandbox.plural, { reads, creator, lifecycle: new LifecycleStorage(reads), hub, view }]]);
}
