import { ClaimIndex, type NodeInventory } from '@sandbox-scale/scale-core';
import { parseListQuery } from '../http/list-query';
import { ContinueExpiredError } from '../resource/list-query';
import { ListSnapshots } from './list-snapshots';
import { NodeRouter } from './node-router';
import { Revisions } from './revisions';
import { SandboxStorage, type SandboxList } from './sandbox-storage';
import { SandboxCache } from './sandbox-cache';
import { WatchHub } from './watch-hub';

const inv = (node: string, rv: number, names: readonly string[]): NodeInventory => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: { name: node, resourceVersion: String(rv), creationTimestamp: '2026-01-01T00:00:00Z' },
  node,
  entries: names.map((name, i) => ({ name, id: `sb_${node}_${i}`, phase: i % 3 === 0 ? 'Pending' : 'Running' })),
});

function setup(maxSnapshots = 16) {
  const revisions = new Revisions();
  const cache = new SandboxCache({ graceMs: 50, hub: new WatchHub(10), revisions });
  const storage = new SandboxStorage(
    cache,
    new ClaimIndex({ maxBytes: 1 << 20 }),
    new NodeRouter(cache, undefined),
    revisions,
    new ListSnapshots(() => cache.sortedRows(), { max: maxSnapshots }),
  );
  return { cache, storage };
}

const q = (ns: string, params: Record<string, string> = {}) => parseListQuery(ns, new URLSearchParams(params));
const keyOf = (s: SandboxList['items'][number]): string => `${s.metadata.namespace}/${s.metadata.name}`;

/** Every page of one list, following continue tokens; `between` runs after each page. */
function pageAll(
  storage: SandboxStorage,
  ns: string,
  params: Record<string, string>,
  between: (page: number) => void = () => undefined,
): { keys: string[]; pages: SandboxList[] } {
  const pages: SandboxList[] = [];
  let cont = '';
  for (;;) {
    const page = storage.list(q(ns, { ...params, ...(cont ? { continue: cont } : {}) }));
    pages.push(page);
    between(pages.length);
    cont = page.metadata.continue ?? '';
    if (cont === '') break;
    if (pages.length > 10_000) throw new Error('paging never ended');
  }
  return { keys: pages.flatMap((p) => p.items.map(keyOf)), pages };
}

/** A deterministic spread of names over namespaces and nodes, in no particular order. */
function fleet(count: number, nodes: number): string[][] {
  const out: string[][] = Array.from({ length: nodes }, () => []);
  for (let i = 0; i < count; i++) out[(i * 7) % nodes]?.push(`ns-${(i * 13) % 5}${i % 2 === 0 ? '' : '-x'}/sb-${(i * 7919) % count}`);
  return out;
}

