import { createLogger, PeerSet, PeerUnreachableError, type PeerClient } from '@sandbox-scale/kube-runtime';
import { StatusError, statusForError, type PoolKey } from '@sandbox-scale/scale-core';
import type { Assignment, ClaimTarget } from '../gateway/assignment';
import { ClaimNames } from './claim-names';
import { FastPathCap } from './fast-path-cap';
import { FastPathClaims, type FastClaim } from './fast-path-claims';
import { FastPathPeerCallSchema, type FastPathPeerCall } from './fast-path-peers';

const KEY: PoolKey = { image: 'img', net: 'default', size: 'small' } as unknown as PoolKey;
const log = createLogger({ name: 'test', level: 'silent' });

/** One replica: real names and cap, a node that delivers after `deliverMs` of its turn. */
interface Replica {
  id: string;
  set: PeerSet;
  claims: FastPathClaims;
  delivered: ClaimTarget[];
  calls: FastPathPeerCall[];
  recorded: Map<string, string[]>;
}

let now = 1_000_000;

function replica(id: string, opts: { cap?: number; settleMs?: number } = {}): Replica {
  const recorded = new Map<string, string[]>();
  const delivered: ClaimTarget[] = [];
  const calls: FastPathPeerCall[] = [];
  const set = new PeerSet(id, () => now);
  const names = new ClaimNames({ cached: () => false, holdMs: 60_000, now: () => now });
  const cap = new FastPathCap({ maxPerNamespace: opts.cap ?? 0, recorded: (ns) => recorded.get(ns) ?? [], holdMs: 60_000, now: () => now });
  const r: Replica = { id, set, delivered, calls, recorded, claims: undefined as unknown as FastPathClaims };
  const client: Pick<PeerClient<FastPathPeerCall>, 'call'> = {
    call: async (peer, call) => {
      // every call goes over the wire as JSON, and is parsed as the peer endpoint parses it
      calls.push(FastPathPeerCallSchema.parse(JSON.parse(JSON.stringify(call))));
      const other = network.get(peer);
      if (other === undefined) throw new PeerUnreachableError(`peer ${peer} is down`);
      await Promise.resolve();
      if (call.op === 'claim') return { ...(await other.claims.serve(call.username, call.request)) };
      if (call.op === 'reserve') other.claims.reserve(call);
      else other.claims.unreserve(call);
      return {};
    },
  };
  r.claims = new FastPathClaims({
    resolvePool: () => KEY,
    names,
    cap,
    deliver: async (t): Promise<Assignment> => {
      await new Promise((resolve) => setImmediate(resolve));
      delivered.push({ namespace: t.namespace, name: t.name });
      return { claimId: `sb_${t.name}_${id}`, node: 'n1', address: '10.0.0.9:7000', token: 'tok' };
    },
    peers: { set, client, settleMs: opts.settleMs ?? 30_000, synced: () => true },
    log,
  });
  network.set(id, r);
  return r;
}

const network = new Map<string, Replica>();
const body = (namespace: string, name: string): FastClaim => ({ namespace, name, warmPool: 'agent' });
const codeOf = (p: PromiseSettledResult<unknown>): number => (p.status === 'fulfilled' ? 200 : statusForError(p.reason).code);

/** A namespace that `owner` serves when both replicas are listed. */
function namespaceServedBy(owner: Replica, other: Replica): string {
  for (let i = 0; ; i++)
    if (owner.set.ownerOfKey(`team-${i}`) === owner.id && other.set.ownerOfKey(`team-${i}`) === owner.id) return `team-${i}`;
}

beforeEach(() => network.clear());

