import { z } from 'zod';
import { tryParseQuantity } from '../quantity/quantity';
import { DNS1123_SUBDOMAIN_FMT } from '../names/dns1123';

/*
 * Building blocks shared by every kind. Each schema doubles as the source of the CRD's
 * openAPIV3Schema (crds/structural-schema.ts), so descriptions here are what `kubectl explain`
 * prints and `.meta()` carries the Kubernetes schema extensions.
 */

/** Kubernetes `int32`: the CRD gets `format: int32`. */
export const int32 = (): z.ZodInt32 => z.int32();
/** Kubernetes `int64` (JS safe-integer range): the CRD gets `format: int64`. */
export const int64 = (): z.ZodInt => z.int();

/** An RFC3339 timestamp; offsets are accepted because users write them (`...+02:00`). */
export const dateTime = (): z.ZodISODateTime => z.iso.datetime({ offset: true });

/** A map of label or annotation keys to values. */
export const StringMapSchema = z.record(z.string(), z.string());

/** The pattern kube-apiserver puts on every resource quantity field. */
export const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** A resource quantity, string or number on the wire, checked with the exact parser. */
export const QuantitySchema = z
  .union([z.string(), z.number()])
  .refine((v) => tryParseQuantity(v) !== undefined, { message: 'must be a Kubernetes quantity such as 500m, 2Gi or 1e3' })
  .meta({ 'x-kubernetes-int-or-string': true, pattern: QUANTITY_PATTERN });

/** Kubernetes object metadata: the fields this project reads; anything else is kept. */
export const ObjectMetaSchema = z
  .looseObject({
    name: z.string().optional(),
    generateName: z.string().optional(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    generation: int64().optional(),
    creationTimestamp: z.string().nullable().optional(),
    deletionTimestamp: z.string().nullable().optional(),
    labels: StringMapSchema.optional(),
    annotations: StringMapSchema.optional(),
    finalizers: z.array(z.string()).optional(),
  })
  .describe("Standard object's metadata.");

export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;

const QUALIFIED_NAME = new RegExp(`^(${DNS1123_SUBDOMAIN_FMT}/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`);
const CONDITION_REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/** metav1.Condition, with the upstream limits. */
export const ConditionSchema = z
  .looseObject({
    type: z.string().max(316).regex(QUALIFIED_NAME).describe('Type of condition in CamelCase, e.g. Ready or Bound.'),
    status: z.enum(['True', 'False', 'Unknown']).describe('Status of the condition: True, False or Unknown.'),
    reason: z
      .string()
      .min(1)
      .max(1024)
      .regex(CONDITION_REASON)
      .describe("A programmatic identifier for the condition's last transition, in CamelCase."),
    message: z.string().max(32768).describe('A human-readable message about the transition.'),
    lastTransitionTime: dateTime().describe('When the condition last changed status.'),
    observedGeneration: int64().min(0).optional().describe('The metadata.generation the condition was set from.'),
  })
  .describe('A condition of the object, as in metav1.Condition.');

export type Condition = z.infer<typeof ConditionSchema>;

/** A conditions list keyed by type, so server-side apply merges one condition per field manager. */
export function conditionsSchema(description: string) {
  return z.array(ConditionSchema).meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'], description });
}

/** A reference to an object by name in the same namespace. */
export function localRefSchema(description: string, nameDescription: string) {
  return z.looseObject({ name: z.string().min(1).describe(nameDescription) }).describe(description);
}
