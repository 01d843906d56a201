import type { z } from 'zod';
import { API_VERSION, RESOURCE_CATEGORY, RESOURCES } from '../constants';
import { NodeInventorySchema } from '../schemas/node-inventory';
import { SandboxClaimSchema } from '../schemas/sandbox-claim';
import { SandboxTemplateSchema } from '../schemas/sandbox-template';
import { SandboxWarmPoolSchema } from '../schemas/sandbox-warm-pool';
import { toStructuralSchema, type SchemaNode } from './structural-schema';

type ResourceNames = (typeof RESOURCES)[keyof typeof RESOURCES];

interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'date';
  readonly jsonPath: string;
  readonly description: string;
  readonly priority?: number;
}

interface CrdSource {
  readonly names: ResourceNames;
  readonly schema: z.ZodType;
  readonly subresources?: SchemaNode;
  readonly printerColumns?: readonly PrinterColumn[];
}

const AGE: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'Time since the object was created.',
};

/** The four CRDs of extensions.agents.x-k8s.io. Sandbox is served, never a CRD. */
export const CRD_SOURCES: readonly CrdSource[] = [
  { names: RESOURCES.sandboxTemplate, schema: SandboxTemplateSchema },
  {
    names: RESOURCES.sandboxWarmPool,
    schema: SandboxWarmPoolSchema,
    subresources: {
      status: {},
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
    },
    printerColumns: [
      {
        name: 'Ready',
        type: 'integer',
        jsonPath: '.status.readyReplicas',
        description: 'Warm sandboxes ready to be claimed, over all nodes.',
      },
      { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas', description: 'Desired warm sandboxes.' },
      AGE,
    ],
  },
  {
    names: RESOURCES.sandboxClaim,
    schema: SandboxClaimSchema,
    subresources: { status: {} },
    printerColumns: [
      {
        name: 'Ready',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].status',
        description: "Whether the claim's sandbox is ready to use.",
      },
      {
        name: 'Reason',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
        description: 'Why the claim is, or is not, ready.',
      },
      {
        name: 'Sandbox',
        type: 'string',
        jsonPath: '.status.sandbox.name',
        description: 'The served Sandbox (agents.x-k8s.io) of the claim.',
      },
      { name: 'Node', type: 'string', jsonPath: '.status.sandbox.nodeName', description: 'The node that holds the sandbox.' },
      {
        name: 'Bound',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Bound")].status',
        description: 'Whether a node handed over a sandbox.',
        priority: 1,
      },
      {
        name: 'ClaimID',
        type: 'string',
        jsonPath: '.status.sandbox.claimID',
        description: 'The sandboxd claim id of the sandbox on its node.',
        priority: 1,
      },
      AGE,
    ],
  },
  {
    names: RESOURCES.nodeInventory,
    schema: NodeInventorySchema,
    printerColumns: [
      { name: 'Node', type: 'string', jsonPath: '.node', description: 'The node this inventory reports.' },
      { name: 'Address', type: 'string', jsonPath: '.address', description: 'sandboxd address of the node.', priority: 1 },
      AGE,
    ],
  },
];

/** An apiextensions.k8s.io/v1 CustomResourceDefinition, as plain data. */
export type CustomResourceDefinition = SchemaNode & { metadata: { name: string; labels?: Record<string, string> } };

export function buildCrd(src: CrdSource): CustomResourceDefinition {
  const { names } = src;
  const version: SchemaNode = {
    name: API_VERSION,
    served: true,
    storage: true,
    schema: { openAPIV3Schema: toStructuralSchema(src.schema) },
  };
  if (src.subresources) version['subresources'] = src.subresources;
  if (src.printerColumns) version['additionalPrinterColumns'] = src.printerColumns;
  const namesNode: SchemaNode = { kind: names.kind, listKind: names.listKind, plural: names.plural, singular: names.singular };
  if (names.shortNames.length > 0) namesNode['shortNames'] = [...names.shortNames];
  namesNode['categories'] = [RESOURCE_CATEGORY];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${names.plural}.${names.group}`, labels: { 'app.kubernetes.io/part-of': 'sandbox-scale' } },
    spec: {
      group: names.group,
      names: namesNode,
      scope: names.namespaced ? 'Namespaced' : 'Cluster',
      // One version, so no conversion webhook.
      versions: [version],
      conversion: { strategy: 'None' },
    },
  };
}

/** Every CRD this project installs. */
export function buildCrds(): CustomResourceDefinition[] {
  return CRD_SOURCES.map(buildCrd);
}
