/** A status condition as the suites read it from kubectl or the API. */
export interface Cond {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** A SandboxClaim as the suites read it: the fields they check, all optional but the name. */
export interface Claim {
  metadata: { name: string; namespace?: string; uid?: string };
  status?: {
    conditions?: Cond[];
    sandbox?: { name?: string; claimID?: string; nodeName?: string; tokenSecretName?: string; deadline?: string };
  };
}
