import type { SizeClass } from '../constants';
import { compareQuantities, isZeroQuantity, parseQuantity, type Quantity } from '../quantity/quantity';

/** The slice of a container this module reads; a parsed Container from the schemas fits it. */
export interface ResourceContainer {
  readonly image?: string | undefined;
  readonly resources?:
    | {
        readonly requests?: Readonly<Record<string, string | number>> | undefined;
        readonly limits?: Readonly<Record<string, string | number>> | undefined;
      }
    | undefined;
}

const ONE_CORE = parseQuantity('1');
const FOUR_CORES = parseQuantity('4');
const TWO_GI = parseQuantity('2Gi');
const EIGHT_GI = parseQuantity('8Gi');

/** requests[name], unless it is absent or zero, in which case limits[name]. */
function resolve(c: ResourceContainer, name: 'cpu' | 'memory'): Quantity | undefined {
  const req = c.resources?.requests?.[name];
  if (req !== undefined) {
    const q = parseQuantity(req);
    if (!isZeroQuantity(q)) return q;
  }
  const lim = c.resources?.limits?.[name];
  return lim === undefined ? undefined : parseQuantity(lim);
}

const above = (q: Quantity | undefined, threshold: Quantity): boolean => q !== undefined && compareQuantities(q, threshold) > 0;

/**
 * The single source of truth for a pool's size class. Only the first
 * container counts; CPU and memory are resolved independently (requests, then limits when the
 * request is absent or zero); thresholds are strict: cpu > 4 or memory > 8Gi is large,
 * cpu > 1 or memory > 2Gi is medium, anything else (including nothing set) is small.
 * Throws QuantityParseError for a malformed quantity; parsed schemas have already rejected those.
 */
export function sizeClassForContainers(containers: readonly ResourceContainer[] | undefined): SizeClass {
  const first = containers?.[0];
  if (first === undefined) return 'small';
  const cpu = resolve(first, 'cpu');
  const memory = resolve(first, 'memory');
  if (above(cpu, FOUR_CORES) || above(memory, EIGHT_GI)) return 'large';
  if (above(cpu, ONE_CORE) || above(memory, TWO_GI)) return 'medium';
  return 'small';
}
