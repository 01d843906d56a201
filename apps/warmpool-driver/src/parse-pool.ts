import { ObjectValidationError, SandboxWarmPoolSchema, parseObject, type SandboxWarmPool } from '@sandbox-scale/scale-core';

// A DNS-1123 subdomain: what a SandboxTemplate name can be. The CRD only asks for a non-empty
// string, so a reference no template can ever satisfy is caught here and reported by field.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A SandboxWarmPool as the driver reads it; throws ObjectValidationError naming the field. */
export function parseWarmPool(obj: unknown): SandboxWarmPool {
  const pool = parseObject(SandboxWarmPoolSchema, obj);
  const ref = pool.spec.sandboxTemplateRef.name;
  if (ref.length > 253 || !DNS_SUBDOMAIN.test(ref)) {
    throw new ObjectValidationError('SandboxWarmPool', 'extensions.agents.x-k8s.io', pool.metadata.name ?? '', [
      { field: 'spec.sandboxTemplateRef.name', reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(ref)}: must be a SandboxTemplate name (a DNS-1123 subdomain)` },
    ]);
  }
  return pool;
}
