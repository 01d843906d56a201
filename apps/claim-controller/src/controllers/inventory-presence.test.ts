import type { NodeInventory, SandboxClaim } from '@sandbox-scale/scale-core';
import { BoundClaimsByNode, claimsMissingFrom, inventoryIds } from './inventory-presence';

function inv(node: string, ids: string[], o: { part?: number; parts?: number } = {}): NodeInventory {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name: o.part ? `${node}.part-${o.part}` : node },
    node,
    ...(o.part !== undefined ? { part: o.part } : {}),
    ...(o.parts !== undefined ? { parts: o.parts } : {}),
    entries: ids.map((id) => ({ name: `ns/${id}`, id, phase: 'Running' })),
  } as NodeInventory;
}

function claim(name: string, o: { node?: string; id?: string; bound?: boolean; deleting?: boolean } = {}): SandboxClaim {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name, namespace: 'ns', ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec: { warmPoolRef: { name: 'base' } },
    status: {
      sandbox: { name, claimID: o.id ?? `sb_${name}`, nodeName: o.node ?? 'n1' },
      conditions: [
        {
          type: 'Bound',
          status: o.bound === false ? 'False' : 'True',
          reason: 'R',
          message: '',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    },
  } as SandboxClaim;
}

describe('inventoryIds', () => {
  it('joins the ids of every part of a node', () => {
    expect([...(inventoryIds([inv('n1', ['sb_a'], { parts: 2 }), inv('n1', ['sb_b'], { part: 1 })]) ?? [])].sort()).toEqual([
      'sb_a',
      'sb_b',
    ]);
  });

  it('says nothing while a part is missing, the own object is missing, or an entry has no id', () => {
    expect(inventoryIds([inv('n1', ['sb_a'], { parts: 2 })])).toBeUndefined();
    expect(inventoryIds([inv('n1', ['sb_b'], { part: 1 })])).toBeUndefined();
    const noId = inv('n1', []);
    noId.entries = [{ name: 'ns/x', phase: 'Running' }];
    expect(inventoryIds([noId])).toBeUndefined();
  });

  it('ignores a part left over from a larger split', () => {
    expect([...(inventoryIds([inv('n1', ['sb_a']), inv('n1', ['sb_b'], { part: 1 })]) ?? [])]).toEqual(['sb_a']);
  });
});

describe('claimsMissingFrom', () => {
  it('names the claims whose id the inventory does not list', () => {
    const bound = new Map([
      ['ns/a', 'sb_a'],
      ['ns/b', 'sb_b'],
    ]);
    expect(claimsMissingFrom(bound, new Set(['sb_a', 'sb_x']))).toEqual(['ns/b']);
    expect(claimsMissingFrom(bound, new Set(['sb_a', 'sb_b']))).toEqual([]);
  });
});

describe('BoundClaimsByNode', () => {
  it('compares an inventory with its own node’s Bound claims only, and marks those missing from every part', () => {
    const idx = new BoundClaimsByNode();
    idx.observe(claim('a'));
    idx.observe(claim('b'));
    idx.observe(claim('c', { node: 'n2' }));
    idx.observe(claim('d', { bound: false }));
    idx.observe(claim('e', { deleting: true }));
    expect(idx.size).toBe(3);
    const missing = idx.missingFrom('n1', [inv('n1', ['sb_a'], { parts: 2 }), inv('n1', [], { part: 1 })]);
    expect(missing).toEqual([{ namespace: 'ns', name: 'b' }]);
    expect(idx.takeSuspect('ns/b', 'sb_b')).toBe(true);
    // the mark is consumed, and was never set for a listed claim
    expect(idx.takeSuspect('ns/b', 'sb_b')).toBe(false);
    expect(idx.takeSuspect('ns/a', 'sb_a')).toBe(false);
    // listed in part 1: not missing
    expect(idx.missingFrom('n1', [inv('n1', ['sb_a'], { parts: 2 }), inv('n1', ['sb_b'], { part: 1 })])).toEqual([]);
  });

  it('drops a claim that finished, moved or was deleted', () => {
    const idx = new BoundClaimsByNode();
    idx.observe(claim('a'));
    idx.observe(claim('b'));
    idx.observe(claim('c'));
    idx.observe(claim('a', { bound: false }));
    idx.observe(claim('b', { node: 'n2' }));
    idx.forget(claim('c'));
    expect(idx.missingFrom('n1', [inv('n1', [])])).toEqual([]);
    expect(idx.missingFrom('n2', [inv('n2', [])])).toEqual([{ namespace: 'ns', name: 'b' }]);
    expect(idx.size).toBe(1);
  });
});
