/** Tokens of the Kubernetes label selector grammar (apimachinery labels/selector.go). */
export type LabelTokenType =
  | 'identifier'
  | 'in'
  | 'notin'
  | 'equals'
  | 'doubleEquals'
  | 'notEquals'
  | 'doesNotExist'
  | 'greaterThan'
  | 'lessThan'
  | 'openParen'
  | 'closeParen'
  | 'comma'
  | 'end'
  | 'error';

export interface LabelToken {
  readonly type: LabelTokenType;
  readonly literal: string;
  /** 0-based index of the token's first character in the selector. */
  readonly pos: number;
}

const SYMBOLS: Readonly<Record<string, LabelTokenType>> = {
  ')': 'closeParen',
  ',': 'comma',
  '!': 'doesNotExist',
  '==': 'doubleEquals',
  '=': 'equals',
  '>': 'greaterThan',
  '<': 'lessThan',
  '!=': 'notEquals',
  '(': 'openParen',
};
const KEYWORDS: Readonly<Record<string, LabelTokenType>> = { in: 'in', notin: 'notin' };

const isWhitespace = (c: string): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n';
const isSpecial = (c: string): boolean => c === '=' || c === '!' || c === '(' || c === ')' || c === ',' || c === '>' || c === '<';

/** Longest run of symbol characters that is still a token, as the Go lexer reads `!=` vs `!`. */
function lexSymbol(s: string, start: number): { token: LabelToken; next: number } {
  let best: LabelToken | undefined;
  let i = start;
  while (i < s.length && isSpecial(s.charAt(i))) {
    const candidate = s.slice(start, i + 1);
    const type = SYMBOLS[candidate];
    if (type !== undefined) best = { type, literal: candidate, pos: start };
    else if (best !== undefined) break;
    i++;
  }
  if (best === undefined) return { token: { type: 'error', literal: s.slice(start, i), pos: start }, next: i };
  return { token: best, next: start + best.literal.length };
}

/** Splits a label selector into tokens; the last one is always `end` (or an `error`). */
export function lexLabelSelector(s: string): LabelToken[] {
  const out: LabelToken[] = [];
  let i = 0;
  for (;;) {
    while (i < s.length && isWhitespace(s.charAt(i))) i++;
    if (i >= s.length) {
      out.push({ type: 'end', literal: '', pos: s.length });
      return out;
    }
    if (isSpecial(s.charAt(i))) {
      const { token, next } = lexSymbol(s, i);
      out.push(token);
      if (token.type === 'error') return out;
      i = next;
      continue;
    }
    const start = i;
    while (i < s.length && !isWhitespace(s.charAt(i)) && !isSpecial(s.charAt(i))) i++;
    const word = s.slice(start, i);
    out.push({ type: KEYWORDS[word] ?? 'identifier', literal: word, pos: start });
  }
}
