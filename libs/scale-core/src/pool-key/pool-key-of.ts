import { ANNOTATIONS } from '../constants';
import type { Sandbox } from '../schemas/sandbox';
import type { SandboxTemplate } from '../schemas/sandbox-template';
import { poolKeyFor, type PoolKey } from './pool-key';

const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);

/**
 * The network lane of a template: its own `sandbox.cocoonstack.io/net` annotation, else the
 * same annotation on its pod template.
 */
export function netOfTemplate(t: Pick<SandboxTemplate, 'metadata' | 'spec'>): string | undefined {
  return nonEmpty(t.metadata.annotations?.[ANNOTATIONS.net]) ?? nonEmpty(t.spec.podTemplate.metadata?.annotations?.[ANNOTATIONS.net]);
}

/** The pool key the warm-pool driver keeps warm for a template. */
export function poolKeyForTemplate(t: Pick<SandboxTemplate, 'metadata' | 'spec'>): PoolKey {
  return poolKeyFor(t.spec.podTemplate.spec.containers, netOfTemplate(t));
}

/**
 * The pool key a submitted Sandbox claims from. Only the object's own net annotation counts,
 * not the pod template's — an asymmetry with templates the reference has and we keep, so a
 * Sandbox copied from a template must carry the annotation on its metadata.
 */
export function poolKeyForSandbox(s: Pick<Sandbox, 'metadata' | 'spec'>): PoolKey {
  return poolKeyFor(s.spec.podTemplate.spec.containers, s.metadata.annotations?.[ANNOTATIONS.net]);
}
