import { z } from 'zod';
import { EXTENSIONS_API_VERSION } from '../constants';
import { conditionsSchema, int32, int64, localRefSchema, ObjectMetaSchema } from './meta';

/** SandboxWarmPool (extensions.agents.x-k8s.io/v1beta1) */

/** Cold claims are opt-in: a cold boot costs the node a boot and the claimant seconds of waiting. */
export const COLD_START_POLICIES = ['Never', 'WhenNoWarmCapacity'] as const;
export type ColdStartPolicy = (typeof COLD_START_POLICIES)[number];

export const SandboxWarmPoolSpecSchema = z
  .looseObject({
    replicas: int32()
      .min(0)
      .default(1)
      .describe(
        'Desired number of warm sandboxes across the fleet, spread evenly over the nodes. HPA and kubectl scale write it through the scale subresource.',
      ),
    sandboxTemplateRef: localRefSchema(
      'The SandboxTemplate (same namespace) whose pool key this pool keeps warm.',
      'Name of the SandboxTemplate.',
    ),
    updateStrategy: z
      .looseObject({
        type: z
          .enum(['Recreate', 'OnReplenish'])
          .default('OnReplenish')
          .describe('Recreate replaces stale warm members at once; OnReplenish keeps them until claimed.'),
      })
      .optional()
      .describe('How warm members built from an older template are replaced.'),
    coldStart: z
      .enum(COLD_START_POLICIES)
      .default('Never')
      .describe(
        'What a claim does when no node has a warm sandbox of the pool: Never waits (Bound=False, NoWarmCapacity) until warm capacity appears; WhenNoWarmCapacity boots one on a routable node and binds when it is up (seconds, not milliseconds).',
      ),
  })
  .describe('Desired warm capacity of the pool.');

/** A pool key as the driver records it in status: what it keeps warm, readable after a restart. */
export const RecordedPoolKeySchema = z
  .looseObject({
    template: z.string().min(1).describe('Template axis: the image reference (or promoted template name).'),
    net: z.string().min(1).describe('Network lane: none or egress.'),
    size: z.string().min(1).describe('Size class: small, medium or large.'),
  })
  .describe('A normalised pool key (template, net, size).');

export const SandboxWarmPoolStatusSchema = z
  .looseObject({
    replicas: int32().min(0).optional().describe('Warm sandboxes for the pool key, summed over all nodes.'),
    readyReplicas: int32()
      .min(0)
      .optional()
      .describe('Warm sandboxes ready to be claimed; warm VMs are claim-ready, so this equals replicas.'),
    selector: z
      .string()
      .optional()
      .describe('Label selector of the pool (agents.x-k8s.io/warm-pool=<name>), read by the scale subresource.'),
    observedGeneration: int64().min(0).optional().describe('The metadata.generation the status was computed from.'),
    conditions: conditionsSchema('Ready and Degraded conditions of the pool.').optional(),
    poolKey: RecordedPoolKeySchema.optional().describe(
      'The key the driver keeps warm for this pool, recorded before the nodes are told. While the template is missing or invalid the pool stays on this key (its last-good targets), also across driver restarts and failovers.',
    ),
    retiringPoolKey: RecordedPoolKeySchema.optional().describe(
      'The previous key after a template change, kept at its targets until poolKey is warm, then drained.',
    ),
  })
  .describe('Observed warm capacity of the pool.');

export const SandboxWarmPoolSchema = z
  .looseObject({
    apiVersion: z.literal(EXTENSIONS_API_VERSION),
    kind: z.literal('SandboxWarmPool'),
    metadata: ObjectMetaSchema,
    spec: SandboxWarmPoolSpecSchema,
    status: SandboxWarmPoolStatusSchema.optional(),
  })
  .describe('A fleet-wide pool of pre-booted sandboxes for one template, kept warm on the nodes.');

export type SandboxWarmPool = z.infer<typeof SandboxWarmPoolSchema>;
export type SandboxWarmPoolSpec = z.infer<typeof SandboxWarmPoolSpecSchema>;
export type SandboxWarmPoolStatus = z.infer<typeof SandboxWarmPoolStatusSchema>;
export type RecordedPoolKey = z.infer<typeof RecordedPoolKeySchema>;
