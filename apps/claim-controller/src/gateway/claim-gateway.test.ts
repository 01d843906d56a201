import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { formatOwnerRef, isNoWarmCapacity, OwnerRefKey, poolKeyFor } from '@sandbox-scale/scale-core';
import { RecordQueue } from '../record/record-queue';
import { ClaimGateway, deadlineText, type ClaimGatewayOptions } from './claim-gateway';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

const TEMPLATE = 'base:24.04';
const owner = { kind: 'SandboxClaim' as const, uid: '7c9e6679-7425-40de-944b-e07fc1f90ae7' };

/** A gateway over `inventory` with the root fleet token and a silent log; `more` sets the rest. */
function gatewayOver(
  clients: SandboxdClientSet,
  inventory: ReturnType<ClaimGatewayOptions['inventories']>,
  more: Partial<ClaimGatewayOptions> = {},
): ClaimGateway {
  return new ClaimGateway({
    refKey: CLAIM_REF_KEY,
    clients,
    fleetToken: 'root',
    inventories: () => inventory,
    log: createLogger({ name: 'test', level: 'silent' }),
    ...more,
  });
}

describe('ClaimGateway against a node that stops answering', () => {
  let server: Server;
  let addr: string;
  const clients = new SandboxdClientSet({ token: 'root' });

  beforeAll(async () => {
    // accepts every request and never answers, like a partitioned node
    server = createServer(() => undefined);
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
    addr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((res) => server.close(() => res()));
    await clients.close();
  });

  it('fails the claim after the call timeout instead of waiting forever', async () => {
    const inventory = [{ metadata: { name: 'hung' }, node: 'hung', address: addr, pools: [{ template: TEMPLATE, warm: 5 }] }];
    const gateway = gatewayOver(clients, inventory, { callTimeoutMs: 200 });
    const t0 = Date.now();
    await expect(
      gateway.deliver({ namespace: 'ns', name: 'c1', owner, key: poolKeyFor([{ image: TEMPLATE }], undefined) }),
    ).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('routes the next claim around the node that just timed out', async () => {
    const good = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'sb_1', token: 't', deadline: '2099-01-01T00:00:00Z', owner_addr: goodAddr }));
    });
    await new Promise<void>((res) => good.listen(0, '127.0.0.1', () => res()));
    const goodAddr = `127.0.0.1:${(good.address() as AddressInfo).port}`;
    try {
      // the hung node advertises far more warm VMs, so it would win every power-of-two choice
      const inventory = [
        { metadata: { name: 'hung' }, node: 'hung', address: addr, pools: [{ template: TEMPLATE, warm: 1000 }] },
        { metadata: { name: 'good' }, node: 'good', address: goodAddr, pools: [{ template: TEMPLATE, warm: 1 }] },
      ];
      const gateway = gatewayOver(clients, inventory, { callTimeoutMs: 200, rng: () => 0 });
      const key = poolKeyFor([{ image: TEMPLATE }], undefined);
      const first: string[] = [];
      await expect(gateway.deliver({ namespace: 'ns', name: 'c2', owner, key, onFirstNode: (n) => first.push(n) })).rejects.toThrow();
      await expect(gateway.deliver({ namespace: 'ns', name: 'c2', owner, key, onFirstNode: (n) => first.push(n) })).resolves.toMatchObject({
        node: 'good',
        claimId: 'sb_1',
      });
      // each attempt names the node it asks first, once
      expect(first).toEqual(['hung', 'good']);
    } finally {
      good.closeAllConnections();
      await new Promise<void>((res) => good.close(() => res()));
    }
  });

  it('tries a node again once its cooldown has run out', async () => {
    const inventory = [{ metadata: { name: 'hung' }, node: 'hung', address: addr, pools: [{ template: TEMPLATE, warm: 5 }] }];
    const gateway = gatewayOver(clients, inventory, { callTimeoutMs: 100, failedNodeCooldownMs: 0 });
    const key = poolKeyFor([{ image: TEMPLATE }], undefined);
    const first: string[] = [];
    for (const name of ['c3', 'c4']) {
      await expect(gateway.deliver({ namespace: 'ns', name, owner, key, onFirstNode: (n) => first.push(n) })).rejects.toThrow();
    }
    expect(first).toEqual(['hung', 'hung']);
  });

  it('bounds a call made under a caller signal by the call timeout as well', async () => {
    const inventory = [{ metadata: { name: 'hung' }, node: 'hung', address: addr, pools: [{ template: TEMPLATE, warm: 5 }] }];
    const gateway = gatewayOver(clients, inventory, { callTimeoutMs: 200 });
    const caller = new AbortController();
    const err: unknown = await gateway
      .deliver({ namespace: 'ns', name: 'c5', owner, key: poolKeyFor([{ image: TEMPLATE }], undefined), signal: caller.signal })
      .catch((e: unknown) => e);
    expect((err as Error).name).toBe('TimeoutError');
    expect(caller.signal.aborted).toBe(false);
  });

  it('bounds the listing of deliveries on that node too', async () => {
    const inventory = [{ metadata: { name: 'hung' }, node: 'hung', address: addr, pools: [] }];
    const gateway = gatewayOver(clients, inventory, { callTimeoutMs: 200 });
    await expect(gateway.listDeliveries(inventory[0] ?? { node: 'hung' })).rejects.toThrow();
  });
});

