import { DEFAULT_NET, DEFAULT_SIZE } from '../constants';
import { sizeClassForContainers, type ResourceContainer } from './size-class';

/** The identity of a warm pool on a node: which image, which network lane, which size. */
export interface PoolKey {
  readonly template: string;
  readonly net: string;
  readonly size: string;
}

/** Loose input: inventory pools and sandboxd replies may omit net and size. */
export interface PoolKeyLike {
  readonly template: string;
  readonly net?: string | undefined;
  readonly size?: string | undefined;
}

/**
 * The ONE normalisation of a pool key: empty net means `none`, empty size means `small`.
 * Claim matching, status counting and target planning all go through it, so an inventory that
 * omits a default can never be under-counted (the reference normalises only when matching).
 * The template is never normalised: image references are compared exactly.
 */
export function normalizePoolKey(key: PoolKeyLike): PoolKey {
  return {
    template: key.template,
    net: key.net === undefined || key.net === '' ? DEFAULT_NET : key.net,
    size: key.size === undefined || key.size === '' ? DEFAULT_SIZE : key.size,
  };
}

/**
 * The pool key a workload asks for: the first container's image, the
 * given net (or `none`), and the size class of the first container's resources.
 * The aggregated Create and the warm-pool driver must both call this; if they disagree every
 * Create answers 503 forever.
 */
export function poolKeyFor(containers: readonly ResourceContainer[] | undefined, net: string | undefined): PoolKey {
  return normalizePoolKey({
    template: containers?.[0]?.image ?? '',
    net,
    size: sizeClassForContainers(containers),
  });
}

/** True when an advertised pool serves a requested key, after normalising both. */
export function poolKeyMatches(advertised: PoolKeyLike, requested: PoolKeyLike): boolean {
  const a = normalizePoolKey(advertised);
  const r = normalizePoolKey(requested);
  return a.template === r.template && a.net === r.net && a.size === r.size;
}

/**
 * A map key for a normalised pool key. The separator is a NUL, which no image reference, net
 * lane or size can contain, so two different keys never collide.
 */
export function poolKeyId(key: PoolKeyLike): string {
  const k = normalizePoolKey(key);
  return `${k.template}\u0000${k.net}\u0000${k.size}`;
}

/** Orders keys by (template, net, size) with code-unit comparison, as sandboxd PUT bodies are sorted. */
export function comparePoolKeys(a: PoolKeyLike, b: PoolKeyLike): number {
  const x = normalizePoolKey(a);
  const y = normalizePoolKey(b);
  for (const f of ['template', 'net', 'size'] as const) {
    if (x[f] < y[f]) return -1;
    if (x[f] > y[f]) return 1;
  }
  return 0;
}