describe('FastPathClaims', () => {
  it('hands a claim in a namespace another replica serves to it, which takes the name there', async () => {
    const a = replica('a:1');
    const b = replica('b:1');
    a.set.update(['a:1', 'b:1']);
    b.set.update(['a:1', 'b:1']);
    const ns = namespaceServedBy(b, a);
    const got = await a.claims.claim('alice', body(ns, 'x'));
    expect(got.claimId).toBe('sb_x_b:1');
    expect(a.calls).toEqual([{ op: 'claim', username: 'alice', request: { namespace: ns, name: 'x', warmPool: 'agent' } }]);
    expect(a.delivered).toEqual([]);
    expect(b.delivered).toEqual([{ namespace: ns, name: 'x' }]);
    // the same name, asked of either replica, is taken
    const again = await Promise.allSettled([a.claims.claim('alice', body(ns, 'x')), b.claims.claim('alice', body(ns, 'x'))]);
    expect(again.map(codeOf)).toEqual([409, 409]);
  });

  it('one name fired at both replicas at once is delivered once; a burst over the cap at both passes it by none', async () => {
    const a = replica('a:1', { cap: 5 });
    const b = replica('b:1', { cap: 5 });
    a.set.update(['a:1', 'b:1']);
    b.set.update(['a:1', 'b:1']);
    const ns = namespaceServedBy(a, b);
    const same = await Promise.allSettled([a.claims.claim('u', body(ns, 'one')), b.claims.claim('u', body(ns, 'one'))]);
    expect(same.map(codeOf).sort()).toEqual([200, 409]);
    const burst = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).claims.claim('u', body(ns, `burst-${i}`))),
    );
    const codes = burst.map(codeOf);
    // "one" holds a place too
    expect(codes.filter((c) => c === 200)).toHaveLength(4);
    expect(codes.filter((c) => c === 429)).toHaveLength(8);
    expect(a.delivered.length + b.delivered.length).toBe(5);
  });

  it('while the replicas change, a replica that has not seen the change and one that has cannot both hand out a name or pass the cap', async () => {
    // b has just joined; a still believes it is alone and serves every namespace
    const a = replica('a:1', { cap: 3 });
    const b = replica('b:1', { cap: 3 });
    a.set.update(['a:1']);
    b.set.update(['b:1']);
    b.set.update(['a:1', 'b:1']);
    const ns = namespaceServedBy(b, b);
    expect(b.set.changedWithin(30_000)).toBe(true);
    const same = await Promise.allSettled([a.claims.claim('u', body(ns, 'one')), b.claims.claim('u', body(ns, 'one'))]);
    expect(same.map(codeOf).sort()).toEqual([200, 409]);
    const burst = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).claims.claim('u', body(ns, `burst-${i}`))),
    );
    expect(burst.map(codeOf).filter((c) => c === 200)).toHaveLength(2);
    expect(a.delivered.length + b.delivered.length).toBe(3);
    // b reserved on a before each of its deliveries, and let go what it did not deliver
    expect(b.calls.some((c) => c.op === 'reserve')).toBe(true);
    // once the window has passed, b serves its namespace alone
    now += 30_001;
    b.calls.length = 0;
    await b.claims.claim('u', body('other', 'z')).catch(() => undefined);
    expect(b.calls.filter((c) => c.op === 'reserve')).toEqual([]);
  });

  it('a refused reservation undoes the others and frees the name and place here', async () => {
    const a = replica('a:1', { cap: 1 });
    const b = replica('b:1', { cap: 1 });
    const c = replica('c:1', { cap: 1 });
    for (const r of [a, b, c]) r.set.update(['a:1']);
    for (const r of [a, b, c]) r.set.update(['a:1', 'b:1', 'c:1']);
    const ns = namespaceServedBy(a, a);
    c.claims.reserve({ namespace: ns, name: 'held' });
    const refused = await a.claims.serve('u', body(ns, 'x')).catch((err: unknown) => statusForError(err));
    expect(refused).toMatchObject({ code: 429 });
    expect(a.calls.filter((x) => x.op === 'unreserve')).toHaveLength(a.calls.filter((x) => x.op === 'reserve').length - 1);
    // nothing of x is left anywhere: once c lets go of its own reservation, x is served
    c.claims.unreserve({ namespace: ns, name: 'held' });
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    await expect(a.claims.serve('u', body(ns, 'x'))).resolves.toMatchObject({ claimId: 'sb_x_a:1' });
  });

  it('answers 503 when the replica serving the namespace cannot be reached, and serves alone past a peer that left', async () => {
    const a = replica('a:1');
    a.set.update(['a:1', 'gone:1']);
    let ns = '';
    for (let i = 0; ns === ''; i++) if (a.set.ownerOfKey(`team-${i}`) === 'gone:1') ns = `team-${i}`;
    const status = await a.claims.claim('u', body(ns, 'x')).catch((err: unknown) => statusForError(err));
    expect(status).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
    expect(a.delivered).toEqual([]);
    // a namespace a serves: the unreachable peer's reservation is passed over
    a.set.update(['a:1', 'gone:1', 'gone:2']);
    const own = namespaceServedBy(a, a);
    await expect(a.claims.claim('u', body(own, 'y'))).resolves.toMatchObject({ claimId: 'sb_y_a:1' });
  });

  it('answers 503 until the replicas are known', async () => {
    const names = new ClaimNames({ cached: () => false, holdMs: 1000 });
    const claims = new FastPathClaims({
      resolvePool: () => KEY,
      names,
      deliver: () => Promise.reject(new StatusError('InternalError', 'not reached')),
      peers: { set: new PeerSet('a:1'), client: { call: () => Promise.resolve({}) }, settleMs: 1, synced: () => false },
      log,
    });
    await expect(claims.claim('u', body('ns', 'x')).catch((err: unknown) => statusForError(err))).resolves.toMatchObject({ code: 503 });
  });
});
