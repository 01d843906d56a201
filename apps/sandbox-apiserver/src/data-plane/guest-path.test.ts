import { statusForError } from '@sandbox-scale/scale-core';
import { baseOf, fileMode, flag, guestPath, joinGuest, parentOf } from './guest-path';

const refusal = (fn: () => unknown): { code: number; message: string } | 'accepted' => {
  try {
    fn();
  } catch (err) {
    return statusForError(err);
  }
  return 'accepted';
};

describe('guest paths', () => {
  it.each([
    ['/work/x.py', '/work/x.py'],
    ['work/x.py', '/work/x.py'],
    ['/work//./x.py/', '/work/x.py'],
    ['/', '/'],
    ['.', '/'],
    ['/a/b..c/..d', '/a/b..c/..d'],
  ])('normalises %j to %j', (raw, want) => {
    expect(guestPath(raw)).toBe(want);
  });

  it.each([
    ['', 'required'],
    ['/work/../etc/passwd', '".."'],
    ['..', '".."'],
    ['a/../../b', '".."'],
    ['/work/a\u0000b', 'control character'],
    ['/work/a\nb', 'control character'],
    ['x'.repeat(5000), 'longer than'],
  ])('refuses %j with a 400 naming the problem', (raw, problem) => {
    expect(refusal(() => guestPath(raw))).toMatchObject({ code: 400, message: expect.stringContaining(problem) });
  });

  it('splits and joins normalised paths', () => {
    expect([parentOf('/a/b/c'), parentOf('/a'), parentOf('/')]).toEqual(['/a/b', '/', '/']);
    expect([baseOf('/a/b'), baseOf('/')]).toEqual(['b', '']);
    expect([joinGuest('/', 'x'), joinGuest('/a', 'x')]).toEqual(['/x', '/a/x']);
  });

  it('reads ?mode= as octal permission bits and flags as booleans', () => {
    expect([fileMode('0755'), fileMode('644'), fileMode('04755'), fileMode(null), fileMode('')]).toEqual([
      0o755,
      0o644,
      0o4755,
      undefined,
      undefined,
    ]);
    for (const bad of ['0x1ff', '999', '-1', '077777']) expect(refusal(() => fileMode(bad))).toMatchObject({ code: 400 });
    const q = new URLSearchParams('a=true&b=0&c=&d=maybe');
    expect([flag(q, 'a'), flag(q, 'b'), flag(q, 'c'), flag(q, 'none')]).toEqual([true, false, true, false]);
    expect(refusal(() => flag(q, 'd'))).toMatchObject({ code: 400 });
  });
});
