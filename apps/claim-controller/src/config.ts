import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { bindAddressFlag, ConfigError, durationFlag, managerFlagShape } from '@sandbox-scale/kube-runtime';

const count = (dflt: number, min = 1) => z.coerce.number().int().min(min).default(dflt);

/** Flags of claim-controller (env fallback SANDBOX_SCALE_<FLAG>). */
export const ClaimControllerConfigSchema = z.object({
  ...managerFlagShape,
  fleetTokenFile: z.string().default('').describe('File holding the sandboxd fleet token (a Secret mount); else env SANDBOX_SCALE_FLEET_TOKEN. Without a token every node write is refused'),
  fastPathBindAddress: bindAddressFlag(':8443').describe('Where the HTTPS fast path POST /v1/claims listens (0 turns it off)'),
  tlsCertFile: z.string().default('').describe('Serving certificate of the fast path (PEM); empty with --tls-private-key-file empty: self-signed for localhost'),
  tlsPrivateKeyFile: z.string().default('').describe('Private key of --tls-cert-file (PEM)'),
  coldClaimTimeout: durationFlag('120s').describe('Bound on a cold claim, where the node boots a VM and blocks (pools with coldStart WhenNoWarmCapacity); above sandboxd\'s own 90 s cold readiness limit so a booting node always answers first'),
  orphanInterval: durationFlag('30s').describe('Cadence of the orphan pass that adopts deliveries whose Bound record was lost'),
  namespaceRecheckInterval: durationFlag('20s').describe('How often a claim refused because claim-controller may not write Secrets in its namespace (NamespaceNotEnabled) asks RBAC again; the claim binds by itself once the namespace is enabled'),
  maxConcurrentReconciles: count(16).describe('SandboxClaims reconciled at once'),
  recordConcurrency: count(16).describe('Async Bound records written at once'),
  recordAttempts: count(5).describe('Tries per async Bound record before it is left to the orphan pass'),
});
export type ClaimControllerFlags = z.infer<typeof ClaimControllerConfigSchema>;

/** The fleet token: the file wins (whitespace trimmed), then the env; '' means none (fail closed). */
export function loadFleetToken(file: string, env: Record<string, string | undefined> = process.env): string {
  if (file) {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(`--fleet-token-file: cannot read ${file}: ${(err as Error).message}`, '--fleet-token-file');
    }
  }
  return (env.SANDBOX_SCALE_FLEET_TOKEN ?? '').trim();
}