describe('SandboxStorage.list paging', () => {
  it('returns every item exactly once, in order, for any limit, namespace and selector', () => {
    const { cache, storage } = setup();
    fleet(257, 4).forEach((names, n) => cache.upsertInventory(inv(`n${n}`, 10 + n, names)));
    const all = storage.list(q('')).items.map(keyOf);
    expect(all).toHaveLength(257);
    expect(
      [...all].sort((a, b) => {
        const [an = '', am = ''] = a.split('/');
        const [bn = '', bm = ''] = b.split('/');
        return an === bn ? (am < bm ? -1 : am > bm ? 1 : 0) : an < bn ? -1 : 1;
      }),
    ).toEqual(all);
    for (const limit of ['1', '7', '50', '256', '257', '1000']) {
      expect(pageAll(storage, '', { limit }).keys).toEqual(all);
      const inNs = all.filter((k) => k.startsWith('ns-1/'));
      expect(pageAll(storage, 'ns-1', { limit }).keys).toEqual(inNs);
      // the selector filters before the limit counts: pages are full until the last
      const pending = storage.list(q('', { labelSelector: 'sandbox.cocoonstack.io/phase=Pending' })).items.map(keyOf);
      const paged = pageAll(storage, '', { limit, labelSelector: 'sandbox.cocoonstack.io/phase=Pending' });
      expect(paged.keys).toEqual(pending);
      for (const p of paged.pages.slice(0, -1)) expect(p.items).toHaveLength(Number(limit));
    }
  });

  it('counts the rest only for an unfiltered list', () => {
    const { cache, storage } = setup();
    cache.upsertInventory(inv('n1', 5, ['a/x1', 'a/x2', 'a/x3', 'b/y']));
    expect(storage.list(q('', { limit: '1' })).metadata.remainingItemCount).toBe(3);
    expect(storage.list(q('a', { limit: '2' })).metadata.remainingItemCount).toBe(1);
    expect(storage.list(q('', { limit: '1', fieldSelector: 'status.nodeName=n1' })).metadata.remainingItemCount).toBeUndefined();
  });

  it('lists one node by status.nodeName, page by page, building no object of another node', () => {
    const { cache, storage } = setup();
    cache.upsertInventory(inv('n1', 5, ['a/x1', 'a/x2', 'b/y1']));
    cache.upsertInventory(inv('n2', 6, ['a/z1', 'a/z2', 'a/z3', 'b/z4']));
    const built = jest.spyOn(cache, 'objectOf');
    expect(pageAll(storage, '', { limit: '1', fieldSelector: 'status.nodeName=n1' }).keys).toEqual(['a/x1', 'a/x2', 'b/y1']);
    expect(built.mock.calls.every(([row]) => row.node === 'n1')).toBe(true);
    expect(storage.list(q('a', { fieldSelector: 'status.nodeName==n2' })).items.map(keyOf)).toEqual(['a/z1', 'a/z2', 'a/z3']);
    expect(storage.list(q('', { fieldSelector: 'status.nodeName!=n2' })).items.map(keyOf)).toEqual(['a/x1', 'a/x2', 'b/y1']);
    // the node's own labels decide before an object is built, and agree with the built objects
    built.mockClear();
    expect(storage.list(q('', { labelSelector: 'sandbox.cocoonstack.io/node=n2' })).items.map(keyOf)).toEqual([
      'a/z1',
      'a/z2',
      'a/z3',
      'b/z4',
    ]);
    expect(built.mock.calls.every(([row]) => row.node === 'n2')).toBe(true);
    expect(
      storage.list(q('', { labelSelector: 'sandbox.cocoonstack.io/node in (n1),sandbox.cocoonstack.io/phase=Pending' })).items.map(keyOf),
    ).toEqual(
      storage
        .list(q('', { fieldSelector: 'status.nodeName=n1' }))
        .items.filter((s) => s.metadata.labels['sandbox.cocoonstack.io/phase'] === 'Pending')
        .map(keyOf),
    );
    built.mockRestore();
  });

  it('finds metadata.name=X in a namespace without scanning past it', () => {
    const { cache, storage } = setup();
    cache.upsertInventory(inv('n1', 5, ['a/x', 'a/xy', 'a-b/x', 'b/x']));
    expect(storage.list(q('a', { fieldSelector: 'metadata.name=x' })).items.map(keyOf)).toEqual(['a/x']);
    expect(storage.list(q('a', { fieldSelector: 'metadata.name=nope' })).items).toEqual([]);
    expect(storage.list(q('', { fieldSelector: 'metadata.name=x' })).items.map(keyOf)).toEqual(['a/x', 'a-b/x', 'b/x']);
  });

  it("serves every page from the first page's snapshot while inventories change underneath", () => {
    const { cache, storage } = setup();
    cache.upsertInventory(inv('n1', 5, ['a/x1', 'a/x2', 'a/x3', 'a/x4', 'a/x5']));
    const before = storage.list(q('')).items.map(keyOf);
    const paged = pageAll(storage, '', { limit: '2' }, (page) => {
      // x1 goes, x0 (before every remaining key) and x9 (after them) come
      if (page === 1) cache.upsertInventory(inv('n1', 6, ['a/x0', 'a/x2', 'a/x3', 'a/x4', 'a/x5', 'a/x9']));
    });
    expect(paged.keys).toEqual(before);
    expect(new Set(paged.pages.map((p) => p.metadata.resourceVersion)).size).toBe(1);
    expect(storage.list(q('')).items.map(keyOf)).toEqual(['a/x0', 'a/x2', 'a/x3', 'a/x4', 'a/x5', 'a/x9']);
  });

  it('answers 410 Expired for a token whose snapshot is gone, with a token that resumes after the same key', () => {
    const { cache, storage } = setup(1);
    cache.upsertInventory(inv('n1', 5, ['a/x1', 'a/x2', 'a/x3']));
    const first = storage.list(q('', { limit: '1' }));
    cache.upsertInventory(inv('n1', 6, ['a/x1', 'a/x2', 'a/x3', 'a/x4']));
    storage.list(q('', { limit: '1' })); // a newer list takes the only slot
    let expired: unknown;
    try {
      storage.list(q('', { limit: '1', continue: first.metadata.continue ?? '' }));
    } catch (err) {
      expired = err;
    }
    expect(expired).toBeInstanceOf(ContinueExpiredError);
    expect(expired).toMatchObject({ code: 410, reason: 'Expired' });
    const resumed = pageAll(storage, '', { limit: '2', continue: (expired as ContinueExpiredError).inconsistentContinue });
    expect(resumed.keys).toEqual(['a/x2', 'a/x3', 'a/x4']);
  });

  it('answers 410 for a token from another process and 400 for garbage', () => {
    const a = setup();
    const b = setup();
    for (const s of [a, b]) s.cache.upsertInventory(inv('n1', 5, ['a/x1', 'a/x2']));
    const token = a.storage.list(q('', { limit: '1' })).metadata.continue ?? '';
    expect(() => b.storage.list(q('', { limit: '1', continue: token }))).toThrow(expect.objectContaining({ code: 410 }));
    expect(() => q('', { continue: 'not-a-token' })).toThrow(expect.objectContaining({ code: 400 }));
  });
});
