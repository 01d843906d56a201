import { ClaimIndex, estimateClaimIndexEntryBytes, InvalidClaimIndexOptionsError } from './claim-index';

const loc = (i: number, node = 'node-a') => ({
  namespace: 'team-a',
  name: `sb-${i}`,
  node,
  claimId: `sb_${i.toString(16).padStart(16, '0')}`,
});
const entryBytes = estimateClaimIndexEntryBytes('team-a', 'sb-1', 'sb_0000000000000001');

describe('ClaimIndex', () => {
  it('finds a sandbox by namespace/name and by claim id right after the claim', () => {
    const idx = new ClaimIndex({ maxBytes: 1 << 20 });
    idx.put({ namespace: 'ns', name: 's1', node: 'n2', claimId: 'sb_abc' });
    expect(idx.getByName('ns', 's1')).toEqual({ namespace: 'ns', name: 's1', node: 'n2', claimId: 'sb_abc' });
    expect(idx.getByClaimId('sb_abc')).toEqual({ namespace: 'ns', name: 's1', node: 'n2', claimId: 'sb_abc' });
    expect(idx.getByName('ns', 'other')).toBeUndefined();
    expect(idx.getByName('other', 's1')).toBeUndefined();
  });

  it('replaces an entry for the same name, and the old claim id stops resolving', () => {
    const idx = new ClaimIndex({ maxBytes: 1 << 20 });
    idx.put({ namespace: 'ns', name: 's1', node: 'n1', claimId: 'sb_old' });
    idx.put({ namespace: 'ns', name: 's1', node: 'n2', claimId: 'sb_new' });
    expect(idx.size).toBe(1);
    expect(idx.getByClaimId('sb_old')).toBeUndefined();
    expect(idx.getByName('ns', 's1')?.claimId).toBe('sb_new');
  });

  it('moves a claim id that reappears under another name', () => {
    const idx = new ClaimIndex({ maxBytes: 1 << 20 });
    idx.put({ namespace: 'ns', name: 'a', node: 'n1', claimId: 'sb_1' });
    idx.put({ namespace: 'ns', name: 'b', node: 'n1', claimId: 'sb_1' });
    expect(idx.getByName('ns', 'a')).toBeUndefined();
    expect(idx.getByClaimId('sb_1')?.name).toBe('b');
    expect(idx.size).toBe(1);
  });

  it('forgets released sandboxes by either key and keeps the byte count exact', () => {
    const idx = new ClaimIndex({ maxBytes: 1 << 20 });
    idx.put(loc(1));
    idx.put(loc(2));
    const both = idx.bytes;
    expect(idx.deleteByName('team-a', 'sb-1')).toBe(true);
    expect(idx.getByClaimId(loc(1).claimId)).toBeUndefined();
    expect(idx.deleteByClaimId(loc(2).claimId)).toBe(true);
    expect(idx.getByName('team-a', 'sb-2')).toBeUndefined();
    expect(idx.deleteByName('team-a', 'sb-2')).toBe(false);
    expect(idx.size).toBe(0);
    expect(idx.bytes).toBe(0);
    expect(both).toBeGreaterThan(0);
  });

  it('evicts the least recently used entries to stay within the byte budget', () => {
    const idx = new ClaimIndex({ maxBytes: entryBytes * 3 });
    idx.put(loc(1));
    idx.put(loc(2));
    idx.put(loc(3));
    expect(idx.getByName('team-a', 'sb-1')).toBeDefined(); // 1 is now the most recent
    idx.put(loc(4));
    expect(idx.size).toBe(3);
    expect(idx.getByName('team-a', 'sb-2')).toBeUndefined();
    expect(idx.getByClaimId(loc(2).claimId)).toBeUndefined();
    expect(idx.getByName('team-a', 'sb-1')).toBeDefined();
    expect(idx.getByName('team-a', 'sb-4')).toBeDefined();
    expect(idx.bytes).toBeLessThanOrEqual(entryBytes * 3);
  });

  it('counts a lookup by claim id as a use', () => {
    const idx = new ClaimIndex({ maxBytes: entryBytes * 2 });
    idx.put(loc(1));
    idx.put(loc(2));
    idx.getByClaimId(loc(1).claimId);
    idx.put(loc(3));
    expect(idx.getByName('team-a', 'sb-1')).toBeDefined();
    expect(idx.getByName('team-a', 'sb-2')).toBeUndefined();
  });

  it('holds about budget / entry size entries under a steady stream', () => {
    const budget = 200_000 * 216;
    const idx = new ClaimIndex({ maxBytes: budget });
    for (let i = 0; i < 250_000; i++) idx.put(loc(i, `node-${i % 40}`));
    expect(idx.bytes).toBeLessThanOrEqual(budget);
    expect(idx.size).toBeGreaterThan(190_000);
    expect(idx.getByName('team-a', 'sb-249999')?.node).toBe('node-39');
    expect(idx.getByName('team-a', 'sb-0')).toBeUndefined();
  });

  it('estimates bytes from string lengths, two bytes per character beyond Latin-1', () => {
    expect(estimateClaimIndexEntryBytes('ns', 'a'.repeat(40), 'sb_1')).toBeGreaterThan(estimateClaimIndexEntryBytes('ns', 'a', 'sb_1'));
    expect(estimateClaimIndexEntryBytes('ns', 'ü'.repeat(8), 'sb_1')).toBeLessThan(
      estimateClaimIndexEntryBytes('ns', '名'.repeat(8), 'sb_1'),
    );
    // A typical entry lands near the ~206 B the reference planned.
    expect(entryBytes).toBeGreaterThan(150);
    expect(entryBytes).toBeLessThan(260);
  });

  it('rejects a budget that is not positive', () => {
    expect(() => new ClaimIndex({ maxBytes: 0 })).toThrow(InvalidClaimIndexOptionsError);
    expect(() => new ClaimIndex({ maxBytes: Number.NaN })).toThrow(InvalidClaimIndexOptionsError);
  });

  it('clears everything', () => {
    const idx = new ClaimIndex({ maxBytes: 1 << 20 });
    idx.put(loc(1));
    idx.clear();
    expect(idx.size).toBe(0);
    expect(idx.bytes).toBe(0);
    expect(idx.getByClaimId(loc(1).claimId)).toBeUndefined();
  });
});
