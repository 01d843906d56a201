import { z } from 'zod';
import { SANDBOX_API_VERSION } from '../constants';
import { dateTime, ObjectMetaSchema } from './meta';
import { PodTemplateSchema, VolumeClaimTemplatesSchema } from './pod-template';

/** Sandbox (agents.x-k8s.io/v1beta1), served by sandbox-apiserver; mirrors the upstream CRD. */

export const SandboxSpecSchema = z
  .looseObject({
    podTemplate: PodTemplateSchema,
    volumeClaimTemplates: VolumeClaimTemplatesSchema.optional(),
    service: z
      .boolean()
      .optional()
      .describe('Unset keeps an existing headless Service but never creates one; true creates it; false deletes it.'),
    shutdownTime: dateTime()
      .optional()
      .describe('Absolute expiry (RFC3339). The claim lease is derived from it; it must be in the future.'),
    shutdownPolicy: z.enum(['Delete', 'Retain']).default('Retain').describe('What happens to the Sandbox object on expiry.'),
    operatingMode: z.enum(['Running', 'Suspended']).default('Running').describe('Desired state; the observed state is in the conditions.'),
  })
  .describe('Desired state of the sandbox.');

export const SandboxStatusSchema = z
  .looseObject({
    nodeName: z.string().optional().describe('The node whose sandboxd holds the sandbox.'),
    podIPs: z.array(z.string()).optional().describe('Addresses of the sandbox, without port.'),
    conditions: z
      .array(z.looseObject({ type: z.string(), status: z.string() }))
      .optional()
      .describe('Ready and other conditions.'),
    service: z.string().optional().describe('Name of the headless Service.'),
    serviceFQDN: z.string().optional().describe('Fully qualified name of the headless Service.'),
    selector: z.string().optional().describe('Label selector of the backing pod.'),
  })
  .describe('Observed state of the sandbox.');

export const SandboxSchema = z
  .looseObject({
    apiVersion: z.literal(SANDBOX_API_VERSION),
    kind: z.literal('Sandbox'),
    metadata: ObjectMetaSchema,
    spec: SandboxSpecSchema,
    status: SandboxStatusSchema.optional(),
  })
  .describe('A microVM sandbox handed over from a warm pool on a node.');

export type Sandbox = z.infer<typeof SandboxSchema>;
export type SandboxSpec = z.infer<typeof SandboxSpecSchema>;
export type SandboxStatus = z.infer<typeof SandboxStatusSchema>;
