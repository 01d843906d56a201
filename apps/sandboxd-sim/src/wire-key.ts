import { ApiError } from './api-error';

/**
 * Pool keys as the wire needs them: defaults, the allowed axes, and one shared object per
 * key so that a million sandboxes hold a pointer each, not three strings.
 */
export const NETS = ['none', 'egress'] as const;
export const SIZES = ['small', 'medium', 'large', 'xlarge', '2xlarge'] as const;
export type Net = (typeof NETS)[number];
export type Size = (typeof SIZES)[number];

export const SIZE_TIERS: Readonly<Record<Size, { cpus: number; memBytes: number }>> = {
  small: { cpus: 1, memBytes: 512 * 2 ** 20 },
  medium: { cpus: 2, memBytes: 2 ** 30 },
  large: { cpus: 4, memBytes: 4 * 2 ** 30 },
  xlarge: { cpus: 4, memBytes: 8 * 2 ** 30 },
  '2xlarge': { cpus: 8, memBytes: 16 * 2 ** 30 },
};

/** Template and checkpoint names. */
export const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9._:/-]{0,62}$/;

export interface SimKey {
  readonly template: string;
  readonly net: Net;
  readonly size: Size;
  /** Stable string form, used as a map key. */
  readonly id: string;
}

function isNet(s: string): s is Net {
  return (NETS as readonly string[]).includes(s);
}

function isSize(s: string): s is Size {
  return (SIZES as readonly string[]).includes(s);
}

export class KeyTable {
  readonly #keys = new Map<string, SimKey>();

  /** Validates and interns; an invalid axis is `400 invalid pool key: …`. */
  parse(template: string | null | undefined, net: string | null | undefined, size: string | null | undefined): SimKey {
    const t = template ?? '';
    const n = net || 'none';
    const s = size || 'small';
    if (t === '') throw new ApiError(400, 'invalid pool key: empty template');
    if (!isNet(n)) throw new ApiError(400, `invalid pool key: unknown net ${JSON.stringify(n)}`);
    if (!isSize(s)) throw new ApiError(400, `invalid pool key: unknown size ${JSON.stringify(s)}`);
    return this.intern(t, n, s);
  }

  intern(template: string, net: Net, size: Size): SimKey {
    const id = `${template}\u0000${net}\u0000${size}`;
    let key = this.#keys.get(id);
    if (key === undefined) {
      key = Object.freeze({ template, net, size, id });
      this.#keys.set(id, key);
    }
    return key;
  }
}

export function wireKey(key: SimKey): { template: string; net: string; size: string } {
  return { template: key.template, net: key.net, size: key.size };
}

/** Decoded-body helper: a required name matching NAME_RE, else 400 with the given text. */
export function checkName(name: string, what: string): string {
  if (!NAME_RE.test(name)) throw new ApiError(400, `invalid ${what} name`);
  return name;
}
