import { API_VERSION, SANDBOX_GROUP, SandboxSchema, toStructuralSchema } from '@sandbox-scale/scale-core';
import { ACTIONS } from '../discovery';
import { MAX_SNAPSHOT_LABEL } from '../storage/snapshot-owner';
import { dataPlaneModels } from './data-plane-openapi';

/** Definition names unique across the cluster, so kube-apiserver's merge never collides. */
export const MODEL_PREFIX = 'io.x-k8s.agents.v1beta1.';
export const LIST_META_REF = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta';

type Schema = Record<string, unknown>;

const gvk = (kind: string): Schema => ({ 'x-kubernetes-group-version-kind': [{ group: SANDBOX_GROUP, version: API_VERSION, kind }] });
const typeMeta: Schema = { apiVersion: { type: 'string' }, kind: { type: 'string' } };

/** Fields of the snapshot options bodies, so `kubectl explain` and clients see what to send. */
const OPTION_FIELDS: Record<string, { properties: Schema; required?: string[] }> = {
  // snapshots belong to the sandbox name they were taken from and outlive the sandbox (storage/snapshot-storage.ts)
  SandboxSnapshotOptions: {
    properties: {
      name: {
        type: 'string',
        maxLength: MAX_SNAPSHOT_LABEL,
        description: 'A label for the snapshot: letters, digits and ._:/- , starting with a letter or digit.',
      },
    },
  },
  SandboxSnapshotsOptions: { properties: {} },
  SandboxDeleteSnapshotOptions: {
    properties: { snapshot: { type: 'string', description: 'The snapshotID to delete, as listed by sandboxes/snapshots.' } },
    required: ['snapshot'],
  },
  SandboxClaimSnapshotOptions: {
    properties: {
      snapshot: { type: 'string', description: 'The snapshotID to branch the new sandbox from.' },
      name: { type: 'string', description: 'Name of the new sandbox, in the same namespace.' },
      ttlSeconds: {
        type: 'integer',
        format: 'int64',
        minimum: 0,
        description: 'Lifetime of the new sandbox; 0 or absent = the node default.',
      },
    },
    required: ['snapshot', 'name'],
  },
};

export const OBJECT_META_REF = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

const stringMap: Schema = { type: 'object', additionalProperties: { type: 'string', default: '' } };

/**
 * ObjectMeta with the fields clients compute patches over: kubectl's apply and diff walk the
 * schema to build a strategic merge patch and warn when metadata.annotations is not in it.
 */
const objectMeta: Schema = {
  type: 'object',
  description: "Standard object's metadata.",
  properties: {
    name: { type: 'string' },
    generateName: { type: 'string' },
    namespace: { type: 'string' },
    uid: { type: 'string' },
    resourceVersion: { type: 'string' },
    generation: { type: 'integer', format: 'int64' },
    creationTimestamp: { type: 'string', format: 'date-time' },
    deletionTimestamp: { type: 'string', format: 'date-time' },
    labels: stringMap,
    annotations: stringMap,
    finalizers: { type: 'array', items: { type: 'string', default: '' }, 'x-kubernetes-list-type': 'set' },
    managedFields: {
      type: 'array',
      items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      'x-kubernetes-list-type': 'atomic',
    },
  },
};

/** Every served kind, with its GVK marker; `full` = the real Sandbox schema (v3), else coarse (v2). */
export function buildModels(refPrefix: string, full: boolean): Record<string, Schema> {
  const structural = toStructuralSchema(SandboxSchema) as Schema & { properties?: Record<string, Schema> };
  const sandbox: Schema = full
    ? {
        ...structural,
        properties: { ...(structural.properties ?? {}), metadata: { allOf: [{ $ref: `${refPrefix}${OBJECT_META_REF}` }], default: {} } },
        ...gvk('Sandbox'),
      }
    : {
        type: 'object',
        description: 'A microVM sandbox handed over from a warm pool on a node.',
        properties: {
          ...typeMeta,
          metadata: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
          spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
          status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        },
        ...gvk('Sandbox'),
      };
  const models: Record<string, Schema> = {
    ...dataPlaneModels(MODEL_PREFIX),
    ...(full ? { [OBJECT_META_REF]: objectMeta } : {}),
    [`${MODEL_PREFIX}Sandbox`]: sandbox,
    [`${MODEL_PREFIX}SandboxList`]: {
      type: 'object',
      description: 'A list of sandboxes.',
      required: ['items'],
      properties: {
        ...typeMeta,
        metadata: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        items: { type: 'array', items: { $ref: `${refPrefix}${MODEL_PREFIX}Sandbox` } },
      },
      ...gvk('SandboxList'),
    },
  };
  const kinds = new Set<string>([
    'SandboxPauseOptions',
    'SandboxResumeOptions',
    'SandboxForkOptions',
    'SandboxSnapshotOptions',
    'SandboxPromoteOptions',
    'SandboxStatsOptions',
    ...Object.keys(OPTION_FIELDS),
    ...ACTIONS.map((a) => a.kind),
  ]);
  for (const kind of kinds) {
    // claimsnapshot answers a Sandbox: keep its real schema
    if (models[`${MODEL_PREFIX}${kind}`] !== undefined) continue;
    const fields = OPTION_FIELDS[kind];
    models[`${MODEL_PREFIX}${kind}`] = {
      type: 'object',
      properties: { ...typeMeta, ...(fields?.properties ?? {}) },
      ...(fields?.required ? { required: fields.required } : {}),
      'x-kubernetes-preserve-unknown-fields': true,
      ...gvk(kind),
    };
  }
  return models;
}
