import { NodeInventorySchema, parseObject } from '@sandbox-scale/scale-core';
import type { InventoryBody } from './build-inventory';
import { bodyBytes, isInventoryTooLarge, oversizedEntries, splitInventory, storedBody } from './split-inventory';

const body = (entries: number): InventoryBody => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: { name: 'node-a', labels: { zone: 'z1' } },
  node: 'node-a',
  address: '10.0.0.1:7777',
  entries: Array.from({ length: entries }, (_, i) => ({
    name: `team/sb-${String(i).padStart(5, '0')}`,
    id: `sb_${i}`,
    phase: 'Running',
    addr: '10.0.0.1:7777',
  })),
  pools: [{ template: 'img', net: 'none', size: 'small', warm: 1, target: 2 }],
});

describe('storedBody', () => {
  it('writes the entries as rows, which readers parse back to the same entries, and measures that form', () => {
    const b = body(3);
    const stored = storedBody(b);
    expect(stored.entries).toBeUndefined();
    expect(stored['rows']).toEqual(['["team/sb-00000","sb_0","Running",null,"10.0.0.1:7777"]', expect.any(String), expect.any(String)]);
    expect(parseObject(NodeInventorySchema, stored)).toMatchObject({ entries: b.entries, pools: b.pools, address: b.address });
    expect(bodyBytes(b)).toBe(Buffer.byteLength(JSON.stringify(stored)));
    expect(bodyBytes(b)).toBeLessThan(Buffer.byteLength(JSON.stringify(b)));
    const { entries: _none, ...empty } = b;
    expect(storedBody(empty)).toEqual(empty);
  });

  it('leaves out a sandbox whose row is longer than the CRD takes, and names it, so the rest are still written', () => {
    const b = body(3);
    const huge = { name: 'team/huge', id: `sb_${'x'.repeat(5000)}`, phase: 'Running' };
    const withHuge = { ...b, entries: [...(b.entries ?? []), huge] };
    expect(storedBody(withHuge)['rows']).toEqual(storedBody(b)['rows']);
    expect(oversizedEntries(withHuge)).toEqual([huge]);
    expect(oversizedEntries(b)).toEqual([]);
  });
});

describe('splitInventory', () => {
  it('keeps a body that fits as the one object of the node', () => {
    const b = body(10);
    expect(splitInventory(b, bodyBytes(b))).toEqual([b]);
  });

  it('splits a body over the limit into parts that each fit, holding every entry once in order', () => {
    const b = body(400);
    const max = Math.ceil(bodyBytes(b) / 3);
    const objects = splitInventory(b, max);
    expect(objects).toHaveLength(4);
    for (const o of objects) expect(bodyBytes(o)).toBeLessThanOrEqual(max);
    const [own, ...parts] = objects;
    expect(own).toMatchObject({ metadata: { name: 'node-a' }, node: 'node-a', address: '10.0.0.1:7777', parts: 4, pools: b.pools });
    expect(parts.map((p) => p.metadata.name)).toEqual(['node-a.part-1', 'node-a.part-2', 'node-a.part-3']);
    for (const [i, p] of parts.entries()) {
      expect(p).toMatchObject({ node: 'node-a', part: i + 1, metadata: { labels: { zone: 'z1' } } });
      expect(p.address).toBeUndefined();
      expect(p.pools).toBeUndefined();
      // what the CRD and the readers accept
      expect(parseObject(NodeInventorySchema, p).part).toBe(i + 1);
    }
    const all = objects.flatMap((o) => o.entries ?? []);
    expect(all.map((e) => e.name).sort()).toEqual(b.entries?.map((e) => e.name));
    for (const o of objects) expect(o.entries?.map((e) => e.name)).toEqual([...(o.entries ?? [])].map((e) => e.name).sort());
  });

  it('moves an entry only to a higher part when the part count doubles', () => {
    const b = body(400);
    const partOf = (objects: InventoryBody[]): Map<string, number> =>
      new Map(objects.flatMap((o, i) => (o.entries ?? []).map((e) => [e.name, i] as const)));
    const two = partOf(splitInventory(b, Math.ceil(bodyBytes(b) / 1.5)));
    const four = partOf(splitInventory(b, Math.ceil(bodyBytes(b) / 3)));
    expect(new Set(two.values()).size).toBe(2);
    expect(new Set(four.values()).size).toBe(4);
    let moved = 0;
    for (const [name, p] of four) {
      const before = two.get(name) ?? -1;
      expect(p === before || p === before + 2).toBe(true);
      if (p !== before) moved++;
    }
    expect(moved).toBeGreaterThan(0);
  });

  it('refuses a node no number of parts can hold', () => {
    const b = body(3);
    let err: unknown;
    try {
      splitInventory(b, 50);
    } catch (e) {
      err = e;
    }
    expect(isInventoryTooLarge(err)).toBe(true);
  });

  it('is refused by the schema when a part is not named after its node', () => {
    const [, part] = splitInventory(body(400), Math.ceil(bodyBytes(body(400)) / 1.5));
    expect(() => parseObject(NodeInventorySchema, { ...part, metadata: { name: 'node-a.part-7' } })).toThrow(/node/);
  });
});
