import { SandboxScaleError } from '../errors/base';

/**
 * A Kubernetes resource quantity as an exact rational `num / den` (den > 0). Floats cannot
 * compare `2049Mi` with `2Gi` or `1001m` with `1` reliably, and the size-class thresholds are
 * strict, so every comparison is done on BigInts.
 */
export interface Quantity {
  readonly num: bigint;
  readonly den: bigint;
}

/** A string that is not a Kubernetes quantity; `position` is where the grammar broke. */
export class QuantityParseError extends SandboxScaleError {
  constructor(
    readonly input: string,
    readonly position: number,
    reason: string,
  ) {
    super(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': ${reason} at position ${position} of "${input}"`,
    );
  }
}

const DECIMAL_SUFFIXES: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIXES: Readonly<Record<string, bigint>> = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };

/** Exponents beyond this would build absurd BigInts from a tiny string (e.g. "1e999999999"). */
const MAX_EXPONENT = 1000;

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

interface Mantissa {
  negative: boolean;
  digits: string;
  fractionDigits: number;
  end: number;
}

function readMantissa(s: string): Mantissa {
  let pos = 0;
  let negative = false;
  if (s[pos] === '+' || s[pos] === '-') {
    negative = s[pos] === '-';
    pos++;
  }
  const intStart = pos;
  while (isDigit(s[pos])) pos++;
  let intPart = s.slice(intStart, pos);
  let fracPart = '';
  if (s[pos] === '.') {
    pos++;
    const fracStart = pos;
    while (isDigit(s[pos])) pos++;
    fracPart = s.slice(fracStart, pos);
  }
  if (intPart === '' && fracPart === '') throw new QuantityParseError(s, pos, 'expected a number');
  if (intPart === '') intPart = '0';
  return { negative, digits: intPart + fracPart, fractionDigits: fracPart.length, end: pos };
}

function readExponent(s: string, start: number): number {
  let pos = start;
  let sign = 1;
  if (s[pos] === '+' || s[pos] === '-') {
    sign = s[pos] === '-' ? -1 : 1;
    pos++;
  }
  const digitsStart = pos;
  while (isDigit(s[pos])) pos++;
  if (pos === digitsStart || pos !== s.length) throw new QuantityParseError(s, pos, 'expected an integer exponent');
  const value = Number(s.slice(digitsStart));
  if (value > MAX_EXPONENT) throw new QuantityParseError(s, digitsStart, 'exponent out of range');
  return sign * value;
}

function scale(m: Mantissa, pow10: number, pow2: bigint): Quantity {
  let num = BigInt(m.digits) * (1n << pow2);
  if (m.negative) num = -num;
  const exp = pow10 - m.fractionDigits;
  return exp >= 0 ? { num: num * 10n ** BigInt(exp), den: 1n } : { num, den: 10n ** BigInt(-exp) };
}

/**
 * Parses a Kubernetes quantity exactly: decimal SI (`n u m k M G T P E`), binary SI
 * (`Ki Mi Gi Ti Pi Ei`), decimal exponents (`1e3`, `5E-2`) and fractions (`1.5`, `.5`, `5.`).
 * Numbers are accepted too, because JSON may carry `cpu: 2`.
 */
export function parseQuantity(input: string | number): Quantity {
  const s = typeof input === 'number' ? numberToQuantityString(input) : input;
  if (s.length === 0) throw new QuantityParseError(s, 0, 'empty quantity');
  const m = readMantissa(s);
  const suffix = s.slice(m.end);
  const binary = BINARY_SUFFIXES[suffix];
  if (binary !== undefined) return scale(m, 0, binary);
  const decimal = DECIMAL_SUFFIXES[suffix];
  if (decimal !== undefined) return scale(m, decimal, 0n);
  // A bare `E` is exa (handled above); `e`/`E` followed by a signed integer is an exponent.
  if (suffix[0] === 'e' || suffix[0] === 'E') return scale(m, readExponent(s, m.end + 1), 0n);
  throw new QuantityParseError(s, m.end, `unknown suffix "${suffix}"`);
}

function numberToQuantityString(n: number): string {
  if (!Number.isFinite(n)) throw new QuantityParseError(String(n), 0, 'not a finite number');
  return String(n);
}

/** Parses, or returns undefined for anything that is not a quantity. */
export function tryParseQuantity(input: string | number): Quantity | undefined {
  try {
    return parseQuantity(input);
  } catch (err) {
    if (err instanceof QuantityParseError) return undefined;
    throw err;
  }
}

/** -1, 0 or 1 as a < b, a = b, a > b, exactly. */
export function compareQuantities(a: Quantity, b: Quantity): -1 | 0 | 1 {
  const l = a.num * b.den;
  const r = b.num * a.den;
  return l < r ? -1 : l > r ? 1 : 0;
}

export function isZeroQuantity(q: Quantity): boolean {
  return q.num === 0n;
}
