import { isShlexError, shlexSplit } from './shlex';

describe('shlexSplit', () => {
  it.each([
    ['echo hi', ['echo', 'hi']],
    ['  python3   -c   "print(1)"  ', ['python3', '-c', 'print(1)']],
    [`sh -c 'echo "$HOME"; ls'`, ['sh', '-c', 'echo "$HOME"; ls']],
    ['a\\ b c', ['a b', 'c']],
    ['"a\\"b" \'c\\d\'', ['a"b', 'c\\d']],
    ['"x\\n"', ['x\\n']],
    ["''", ['']],
    ['a""b', ['ab']],
    ['', []],
  ])('splits %j as shlex.split does', (line, words) => {
    expect(shlexSplit(line)).toEqual(words);
  });

  it.each([['"open'], ["'open"], ['trailing\\']])('refuses %j', (line) => {
    let err: unknown;
    try {
      shlexSplit(line);
    } catch (e) {
      err = e;
    }
    expect(isShlexError(err)).toBe(true);
  });
});
