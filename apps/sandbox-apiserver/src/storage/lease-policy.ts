/**
 * How long a node is asked to keep a VM this server claims (create, fork, snapshot claim). An
 * object that says how long it lives (spec.shutdownTime, the ttl-seconds annotation, an options
 * `ttlSeconds`) gets exactly that and is never renewed. One that says nothing lives until it is
 * deleted: it is claimed for the lease below and marked `renewed` in its claim reference, and the
 * lease renewer keeps its node lease ahead of the deadline; the lease only bounds how long the VM
 * outlives a control plane that is gone.
 */
export class LeasePolicy {
  /** @param leaseTtlSeconds the lease of a VM that lives until deleted; 0 = the node's default. */
  constructor(readonly leaseTtlSeconds: number) {}

  forRequested(ttlSeconds: number | undefined): { ttlSeconds: number; renewed: boolean } {
    if (ttlSeconds !== undefined && ttlSeconds > 0) return { ttlSeconds, renewed: false };
    return { ttlSeconds: this.leaseTtlSeconds, renewed: true };
  }
}

/** 15 minutes: renewals stay rare, and a VM left by a control plane that is gone ends soon. */
export const DEFAULT_LEASE_TTL_SECONDS = 900;
