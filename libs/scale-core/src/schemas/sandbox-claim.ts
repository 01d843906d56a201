import { z } from 'zod';
import { EXTENSIONS_API_VERSION } from '../constants';
import { conditionsSchema, dateTime, int32, int64, localRefSchema, ObjectMetaSchema, StringMapSchema } from './meta';
import { VolumeClaimTemplatesSchema } from './pod-template';

/** SandboxClaim (extensions.agents.x-k8s.io/v1beta1) */

export const SandboxClaimSpecSchema = z
  .looseObject({
    warmPoolRef: localRefSchema(
      'The SandboxWarmPool (same namespace) to claim from; its template decides the pool key.',
      'Name of the SandboxWarmPool.',
    ),
    lifecycle: z
      .looseObject({
        shutdownTime: dateTime().optional().describe('Absolute expiry of the claim (RFC3339); the sandbox is released then.'),
        ttlSecondsAfterFinished: int32()
          .min(0)
          .optional()
          .describe(
            'Seconds after the claim finished (Finished=True: expired at shutdownTime, or its sandbox lost) before the claim object is deleted; unset keeps it (shutdownPolicy Retain).',
          ),
        shutdownPolicy: z.enum(['Delete', 'DeleteForeground', 'Retain']).default('Retain').describe('What happens to the claim on expiry.'),
      })
      .optional()
      .describe('Expiry of the claim.'),
    additionalPodMetadata: z
      .looseObject({
        labels: StringMapSchema.optional().describe("Extra labels for the sandbox's pod."),
        annotations: StringMapSchema.optional().describe("Extra annotations for the sandbox's pod."),
      })
      .optional()
      .describe('Labels and annotations merged into the pod template (keys in kubernetes.io, k8s.io and agents.x-k8s.io are rejected).'),
    env: z
      .array(
        z
          .looseObject({
            name: z.string().min(1).describe('Name of the variable.'),
            value: z.string().describe('Value of the variable.'),
            containerName: z.string().optional().describe('Container to set it in; the first container when empty.'),
          })
          .describe('An environment variable.'),
      )
      .optional()
      .meta({
        'x-kubernetes-list-type': 'atomic',
        description: 'Environment variables for the sandbox; forces a cold start and needs the template to allow it.',
      }),
    volumeClaimTemplates: VolumeClaimTemplatesSchema.optional(),
  })
  .describe('What the claim asks for.');

export const ClaimedSandboxSchema = z
  .looseObject({
    name: z
      .string()
      .optional()
      .describe(
        "Name of the served Sandbox (agents.x-k8s.io) of this claim, in the claim's namespace: the claim's own name. Non-empty means Bound.",
      ),
    claimID: z.string().optional().describe('The sandboxd claim id (sb_...) of the sandbox on its node.'),
    podIPs: z.array(z.string()).optional().describe('Addresses of the sandbox, without port.'),
    nodeName: z.string().optional().describe('The node whose sandboxd delivered the sandbox.'),
    address: z.string().optional().describe('host:port of the delivered sandbox (its owner_addr).'),
    deadline: dateTime()
      .optional()
      .describe(
        'Node-granted lease expiry when the claim was bound (RFC3339). The lease is renewed on the node while the claim lives (up to spec.lifecycle.shutdownTime) without rewriting this field; the served Sandbox shows the current one.',
      ),
    tokenSecretName: z
      .string()
      .optional()
      .describe("Secret in the claim's namespace that holds the sandbox token; the token itself never appears in status."),
  })
  .describe('The sandbox bound to this claim.');

export const SandboxClaimStatusSchema = z
  .looseObject({
    sandbox: ClaimedSandboxSchema.optional(),
    conditions: conditionsSchema('Bound, Ready and Finished conditions of the claim.').optional(),
    observedGeneration: int64().min(0).optional().describe('The metadata.generation the status was computed from.'),
  })
  .describe('Observed state of the claim.');

export const SandboxClaimSchema = z
  .looseObject({
    apiVersion: z.literal(EXTENSIONS_API_VERSION),
    kind: z.literal('SandboxClaim'),
    metadata: ObjectMetaSchema,
    spec: SandboxClaimSpecSchema,
    status: SandboxClaimStatusSchema.optional(),
  })
  .describe('A request for one sandbox from a warm pool; Bound once a node handed one over.');

export type SandboxClaim = z.infer<typeof SandboxClaimSchema>;
export type SandboxClaimSpec = z.infer<typeof SandboxClaimSpecSchema>;
export type SandboxClaimStatus = z.infer<typeof SandboxClaimStatusSchema>;
export type ClaimedSandbox = z.infer<typeof ClaimedSandboxSchema>;
