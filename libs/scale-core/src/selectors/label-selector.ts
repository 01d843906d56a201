import { lexLabelSelector, type LabelToken } from './label-lexer';
import { validateLabelKey, validateLabelValue } from './label-validation';
import { SelectorParseError } from './selector-parse-error';

/** Operators as apimachinery's selection.Operator spells them. */
export type LabelOperator = '=' | '==' | '!=' | 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt';

/** One requirement; `values` are sorted and unique (one value for =, ==, !=, gt, lt; none for exists, !). */
export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  readonly values: readonly string[];
}

/** A parsed label selector: requirements ANDed, sorted by key. No requirements matches everything. */
export interface LabelSelector {
  readonly requirements: readonly LabelRequirement[];
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** strconv.ParseInt(s, 10, 64): optional sign, decimal digits, int64 range. */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const v = BigInt(s);
  return v < INT64_MIN || v > INT64_MAX ? undefined : v;
}

/** Checks a requirement as NewRequirement does; returns the problem or undefined. */
export function requirementProblem(r: LabelRequirement): string | undefined {
  const keyErrs = validateLabelKey(r.key);
  if (keyErrs.length > 0) return `key: Invalid value: ${JSON.stringify(r.key)}: ${keyErrs.join('; ')}`;
  const n = r.values.length;
  switch (r.operator) {
    case 'in':
    case 'notin':
      if (n === 0) return "for 'in', 'notin' operators, values set can't be empty";
      break;
    case '=':
    case '==':
    case '!=':
      if (n !== 1) return 'exact-match compatibility requires one single value';
      break;
    case 'exists':
    case '!':
      if (n !== 0) return 'values set must be empty for exists and does not exist';
      break;
    case 'gt':
    case 'lt':
      if (n !== 1) return "for 'Gt', 'Lt' operators, exactly one value is required";
      if (parseInt64(r.values[0] ?? '') === undefined) return "for 'Gt', 'Lt' operators, the value must be an integer";
      break;
  }
  for (const v of r.values) {
    const errs = validateLabelValue(v);
    if (errs.length > 0) return `values: Invalid value: ${JSON.stringify(v)}: ${errs.join('; ')}`;
  }
  return undefined;
}

const sortedUnique = (values: Iterable<string>): string[] => [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

class LabelParser {
  #pos = 0;
  constructor(
    private readonly input: string,
    private readonly tokens: readonly LabelToken[],
  ) {}

  /** Values context: `in`/`notin` are plain identifiers there (a label may be called "in"). */
  #peek(values = true): LabelToken {
    const t = this.tokens[this.#pos] ?? this.tokens[this.tokens.length - 1] ?? { type: 'end', literal: '', pos: this.input.length };
    return values && (t.type === 'in' || t.type === 'notin') ? { ...t, type: 'identifier' } : t;
  }

  #next(values = true): LabelToken {
    const t = this.#peek(values);
    if (this.#pos < this.tokens.length - 1) this.#pos++;
    return t;
  }

  #fail(t: LabelToken, detail: string): never {
    throw new SelectorParseError('label', this.input, t.pos, detail);
  }

  parse(): LabelRequirement[] {
    const out: LabelRequirement[] = [];
    for (;;) {
      const t = this.#peek();
      if (t.type === 'end') return out;
      if (t.type !== 'identifier' && t.type !== 'doesNotExist')
        this.#fail(t, `found '${t.literal}', expected: !, identifier, or 'end of string'`);
      out.push(this.#requirement());
      const sep = this.#next();
      if (sep.type === 'end') return out;
      if (sep.type !== 'comma') this.#fail(sep, `found '${sep.literal}', expected: ',' or 'end of string'`);
      const after = this.#peek();
      if (after.type !== 'identifier' && after.type !== 'doesNotExist')
        this.#fail(after, `found '${after.literal}', expected: identifier after ','`);
    }
  }

  #requirement(): LabelRequirement {
    let t = this.#next();
    const negated = t.type === 'doesNotExist';
    if (negated) t = this.#next();
    if (t.type !== 'identifier') this.#fail(t, `unable to parse requirement: found '${t.literal}', expected: identifier`);
    const keyToken = t;
    const la = this.#peek();
    let r: LabelRequirement;
    if (negated) r = { key: keyToken.literal, operator: '!', values: [] };
    else if (la.type === 'end' || la.type === 'comma') r = { key: keyToken.literal, operator: 'exists', values: [] };
    else {
      const operator = this.#operator();
      const values = operator === 'in' || operator === 'notin' ? this.#setValues() : this.#exactValue();
      r = { key: keyToken.literal, operator, values: sortedUnique(values) };
    }
    const problem = requirementProblem(r);
    if (problem !== undefined) this.#fail(keyToken, `unable to parse requirement: ${problem}`);
    return r;
  }

  #operator(): LabelOperator {
    const t = this.#next(false);
    const ops: Partial<Record<LabelToken['type'], LabelOperator>> = {
      in: 'in',
      notin: 'notin',
      equals: '=',
      doubleEquals: '==',
      notEquals: '!=',
      greaterThan: 'gt',
      lessThan: 'lt',
    };
    const op = ops[t.type];
    if (op === undefined) this.#fail(t, `unable to parse requirement: found '${t.literal}', expected: in, notin, =, ==, !=, gt, lt`);
    return op;
  }

  #exactValue(): string[] {
    const la = this.#peek();
    if (la.type === 'end' || la.type === 'comma') return [''];
    const t = this.#next();
    if (t.type !== 'identifier') this.#fail(t, `unable to parse requirement: found '${t.literal}', expected: identifier`);
    return [t.literal];
  }

  /** `( v1, v2 )`; empty slots (`()`, `(,a)`, `(a,)`) are the empty value, as in Go. */
  #setValues(): string[] {
    const open = this.#next();
    if (open.type !== 'openParen') this.#fail(open, `unable to parse requirement: found '${open.literal}' expected: '('`);
    const values: string[] = [];
    let expectValue = true;
    for (;;) {
      const t = this.#next();
      if (t.type === 'closeParen') {
        if (expectValue) values.push('');
        return values;
      }
      if (t.type === 'comma') {
        if (expectValue) values.push('');
        expectValue = true;
      } else if (t.type === 'identifier' && expectValue) {
        values.push(t.literal);
        expectValue = false;
      } else {
        this.#fail(t, `unable to parse requirement: found '${t.literal}', expected: ',', ')' or identifier`);
      }
    }
  }
}

