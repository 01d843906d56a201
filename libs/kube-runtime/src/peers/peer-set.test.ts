import { PeerSet, peersOfSlice, type EndpointSlice } from './peer-set';

const slice = (port: number | undefined, endpoints: Array<{ ip: string; ready?: boolean | null }>): EndpointSlice => ({
  metadata: { name: 's' },
  ...(port === undefined ? {} : { ports: [{ name: 'https', port }] }),
  endpoints: endpoints.map((e) => ({ addresses: [e.ip], ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }) })),
});

describe('peersOfSlice', () => {
  it('lists ready endpoints (a nil condition is ready) on the https port', () => {
    expect(
      peersOfSlice(
        slice(6443, [
          { ip: '10.0.0.1' },
          { ip: '10.0.0.2', ready: false },
          { ip: '10.0.0.3', ready: null },
          { ip: 'fd00::1', ready: true },
        ]),
      ),
    ).toEqual(['10.0.0.1:6443', '10.0.0.3:6443', '[fd00::1]:6443']);
  });

  it('lists nothing for a slice without a port', () => {
    expect(peersOfSlice(slice(undefined, [{ ip: '10.0.0.1' }]))).toEqual([]);
  });
});

describe('PeerSet', () => {
  const names = Array.from({ length: 200 }, (_, i) => `n-${i}`);

  it('owns everything alone: with no advertise address, or before any peer is listed', () => {
    expect(names.every((n) => new PeerSet('').owns('ns', n))).toBe(true);
    expect(names.every((n) => new PeerSet('10.0.0.1:6443').owns('ns', n))).toBe(true);
  });

  it('two replicas that see the same slices agree on one owner per name, and split the names', () => {
    const a = new PeerSet('10.0.0.1:6443');
    const b = new PeerSet('10.0.0.2:6443');
    a.update(['10.0.0.1:6443', '10.0.0.2:6443']);
    b.update(['10.0.0.2:6443', '10.0.0.1:6443']);
    const ownedByA = names.filter((n) => a.owns('ns', n));
    const ownedByB = names.filter((n) => b.owns('ns', n));
    expect(ownedByA.length + ownedByB.length).toBe(names.length);
    expect(ownedByA.filter((n) => ownedByB.includes(n))).toEqual([]);
    expect(ownedByA.length).toBeGreaterThan(0);
    expect(ownedByB.length).toBeGreaterThan(0);
    for (const n of names) expect(a.ownerOf('ns', n)).toBe(b.ownerOf('ns', n));
  });

  it('a replica not (yet) listed owns nothing', () => {
    const c = new PeerSet('10.0.0.3:6443');
    c.update(['10.0.0.1:6443', '10.0.0.2:6443']);
    expect(names.some((n) => c.owns('ns', n))).toBe(false);
    expect(c.others()).toEqual(['10.0.0.1:6443', '10.0.0.2:6443']);
  });

  it('tells when the peers changed recently; the first listing is not a change', () => {
    let now = 1_000_000;
    const a = new PeerSet('10.0.0.1:6443', () => now);
    expect(a.update(['10.0.0.1:6443', '10.0.0.2:6443'])).toBe(true);
    expect(a.changedWithin(60_000)).toBe(false);
    expect(a.update(['10.0.0.2:6443', '10.0.0.1:6443'])).toBe(false);
    now += 5_000;
    expect(a.update(['10.0.0.1:6443'])).toBe(true);
    expect(a.changedWithin(60_000)).toBe(true);
    now += 60_000;
    expect(a.changedWithin(60_000)).toBe(false);
  });
});
