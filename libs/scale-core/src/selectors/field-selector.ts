import { BadRequestError } from '../errors/status-errors';
import { SelectorParseError } from './selector-parse-error';

/** `==` means the same as `=` in field selectors, so the parsed form only keeps `=`. */
export type FieldOperator = '=' | '!=';

export interface FieldRequirement {
  readonly field: string;
  readonly operator: FieldOperator;
  /** Unescaped value. */
  readonly value: string;
}

/** Terms ANDed, in canonical order; no terms matches everything. */
export interface FieldSelector {
  readonly requirements: readonly FieldRequirement[];
}

/** Escapes `\`, `,` and `=` in a field selector value, as apimachinery's fields.EscapeValue. */
export function escapeFieldValue(value: string): string {
  return value.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/** Splits at unescaped commas; each part carries its start index for error positions. */
function splitTerms(s: string): { text: string; pos: number }[] {
  const out: { text: string; pos: number }[] = [];
  let start = 0;
  let escaped = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (escaped) escaped = false;
    else if (c === '\\') escaped = true;
    else if (c === ',') {
      out.push({ text: s.slice(start, i), pos: start });
      start = i + 1;
    }
  }
  out.push({ text: s.slice(start), pos: start });
  return out;
}

/** The first operator in the term, trying `!=`, `==`, `=` at each position (apimachinery splitTerm). */
function splitTerm(term: string): { field: string; op: string; rhs: string; rhsPos: number } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of ['!=', '==', '=']) {
      if (term.startsWith(op, i)) return { field: term.slice(0, i), op, rhs: term.slice(i + op.length), rhsPos: i + op.length };
    }
  }
  return undefined;
}

function unescapeValue(selector: string, rhs: string, pos: number): string {
  let out = '';
  for (let i = 0; i < rhs.length; i++) {
    const c = rhs.charAt(i);
    if (c === '\\') {
      const n = rhs.charAt(i + 1);
      if (n !== '\\' && n !== ',' && n !== '=') throw new SelectorParseError('field', selector, pos + i, `invalid escape sequence: \\${n}`);
      out += n;
      i++;
    } else if (c === ',' || c === '=') {
      throw new SelectorParseError('field', selector, pos + i, `unescaped character in value: '${c}'`);
    } else out += c;
  }
  return out;
}

const compareReqs = (a: FieldRequirement, b: FieldRequirement): number => {
  const x = formatFieldRequirement(a);
  const y = formatFieldRequirement(b);
  return x < y ? -1 : x > y ? 1 : 0;
};

/**
 * Parses a field selector: `field=value`, `field==value`, `field!=value`, comma = AND, with
 * `\,` `\=` `\\` escapes in values. Throws SelectorParseError naming where it broke.
 * Field names are not checked here; see `assertFieldsSupported`.
 */
export function parseFieldSelector(selector: string): FieldSelector {
  if (selector === '') return { requirements: [] };
  const reqs: FieldRequirement[] = [];
  for (const part of splitTerms(selector)) {
    if (part.text === '') continue;
    const t = splitTerm(part.text);
    if (t === undefined) throw new SelectorParseError('field', selector, part.pos, `can't understand '${part.text}'`);
    const value = unescapeValue(selector, t.rhs, part.pos + t.rhsPos);
    reqs.push({ field: t.field, operator: t.op === '!=' ? '!=' : '=', value });
  }
  return { requirements: reqs.sort(compareReqs) };
}

export function formatFieldRequirement(r: FieldRequirement): string {
  return `${r.field}${r.operator}${escapeFieldValue(r.value)}`;
}

/** Canonical text; `parseFieldSelector(formatFieldSelector(s))` gives `s` back. */
export function formatFieldSelector(s: FieldSelector): string {
  return [...s.requirements].sort(compareReqs).map(formatFieldRequirement).join(',');
}

/** Whether the fields satisfy every term; a field the object lacks reads as ''. */
export function fieldSelectorMatches(s: FieldSelector, fields: Readonly<Record<string, string>>): boolean {
  return s.requirements.every((r) => {
    const actual = Object.prototype.hasOwnProperty.call(fields, r.field) ? fields[r.field] : '';
    return r.operator === '=' ? actual === r.value : actual !== r.value;
  });
}

/** Throws BadRequest `field label not supported: <f>` for the first field not in `supported`. */
export function assertFieldsSupported(s: FieldSelector, supported: readonly string[]): void {
  for (const r of s.requirements) {
    if (!supported.includes(r.field)) throw new BadRequestError(`field label not supported: ${r.field}`);
  }
}

/** The value a selector pins `field` to with `=` (e.g. metadata.name for a SAR), if any. */
export function requiresExactMatch(s: FieldSelector, field: string): string | undefined {
  return s.requirements.find((r) => r.field === field && r.operator === '=')?.value;
}
