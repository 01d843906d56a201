/**
 * What a node handed over for one claim (scale-contracts §3.7). `claimId` is the sandboxd
 * claim id (sb_...), never a Kubernetes name. The token authorizes the caller on the sandbox:
 * it goes to the caller and into the claim's Secret, never into status, events or logs.
 */
export interface Assignment {
  claimId: string;
  node: string;
  /** host:port of the sandbox (sandboxd owner_addr). */
  address: string;
  token: string;
  /** Node-granted expiry, RFC3339; authoritative over the requested TTL. */
  deadline?: string;
}

/** The SandboxClaim a delivery belongs to. */
export interface ClaimTarget {
  namespace: string;
  name: string;
  /** When set, only the claim with this metadata.uid is written (not another of the same name). */
  uid?: string;
}
