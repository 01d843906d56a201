import { durationFlag, jsonFlag, KeptObjectsSchema, managerFlagShape } from '@sandbox-scale/kube-runtime';
import { sandboxdTokensFlag } from '@sandbox-scale/sandboxd-client';
import { LIMITS } from '@sandbox-scale/scale-core';
import { z } from 'zod';

const count = (dflt: number) => z.coerce.number().int().min(0).default(dflt);

/** Flags of warmpool-driver (env fallback SANDBOX_SCALE_<FLAG>). */
export const WarmpoolDriverFlagsSchema = z.object({
  ...managerFlagShape,
  sandboxdTokens: sandboxdTokensFlag,
  fleetTokenFile: z
    .string()
    .default('')
    .describe(
      'File holding the sandboxd fleet token (a mounted Secret); env SANDBOX_SCALE_FLEET_TOKEN otherwise. Without a token no targets are sent',
    ),
  namespace: z
    .string()
    .default('')
    .describe(
      "Only drive SandboxWarmPools (and read SandboxTemplates) of this namespace; empty means all. A node's keys of other namespaces are read back before each PUT and kept (docs/adr/0002)",
    ),
  nodeInventorySelector: z
    .string()
    .default('')
    .describe('Label selector of the NodeInventories (nodes) this driver spreads pools over; empty means every node'),
  maxReplicasPerPool: count(1000).describe(
    'Most warm sandboxes kept for one SandboxWarmPool, whatever its spec.replicas; the pool then says ReplicasLimited=True. 0 = no limit',
  ),
  maxReplicasPerNamespace: count(5000).describe(
    "Most warm sandboxes kept for one namespace's SandboxWarmPools together; the oldest pools (creation time, then name) get theirs first, a pool left short says ReplicasLimited=True. 0 = no limit",
  ),
  warmPoolSyncInterval: durationFlag(`${LIMITS.warmPoolSyncIntervalMs / 1000}s`).describe(
    'Resync period of the warm targets and of the pool status',
  ),
  keepCertificates: jsonFlag(KeptObjectsSchema)
    .optional()
    .describe(
      'JSON {"namespace","caSecret","serving":[{"secret","dnsNames"}],"claimRefKeySecret","apiService"}: on the leader, create the CA, the serving certificates it signs and the claim-reference key in these Secrets when absent (never replacing a Secret it did not create), sign its serving certificates again before they end, and keep the APIService caBundle on the CA. Empty = off',
    ),
  caValidity: durationFlag('87600h').describe('Lifetime of a CA --keep-certificates creates'),
  caRenewBefore: durationFlag('8760h').describe(
    'A CA --keep-certificates created is rotated this long before it ends (annotate its Secret sandbox-scale.io/rotate-ca=<new value> to rotate it now)',
  ),
  caRotationOverlap: durationFlag('10m').describe(
    "Each step of a CA rotation (trust both CAs; sign with the new; drop the old), and the first of a claim-reference key rotation (the new key verifies before it signs), is held this long, so every pod has read the step before: more than the kubelet's sync period plus a minute",
  ),
  claimRefKeyGrace: durationFlag('720h').describe(
    'Once a rotated claim-reference key signs, the old key still verifies this long, then leaves the keyring (annotate the key Secret sandbox-scale.io/rotate-key=<new value> to rotate). A sandbox kept alive by lease renewal that was claimed before the rotation is renewed only while its key verifies: keep this longer than such sandboxes live',
  ),
  certificateValidity: durationFlag('2160h').describe('Lifetime of a serving certificate --keep-certificates signs'),
  certificateRenewBefore: durationFlag('720h').describe(
    'A serving certificate --keep-certificates signed is signed again this long before it ends',
  ),
});
export type WarmpoolDriverFlags = z.infer<typeof WarmpoolDriverFlagsSchema>;
