import { SandboxNames } from './sandbox-names';

describe('SandboxNames', () => {
  const served = new Set(['a/served']);
  const listed = new Set(['a/listed']);
  const names = new SandboxNames({
    cache: { get: (ns, name) => (served.has(`${ns}/${name}`) ? ({} as never) : undefined) },
    index: { getByName: (ns, name) => (listed.has(`${ns}/${name}`) ? ({} as never) : undefined) },
  });

  it('takes a name the view serves or the claim index lists, in its namespace only', () => {
    expect(names.isTaken('a', 'served')).toBe(true);
    expect(names.isTaken('a', 'listed')).toBe(true);
    expect(names.isTaken('b', 'served')).toBe(false);
    expect(names.isTaken('a', 'free')).toBe(false);
  });

  it('holds a name under way for every maker until it is released', () => {
    const release = names.hold('a', 'new');
    expect(names.isTaken('a', 'new')).toBe(true);
    release();
    expect(names.isTaken('a', 'new')).toBe(false);
  });
});
