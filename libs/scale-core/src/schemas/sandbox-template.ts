import { z } from 'zod';
import { EXTENSIONS_API_VERSION } from '../constants';
import { ObjectMetaSchema } from './meta';
import { PodTemplateSchema, VolumeClaimTemplatesSchema } from './pod-template';

/** SandboxTemplate (extensions.agents.x-k8s.io/v1beta1) */

const PolicySchema = (description: string) => z.enum(['Disallowed', 'Allowed', 'Overrides']).default('Disallowed').describe(description);

const PolicyRulesSchema = (description: string) =>
  z
    .array(z.looseObject({}).meta({ 'x-kubernetes-preserve-unknown-fields': true, description: 'A networking/v1 NetworkPolicy rule.' }))
    .optional()
    .meta({ 'x-kubernetes-list-type': 'atomic', description });

export const SandboxTemplateSpecSchema = z
  .looseObject({
    podTemplate: PodTemplateSchema,
    volumeClaimTemplates: VolumeClaimTemplatesSchema.optional(),
    service: z.boolean().optional().describe('Whether sandboxes built from this template get a headless Service.'),
    networkPolicy: z
      .looseObject({
        ingress: PolicyRulesSchema('Ingress rules (networking/v1 NetworkPolicyIngressRule); an empty list denies all ingress.'),
        egress: PolicyRulesSchema('Egress rules (networking/v1 NetworkPolicyEgressRule); an empty list denies all egress.'),
      })
      .optional()
      .describe('The NetworkPolicy shared by every sandbox of this template.'),
    networkPolicyManagement: z.enum(['Managed', 'Unmanaged']).default('Managed').describe('Unmanaged ignores networkPolicy entirely.'),
    envVarsInjectionPolicy: PolicySchema('Whether claims may set environment variables (spec.env).'),
    volumeClaimTemplatesPolicy: PolicySchema('Whether claims may add or override volume claim templates.'),
  })
  .describe(
    "The blueprint of a sandbox. Its first container's image and resources, with the sandbox.cocoonstack.io/net annotation, make the pool key.",
  );

export const SandboxTemplateSchema = z
  .looseObject({
    apiVersion: z.literal(EXTENSIONS_API_VERSION),
    kind: z.literal('SandboxTemplate'),
    metadata: ObjectMetaSchema,
    spec: SandboxTemplateSpecSchema,
  })
  .describe('A reusable sandbox blueprint that warm pools and claims refer to.');

export type SandboxTemplate = z.infer<typeof SandboxTemplateSchema>;
export type SandboxTemplateSpec = z.infer<typeof SandboxTemplateSpecSchema>;
