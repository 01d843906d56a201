import {
  isDns1123Subdomain,
  ObjectValidationError,
  SandboxWarmPoolSchema,
  parseObject,
  type SandboxWarmPool,
} from '@sandbox-scale/scale-core';

/** A SandboxWarmPool as the driver reads it; throws ObjectValidationError naming the field. */
export function parseWarmPool(obj: unknown): SandboxWarmPool {
  const pool = parseObject(SandboxWarmPoolSchema, obj);
  const ref = pool.spec.sandboxTemplateRef.name;
  // A SandboxTemplate name is a DNS-1123 subdomain. The CRD only asks for a non-empty string, so
  // a reference no template can ever satisfy is caught here and reported by field.
  if (!isDns1123Subdomain(ref)) {
    throw new ObjectValidationError('SandboxWarmPool', 'extensions.agents.x-k8s.io', pool.metadata.name ?? '', [
      {
        field: 'spec.sandboxTemplateRef.name',
        reason: 'FieldValueInvalid',
        message: `Invalid value: ${JSON.stringify(ref)}: must be a SandboxTemplate name (a DNS-1123 subdomain)`,
      },
    ]);
  }
  return pool;
}
