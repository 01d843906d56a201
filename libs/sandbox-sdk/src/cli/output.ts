import { stringify } from 'yaml';

/** What -o takes: the object (json, yaml), its resource name, or the table with more columns. */
export type OutputFormat = 'json' | 'yaml' | 'name' | 'wide';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['json', 'yaml', 'name', 'wide'];

/** kubectl's resource names for -o name. */
export const SANDBOX_RESOURCE = 'sandbox.agents.x-k8s.io';
export const CLAIM_RESOURCE = 'sandboxclaim.extensions.agents.x-k8s.io';

/** Rows as kubectl prints them: upper-case headers, columns padded to the widest cell. */
export function table(headers: string[], rows: string[][], o: { noHeaders?: boolean } = {}): string {
  const shown = o.noHeaders ? rows : [headers, ...rows];
  const widths = headers.map((_h, i) => Math.max(...shown.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd((widths[i] ?? 0) + 3)))
      .join('')
      .trimEnd();
  return shown.length === 0 ? '' : shown.map(line).join('\n') + '\n';
}

export function structured(format: 'json' | 'yaml', value: unknown): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value);
}

/** What a command that prints objects prints, in every format -o takes. */
export interface Printable {
  /** -o json|yaml */
  object: unknown;
  /** -o name: `resource/name`, one per line. */
  names: string[];
  headers: string[];
  rows: string[][];
  /** -o wide: columns after the others. */
  wide?: { headers: string[]; rows: string[][] };
  /** A line before the table (`sandbox/x claimed`); not printed with -o json|yaml|name. */
  status?: string;
  /** Printed instead of an empty table (`No sandboxes found in x namespace.`). */
  empty?: string;
}

export function render(p: Printable, o: { output: OutputFormat | undefined; noHeaders: boolean }): string {
  if (o.output === 'json' || o.output === 'yaml') return structured(o.output, p.object);
  if (o.output === 'name') return p.names.map((n) => `${n}\n`).join('');
  const status = p.status ? `${p.status}\n` : '';
  if (p.headers.length === 0) return status;
  if (p.rows.length === 0 && p.empty !== undefined) return `${status}${p.empty}\n`;
  const wide = o.output === 'wide' ? p.wide : undefined;
  const headers = wide ? [...p.headers, ...wide.headers] : p.headers;
  const rows = wide ? p.rows.map((r, i) => [...r, ...(wide.rows[i] ?? [])]) : p.rows;
  return status + table(headers, rows, { noHeaders: o.noHeaders });
}

/** `2m`, `3h`, `4d`: kubectl's AGE column. */
export function age(from: string | null | undefined, now = Date.now()): string {
  if (!from) return '<unknown>';
  const s = Math.max(0, Math.floor((now - Date.parse(from)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}
