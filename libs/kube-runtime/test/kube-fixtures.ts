import { type KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { eventually } from '@sandbox-scale/e2e';
import { CrdResource, type KubeResource, ResourceClient, applyObject, type ApplyBody } from '../src/index';

/** A tiny CRD of this suite's own, namespaced, with a status subresource and an open spec. */
export const GROUP = 'kruntime-test.example.com';

export const GizmoResource: KubeResource = { group: GROUP, version: 'v1', plural: 'gizmos', kind: 'Gizmo', namespaced: true };
export const KnobResource: KubeResource = { group: GROUP, version: 'v1', plural: 'knobs', kind: 'Knob', namespaced: false };

function crd(res: KubeResource): ApplyBody {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${res.plural}.${res.group}` },
    spec: {
      group: res.group,
      scope: res.namespaced ? 'Namespaced' : 'Cluster',
      names: { plural: res.plural, singular: res.kind.toLowerCase(), kind: res.kind, listKind: `${res.kind}List` },
      versions: [
        {
          name: res.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              },
            },
          },
        },
      ],
    },
  };
}

const EstablishedSchema = z.object({
  status: z.object({ conditions: z.array(z.object({ type: z.string(), status: z.string() })).optional() }).optional(),
});

/**
 * Applied as raw JSON through the runtime's own SSA helper: client-node's typed serializer
 * would drop `x-kubernetes-preserve-unknown-fields`, and the API server would then prune specs.
 */
export async function installTestCrds(kc: KubeConfig): Promise<void> {
  const crds = new ResourceClient(kc, CrdResource);
  for (const res of [GizmoResource, KnobResource]) {
    const body = crd(res);
    await applyObject(kc, body, { fieldManager: 'sandbox-scale/kube-runtime-test', force: true, resource: CrdResource });
    await eventually(
      async () => {
        const got = EstablishedSchema.parse(await crds.get(undefined, body.metadata.name));
        if (!got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
          throw new Error(`${body.metadata.name} not Established`);
      },
      { timeoutMs: 30_000 },
    );
  }
}

/** What the typed parser of a real CRD would be: it names the field that does not fit. */
export const GizmoSchema = z.object({
  apiVersion: z.literal(`${GROUP}/v1`),
  kind: z.literal('Gizmo'),
  metadata: z.object({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string(),
    resourceVersion: z.string(),
    generation: z.number().optional(),
  }),
  spec: z.object({ size: z.number().int().nonnegative(), color: z.string().optional() }),
  status: z.object({ phase: z.string() }).optional(),
});
export type Gizmo = z.infer<typeof GizmoSchema>;
