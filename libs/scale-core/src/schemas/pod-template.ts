import { z } from 'zod';
import { QuantitySchema, StringMapSchema } from './meta';

/** Only the parts of a PodSpec this project reads; the rest is kept verbatim (preserve unknown). */

const ResourceListSchema = z.record(z.string(), QuantitySchema);

export const ResourceRequirementsSchema = z
  .looseObject({
    requests: ResourceListSchema.optional().describe(
      "Minimum resources; the first container's cpu and memory requests pick the size class.",
    ),
    limits: ResourceListSchema.optional().describe('Maximum resources; used for the size class when a request is absent or zero.'),
  })
  .meta({
    'x-kubernetes-preserve-unknown-fields': true,
    description: 'Compute resources of the container (fields not listed are kept as given).',
  });

export const ContainerSchema = z
  .looseObject({
    name: z.string().min(1).describe('Name of the container.'),
    image: z.string().optional().describe("Container image; the first container's image is the template axis of the pool key."),
    resources: ResourceRequirementsSchema.optional(),
  })
  .meta({
    'x-kubernetes-preserve-unknown-fields': true,
    description: 'A container of the sandbox (core/v1 Container; fields not listed are kept as given).',
  });

export type Container = z.infer<typeof ContainerSchema>;

export const PodSpecSchema = z
  .looseObject({
    containers: z.array(ContainerSchema).min(1).describe('Containers of the sandbox; at least one. Only the first decides the pool key.'),
  })
  .meta({
    'x-kubernetes-preserve-unknown-fields': true,
    description: 'The core/v1 PodSpec of the sandbox (fields not listed are kept as given).',
  });

export const PodTemplateSchema = z
  .looseObject({
    metadata: z
      .looseObject({
        labels: StringMapSchema.optional().describe("Labels for the sandbox's pod."),
        annotations: StringMapSchema.optional().describe(
          "Annotations for the sandbox's pod; sandbox.cocoonstack.io/net picks the network lane.",
        ),
      })
      .optional()
      .describe("Labels and annotations of the sandbox's pod."),
    spec: PodSpecSchema,
  })
  .describe('The pod blueprint of the sandbox: metadata and a core/v1 PodSpec.');

export type PodTemplate = z.infer<typeof PodTemplateSchema>;

export const VolumeClaimTemplatesSchema = z
  .array(
    z
      .looseObject({
        metadata: z
          .looseObject({
            name: z.string().optional().describe('Name of the claim.'),
            labels: StringMapSchema.optional().describe('Labels of the claim.'),
            annotations: StringMapSchema.optional().describe('Annotations of the claim.'),
          })
          .optional()
          .describe('Metadata of the PersistentVolumeClaim.'),
        spec: z.looseObject({}).meta({ 'x-kubernetes-preserve-unknown-fields': true, description: 'A core/v1 PersistentVolumeClaimSpec.' }),
      })
      .describe('A PersistentVolumeClaim template.'),
  )
  .meta({ 'x-kubernetes-list-type': 'atomic', description: 'PersistentVolumeClaim templates mounted into the sandbox.' });