const byKey = (a: LabelRequirement, b: LabelRequirement): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * Parses a label selector with the full Kubernetes grammar: `k=v`, `k==v`, `k!=v`,
 * `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`, comma = AND, whitespace allowed.
 * Throws SelectorParseError naming the character where the syntax broke.
 */
export function parseLabelSelector(selector: string): LabelSelector {
  const tokens = lexLabelSelector(selector);
  const bad = tokens.find((t) => t.type === 'error');
  if (bad !== undefined) throw new SelectorParseError('label', selector, bad.pos, `error expected: keyword found '${bad.literal}'`);
  const requirements = new LabelParser(selector, tokens).parse();
  return { requirements: [...requirements].sort(byKey) };
}

/** The canonical text of one requirement, as apimachinery's Requirement.String prints it. */
export function formatLabelRequirement(r: LabelRequirement): string {
  const values = sortedUnique(r.values);
  switch (r.operator) {
    case 'exists':
      return r.key;
    case '!':
      return `!${r.key}`;
    case 'in':
    case 'notin':
      return `${r.key} ${r.operator} (${values.join(',')})`;
    case 'gt':
      return `${r.key}>${values[0] ?? ''}`;
    case 'lt':
      return `${r.key}<${values[0] ?? ''}`;
    default:
      return `${r.key}${r.operator}${values[0] ?? ''}`;
  }
}

/** The canonical text of a selector; `parseLabelSelector(formatLabelSelector(s))` gives `s` back. */
export function formatLabelSelector(s: LabelSelector): string {
  return [...s.requirements].sort(byKey).map(formatLabelRequirement).join(',');
}

function requirementMatches(r: LabelRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  switch (r.operator) {
    case '=':
    case '==':
    case 'in':
      return value !== undefined && r.values.includes(value);
    case '!=':
    case 'notin':
      return value === undefined || !r.values.includes(value);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (value === undefined) return false;
      const actual = parseInt64(value);
      const bound = parseInt64(r.values[0] ?? '');
      if (actual === undefined || bound === undefined) return false;
      return r.operator === 'gt' ? actual > bound : actual < bound;
    }
  }
}

/** Whether labels satisfy every requirement; a missing label satisfies only !=, notin and !. */
export function labelSelectorMatches(s: LabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  return s.requirements.every((r) => requirementMatches(r, l));
}

/** The selector that matches everything. */
export const EVERYTHING_LABEL_SELECTOR: LabelSelector = { requirements: [] };
