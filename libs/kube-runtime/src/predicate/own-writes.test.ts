import { OwnWrites } from './own-writes';

const obj = (rv: string, uid = 'u1') => ({ metadata: { name: 'a', namespace: 'ns', uid, resourceVersion: rv } });

describe('OwnWrites', () => {
  it('skips the watch event of exactly the version a write returned, once', () => {
    const own = new OwnWrites();
    const p = own.predicate();
    own.note(obj('5'));
    expect(p.update?.(obj('5'), obj('4'))).toBe(false);
    // the same version again (a resync, a relist) is no longer ours to skip
    expect(p.update?.(obj('5'), obj('5'))).toBe(true);
    expect(own.size).toBe(0);
  });

  it('passes every other version and every other object', () => {
    const own = new OwnWrites();
    const p = own.predicate();
    own.note(obj('5'));
    expect(p.update?.(obj('6'), obj('5'))).toBe(true);
    expect(p.update?.(obj('5', 'u2'), obj('4', 'u2'))).toBe(true);
    expect(p.update?.({ metadata: { name: 'a' } }, { metadata: { name: 'a' } })).toBe(true);
  });

  it('still passes an own version that changed the spec (a no-op write returns the current version)', () => {
    const own = new OwnWrites();
    own.note({ metadata: { uid: 'u1', resourceVersion: '7', generation: 2 } });
    expect(
      own
        .predicate()
        .update?.(
          { metadata: { uid: 'u1', resourceVersion: '7', generation: 2 } },
          { metadata: { uid: 'u1', resourceVersion: '6', generation: 1 } },
        ),
    ).toBe(true);
  });

  it('forgets a write whose event never came, so memory stays bounded', () => {
    let now = 0;
    const own = new OwnWrites({ ttlMs: 1000, maxEntries: 2, now: () => now });
    own.note(obj('1'));
    own.note(obj('2'));
    own.note(obj('3'));
    expect(own.size).toBe(2);
    expect(own.take(obj('1'))).toBe(false);
    now = 2000;
    expect(own.take(obj('3'))).toBe(false);
  });
});
