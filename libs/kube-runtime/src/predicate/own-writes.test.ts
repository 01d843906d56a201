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

describe('OwnWrites with writes in flight', () => {
  it('holds an update that arrives before its write is answered, then drops it as the write it was', () => {
    const own = new OwnWrites();
    const released: unknown[] = [];
    own.releaseTo((o) => released.push(o));
    const p = own.predicate();
    const done = own.begin('u1');
    // the watch event of the write comes first
    expect(p.update?.(obj('5'), obj('4'))).toBe(false);
    expect(own.held).toBe(1);
    own.note(obj('5'));
    done();
    expect(released).toEqual([]);
    expect(own.held).toBe(0);
    expect(own.size).toBe(0);
  });

  it('releases a held update that is not what the write returned, once every write of the object is answered', () => {
    const own = new OwnWrites();
    const released: unknown[] = [];
    own.releaseTo((o) => released.push(o));
    const p = own.predicate();
    const first = own.begin('u1');
    const second = own.begin('u1');
    expect(p.update?.(obj('6'), obj('5'))).toBe(false);
    // another object is not held
    expect(p.update?.(obj('6', 'u2'), obj('5', 'u2'))).toBe(true);
    own.note(obj('7'));
    first();
    expect(released).toEqual([]);
    // a write that failed returns nothing; done twice counts once
    second();
    second();
    expect(released).toEqual([obj('6')]);
    expect(p.update?.(obj('8'), obj('7'))).toBe(true);
  });

  it('holds nothing without a release target, and never a spec change', () => {
    const own = new OwnWrites();
    const p = own.predicate();
    own.begin('u1');
    expect(p.update?.(obj('6'), obj('5'))).toBe(true);
    const withRelease = new OwnWrites();
    withRelease.releaseTo(() => undefined);
    withRelease.begin('u1');
    expect(
      withRelease
        .predicate()
        .update?.(
          { metadata: { uid: 'u1', resourceVersion: '7', generation: 2 } },
          { metadata: { uid: 'u1', resourceVersion: '6', generation: 1 } },
        ),
    ).toBe(true);
  });
});