describe('ClaimGateway cold claims', () => {
  const clients = new SandboxdClientSet({ token: 'root' });
  const servers: Server[] = [];
  const seen: { node: string; body: Record<string, unknown> }[] = [];
  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise<void>((res) => s.close(() => res()));
    }
    await clients.close();
  });

  /** A node that answers every claim with `status` (429 at max_claims, or 200 with a sandbox). */
  async function node(name: string, status: 200 | 429): Promise<string> {
    const s = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        seen.push({ node: name, body: JSON.parse(raw) as Record<string, unknown> });
        res.writeHead(status, { 'content-type': status === 200 ? 'application/json' : 'text/plain' });
        res.end(
          status === 200
            ? JSON.stringify({ id: `sb_${name}`, token: 't', deadline: '2099-01-01T00:00:00Z', owner_addr: '' })
            : 'node claim quota reached: 4 live claims, cap 4',
        );
      });
    });
    await new Promise<void>((res) => s.listen(0, '127.0.0.1', () => res()));
    servers.push(s);
    return `127.0.0.1:${(s.address() as AddressInfo).port}`;
  }

  it('tries routable nodes least loaded first, past a 429, with the claim_ref, and never a Draining node', async () => {
    seen.length = 0;
    const inventory = [
      { metadata: { name: 'full' }, node: 'full', address: await node('full', 429), pools: [] },
      { metadata: { name: 'busy' }, node: 'busy', address: await node('busy', 200), pools: [], entries: [{}, {}] },
      {
        metadata: { name: 'draining' },
        node: 'draining',
        address: await node('draining', 200),
        pools: [],
        conditions: [{ type: 'Draining', status: 'True' }],
      },
    ];
    const gateway = gatewayOver(clients, inventory);
    const a = await gateway.coldDeliver({ namespace: 'ns', name: 'cold-1', owner, key: poolKeyFor([{ image: TEMPLATE }], undefined) });
    expect(a).toMatchObject({ node: 'busy', claimId: 'sb_busy' });
    expect(seen.map((s) => s.node)).toEqual(['full', 'busy']);
    // the claim_ref names the owner exactly: kind, uid, namespace and name
    expect(
      seen.every(
        (s) =>
          s.body.claim_ref === formatOwnerRef({ ...owner, namespace: 'ns', name: 'cold-1' }, CLAIM_REF_KEY) && s.body.template === TEMPLATE,
      ),
    ).toBe(true);
  });

  it('is NoWarmCapacity when every routable node answers 429', async () => {
    const inventory = [{ metadata: { name: 'full2' }, node: 'full2', address: await node('full2', 429), pools: [] }];
    const gateway = gatewayOver(clients, inventory);
    const err: unknown = await gateway
      .coldDeliver({ namespace: 'ns', name: 'cold-2', owner, key: poolKeyFor([{ image: TEMPLATE }], undefined) })
      .catch((e: unknown) => e);
    expect(isNoWarmCapacity(err)).toBe(true);
  });
});

describe('ClaimGateway fast path', () => {
  it('claims under a fresh FastPathClaim owner and queues the Bound record with its delivery uid', async () => {
    const bodies: Record<string, unknown>[] = [];
    const server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(raw) as Record<string, unknown>);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: `sb_${bodies.length}`, token: 't', deadline: '2099-01-01T00:00:00.750Z', owner_addr: '' }));
      });
    });
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
    const addr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const clients = new SandboxdClientSet({ token: 'root' });
    const recorded: { target: Record<string, unknown>; claimId: string }[] = [];
    const records = new RecordQueue({
      recorder: {
        recordBound: async (target: object, a: { claimId: string }): Promise<void> => {
          recorded.push({ target: { ...target }, claimId: a.claimId });
        },
      },
      log: createLogger({ name: 'test', level: 'silent' }),
    });
    try {
      const inventory = [{ metadata: { name: 'n1' }, node: 'n1', address: addr, pools: [{ template: TEMPLATE, warm: 5 }] }];
      const gateway = gatewayOver(clients, inventory, { records });
      const key = poolKeyFor([{ image: TEMPLATE }], undefined);
      const a = await gateway.deliverFastPath({ namespace: 'ns', name: 'f1', warmPool: 'wp', key, ttlSeconds: 60 });
      const b = await gateway.deliverFastPath({ namespace: 'ns', name: 'f2', warmPool: 'wp', key });
      expect(a).toEqual({ claimId: 'sb_1', node: 'n1', address: '', token: 't', deadline: '2099-01-01T00:00:00Z' });
      expect(b.claimId).toBe('sb_2');
      await records.drain();
      expect(recorded.map((r) => r.claimId)).toEqual(['sb_1', 'sb_2']);
      const [r1, r2] = recorded.map((r) => r.target);
      expect(r1).toMatchObject({ namespace: 'ns', name: 'f1', warmPool: 'wp' });
      expect(r1?.deliveryUid).not.toBe(r2?.deliveryUid);
      // the node records the owner the Bound record will name; a TTL only when one was asked for
      expect(bodies[0]).toEqual({
        template: TEMPLATE,
        net: 'none',
        size: 'small',
        ttl_seconds: 60,
        claim_ref: formatOwnerRef({ kind: 'FastPathClaim', uid: String(r1?.deliveryUid), namespace: 'ns', name: 'f1' }, CLAIM_REF_KEY),
      });
      expect(bodies[1]).toEqual({
        template: TEMPLATE,
        net: 'none',
        size: 'small',
        claim_ref: formatOwnerRef({ kind: 'FastPathClaim', uid: String(r2?.deliveryUid), namespace: 'ns', name: 'f2' }, CLAIM_REF_KEY),
      });
    } finally {
      await records.close();
      await clients.close();
      server.closeAllConnections();
      await new Promise<void>((res) => server.close(() => res()));
    }
  });
});

