import { durationFlag, managerFlagShape } from '@sandbox-scale/kube-runtime';
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
});
export type WarmpoolDriverFlags = z.infer<typeof WarmpoolDriverFlagsSchema>;
