import { randomBytes } from 'node:crypto';
import { SandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import { formatOwnerRef, OWNER_KINDS, type InventoryLike, OwnerRefKey } from '@sandbox-scale/scale-core';
import type { NodeDelivery } from '../gateway/claim-gateway';
import { EarlierDeliveries } from './earlier-deliveries';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

const KEY = { template: 'img', net: 'none', size: 'small' };
const since = new Date('2026-01-01T00:00:00Z');
const refOf = (name: string, uid = `uid-${name}`) => formatOwnerRef({ kind: OWNER_KINDS.claim, uid, namespace: 'ns', name }, CLAIM_REF_KEY);

/** Nodes n0..n(count-1), each holding the deliveries given for it; counts every list and token read. */
function fleet(count: number, held: Record<string, string[]>) {
  const nodes: InventoryLike[] = Array.from({ length: count }, (_, i) => ({
    metadata: { name: `n${i}` },
    node: `n${i}`,
    address: `10.0.0.${i}:1`,
    pools: [],
  }));
  const lists: string[] = [];
  const tokenReads: string[] = [];
  const down = new Set<string>();
  const gone = new Set<string>();
  let clock = 0;
  const earlier = new EarlierDeliveries({
    nodes: () => nodes,
    list: async (inv) => {
      lists.push(inv.node);
      if (down.has(inv.node)) throw new Error(`${inv.node} does not answer`);
      return (held[inv.node] ?? []).map((ref, i): NodeDelivery => ({
        claimRef: ref,
        key: KEY,
        assignment: { claimId: `sb_${inv.node}_${i}`, node: inv.node, address: inv.address ?? '', token: '' },
      }));
    },
    withToken: async (d) => {
      tokenReads.push(d.assignment.claimId);
      if (gone.has(d.assignment.claimId)) throw new SandboxdHttpError({ operation: 'sandbox', statusCode: 404, message: 'not found' });
      return { ...d, assignment: { ...d.assignment, token: `tok-${d.assignment.claimId}` } };
    },
    maxAgeMs: 1000,
    now: () => clock,
  });
  return { earlier, lists, tokenReads, down, gone, advance: (ms: number) => (clock += ms) };
}

describe('EarlierDeliveries', () => {
  it('answers every claim of a failover from one listing per node, not one per claim and node', async () => {
    const claims = Array.from({ length: 20 }, (_, i) => `c${i}`);
    // half of the claims were delivered (spread over the nodes), half were not
    const held: Record<string, string[]> = {};
    for (const [i, name] of claims.entries()) if (i % 2 === 0) (held[`n${i % 4}`] ??= []).push(refOf(name));
    const f = fleet(4, held);
    const found = await Promise.all(claims.map((name) => f.earlier.find({ claimRef: refOf(name), leadingSince: since })));
    expect(f.lists.sort()).toEqual(['n0', 'n1', 'n2', 'n3']);
    expect(found.filter((a) => a !== undefined)).toHaveLength(10);
    for (const [i, a] of found.entries()) {
      if (i % 2 === 1) expect(a).toBeUndefined();
      else expect(a).toMatchObject({ node: `n${i % 4}`, token: expect.stringMatching(/^tok-sb_/) });
    }
    // the token is read only for the deliveries found
    expect(f.tokenReads).toHaveLength(10);
  });

  it('lists the hinted node first and adopts from it without listing the others', async () => {
    const f = fleet(4, { n2: [refOf('a')] });
    const a = await f.earlier.find({ claimRef: refOf('a'), hint: 'n2', leadingSince: since });
    expect(a).toMatchObject({ node: 'n2', claimId: 'sb_n2_0' });
    expect(f.lists).toEqual(['n2']);
  });

  it('adopts from the hinted node while another node does not answer', async () => {
    const f = fleet(3, { n1: [refOf('a')] });
    f.down.add('n0');
    await expect(f.earlier.find({ claimRef: refOf('a'), hint: 'n1', leadingSince: since })).resolves.toMatchObject({ node: 'n1' });
    // without the hint, the node that does not answer might hold it: the lookup fails, nothing is claimed
    await expect(f.earlier.find({ claimRef: refOf('a'), leadingSince: since })).rejects.toThrow('n0 does not answer');
  });

  it('looks on every node when the hinted node does not hold the delivery (a redirect delivered it elsewhere), or the hint names no node', async () => {
    const f = fleet(3, { n0: [refOf('a')] });
    await expect(f.earlier.find({ claimRef: refOf('a'), hint: 'n2', leadingSince: since })).resolves.toMatchObject({ node: 'n0' });
    await expect(f.earlier.find({ claimRef: refOf('b'), hint: 'not-a-node', leadingSince: since })).resolves.toBeUndefined();
    expect(f.lists.sort()).toEqual(['n0', 'n1', 'n2']);
  });

  it('matches the full claim_ref: a delivery of another object of the same name (another uid) is never adopted', async () => {
    const f = fleet(2, { n0: [refOf('a', 'old-uid')] });
    await expect(f.earlier.find({ claimRef: refOf('a', 'new-uid'), hint: 'n0', leadingSince: since })).resolves.toBeUndefined();
    expect(f.tokenReads).toHaveLength(0);
  });

  it('ignores deliveries of other owners on the node', async () => {
    const foreign = formatOwnerRef({ kind: OWNER_KINDS.sandbox, uid: 'uid-a', namespace: 'ns', name: 'a' }, CLAIM_REF_KEY);
    const f = fleet(1, { n0: [foreign] });
    await expect(f.earlier.find({ claimRef: foreign, leadingSince: since })).resolves.toBeUndefined();
  });

  it('lists again once the window has passed, and afresh for a new leadership', async () => {
    const f = fleet(2, {});
    await f.earlier.find({ claimRef: refOf('a'), leadingSince: since });
    f.advance(500);
    await f.earlier.find({ claimRef: refOf('b'), leadingSince: since });
    expect(f.lists).toHaveLength(2);
    f.advance(600);
    await f.earlier.find({ claimRef: refOf('c'), leadingSince: since });
    expect(f.lists).toHaveLength(4);
    await f.earlier.find({ claimRef: refOf('d'), leadingSince: new Date(since.getTime() + 1) });
    expect(f.lists).toHaveLength(6);
    // expired listings are not kept: a lookup after the window holds only what it listed
    f.advance(2000);
    await f.earlier.find({ claimRef: refOf('e'), hint: 'n0', leadingSince: new Date(since.getTime() + 1) });
    expect(f.lists).toHaveLength(8);
    expect(f.earlier.listings).toBe(2);
  });

  it('does not keep a listing past its window even when no claim asks again', async () => {
    jest.useFakeTimers();
    try {
      const f = fleet(3, {});
      await f.earlier.find({ claimRef: refOf('a'), leadingSince: since });
      expect(f.earlier.listings).toBe(3);
      jest.advanceTimersByTime(999);
      expect(f.earlier.listings).toBe(3);
      jest.advanceTimersByTime(1);
      expect(f.earlier.listings).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it('does not keep a failed listing: the next lookup asks that node again', async () => {
    const f = fleet(2, { n1: [refOf('a')] });
    f.down.add('n1');
    await expect(f.earlier.find({ claimRef: refOf('a'), leadingSince: since })).rejects.toThrow();
    f.down.delete('n1');
    await expect(f.earlier.find({ claimRef: refOf('a'), leadingSince: since })).resolves.toMatchObject({ node: 'n1' });
    expect(f.lists.filter((n) => n === 'n1')).toHaveLength(2);
    expect(f.lists.filter((n) => n === 'n0')).toHaveLength(1);
  });

  it('a listed delivery the node no longer has holds nothing: it is dropped and the claim holds no sandbox', async () => {
    const f = fleet(1, { n0: [refOf('a')] });
    f.gone.add('sb_n0_0');
    await expect(f.earlier.find({ claimRef: refOf('a'), leadingSince: since })).resolves.toBeUndefined();
    await expect(f.earlier.find({ claimRef: refOf('a'), leadingSince: since })).resolves.toBeUndefined();
    expect(f.tokenReads).toEqual(['sb_n0_0']);
  });

  it('a token read that fails otherwise fails the lookup (the claim is retried, never claimed anew)', async () => {
    const withToken = jest.fn().mockRejectedValue(new SandboxdHttpError({ operation: 'sandbox', statusCode: 503, message: 'busy' }));
    const earlier = new EarlierDeliveries({
      nodes: () => [{ metadata: { name: 'n0' }, node: 'n0', address: 'a:1', pools: [] }],
      list: async () => [{ claimRef: refOf('a'), key: KEY, assignment: { claimId: 'sb_1', node: 'n0', address: 'a:1', token: '' } }],
      withToken,
    });
    await expect(earlier.find({ claimRef: refOf('a'), leadingSince: since })).rejects.toThrow('busy');
    expect(withToken).toHaveBeenCalledTimes(1);
  });
});