describe('deadlineText', () => {
  it('is the RFC3339 second of the deadline, sub-seconds truncated, for deadlines in one second and across seconds', () => {
    expect(deadlineText(new Date('2026-08-17T12:00:00.900Z'))).toBe('2026-08-17T12:00:00Z');
    expect(deadlineText(new Date('2026-08-17T12:00:00.100Z'))).toBe('2026-08-17T12:00:00Z');
    expect(deadlineText(new Date('2026-08-17T12:00:01.000Z'))).toBe('2026-08-17T12:00:01Z');
    expect(deadlineText(new Date('1969-12-31T23:59:59.500Z'))).toBe('1969-12-31T23:59:59Z');
  });
});

describe('ClaimGateway redirect targets', () => {
  /** A node stub answering every claim with `answer`, recording the Authorization header of each request it got. */
  async function stub(answer: () => object): Promise<{ server: Server; addr: string; auth: string[] }> {
    const auth: string[] = [];
    const server = createServer((req, res) => {
      auth.push(req.headers.authorization ?? '');
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer()));
    });
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
    return { server, addr: `127.0.0.1:${(server.address() as AddressInfo).port}`, auth };
  }

  it('follows a redirect only to an address a known, non-stale inventory advertises, and counts the rest', async () => {
    const clients = new SandboxdClientSet({ token: 'root' });
    const sandbox = (addr: string) => () => ({ id: 'sb_peer', token: 't', deadline: '2099-01-01T00:00:00Z', owner_addr: addr });
    const outsider = await stub(sandbox('x'));
    const stale = await stub(sandbox('x'));
    const peer = await stub(sandbox('x'));
    // the entry node names a host no inventory advertises, a Stale node and a live peer, in that order
    const entry = await stub(() => ({ redirect: [outsider.addr, stale.addr, peer.addr] }));
    const servers = [outsider, stale, peer, entry];
    try {
      const inventory = [
        { metadata: { name: 'entry' }, node: 'entry', address: entry.addr, pools: [{ template: TEMPLATE, warm: 5 }] },
        {
          metadata: { name: 'stale' },
          node: 'stale',
          address: stale.addr,
          pools: [],
          conditions: [{ type: 'Stale', status: 'True' }],
        },
        { metadata: { name: 'peer' }, node: 'peer', address: peer.addr, pools: [] },
      ];
      const refused: string[] = [];
      const gateway = gatewayOver(clients, inventory, { onAddressRefused: (r) => refused.push(r) });
      const a = await gateway.deliver({ namespace: 'ns', name: 'r1', owner, key: poolKeyFor([{ image: TEMPLATE }], undefined) });
      expect(a).toMatchObject({ node: 'peer', claimId: 'sb_peer' });
      // neither the claim nor the fleet token ever reached the host the node named, nor the Stale node
      expect(outsider.auth).toEqual([]);
      expect(stale.auth).toEqual([]);
      expect(peer.auth).toEqual(['Bearer root']);
      expect(refused).toEqual(['unknown', 'stale']);
    } finally {
      await clients.close();
      for (const s of servers) {
        s.server.closeAllConnections();
        await new Promise<void>((res) => s.server.close(() => res()));
      }
    }
  });

  it('releases through a recorded address only when a known inventory advertises it', async () => {
    const clients = new SandboxdClientSet({ token: 'root' });
    const outsider = await stub(() => ({}));
    try {
      const refused: string[] = [];
      const gateway = gatewayOver(clients, [], { onAddressRefused: (r) => refused.push(r) });
      await expect(gateway.release({ node: 'gone', claimId: 'sb_1', address: outsider.addr })).rejects.toThrow(/no known address/);
      expect(outsider.auth).toEqual([]);
      expect(refused).toEqual(['unknown']);
    } finally {
      await clients.close();
      outsider.server.closeAllConnections();
      await new Promise<void>((res) => outsider.server.close(() => res()));
    }
  });
});
