/** A command line that cannot be split (an unclosed quote, a trailing escape). */
export class ShlexError extends Error {
  override readonly name = 'ShlexError';
}

export function isShlexError(err: unknown): err is ShlexError {
  return err instanceof Error && err.name === 'ShlexError';
}

const SPACE = /[ \t\r\n]/;
/** Inside double quotes a backslash escapes only these (POSIX sh). */
const DQ_ESCAPABLE = new Set(['\\', '"', '$', '`', '\n']);

interface State {
  words: string[];
  word: string;
  /** A word has started (so `''` yields an empty word). */
  inWord: boolean;
}

/**
 * Splits a command line into words as Python's `shlex.split` does in POSIX mode, without a
 * shell: whitespace separates words, single quotes keep everything, double quotes keep all but
 * backslash escapes of `\ " $ \``, a backslash outside quotes escapes the next character.
 */
export function shlexSplit(line: string): string[] {
  const st: State = { words: [], word: '', inWord: false };
  let i = 0;
  while (i < line.length) {
    const c = line[i] as string;
    if (c === "'") i = singleQuoted(line, i + 1, st);
    else if (c === '"') i = doubleQuoted(line, i + 1, st);
    else if (c === '\\') {
      if (i + 1 >= line.length) throw new ShlexError('no escaped character');
      st.word += line[i + 1];
      st.inWord = true;
      i += 2;
    } else if (SPACE.test(c)) {
      endWord(st);
      i++;
    } else {
      st.word += c;
      st.inWord = true;
      i++;
    }
  }
  endWord(st);
  return st.words;
}

function endWord(st: State): void {
  if (st.inWord) st.words.push(st.word);
  st.word = '';
  st.inWord = false;
}

function singleQuoted(line: string, from: number, st: State): number {
  const end = line.indexOf("'", from);
  if (end === -1) throw new ShlexError('no closing quotation');
  st.word += line.slice(from, end);
  st.inWord = true;
  return end + 1;
}

function doubleQuoted(line: string, from: number, st: State): number {
  st.inWord = true;
  for (let i = from; i < line.length; i++) {
    const c = line[i] as string;
    if (c === '"') return i + 1;
    if (c === '\\' && i + 1 < line.length && DQ_ESCAPABLE.has(line[i + 1] as string)) {
      st.word += line[i + 1];
      i++;
    } else st.word += c;
  }
  throw new ShlexError('no closing quotation');
}
