import { asNodeAtCapacity, asSandboxdHttpError, isNodeAtCapacity } from '@sandbox-scale/sandboxd-client';
import { ManualClock } from '../src';
import { ACME, ROOT, caught, eventually, raw, startTestSim, type TestSim } from './helpers';

const BASE = 'base:24.04';

describe('claim against the simulator', () => {
  let t: TestSim;
  afterEach(async () => t.close());

  it('hands over a warm VM with id, token, deadline and owner, and lists it', async () => {
    t = await startTestSim({ pools: [{ template: BASE, warm: 2 }] });
    const c = await t.root().claim({ template: BASE, claimRef: 'ns/a', ttlSeconds: 60 });
    expect(c.id).toMatch(/^sb_[0-9a-f]{16}$/);
    expect(c.token).toMatch(/^[0-9a-f]{32}$/);
    expect(c.ownerUrl).toBe(t.url(0));
    const t0 = t.sim.clock.now();
    expect(Math.abs((c.deadline?.getTime() ?? 0) - (t0 + 60_000))).toBeLessThan(2000);
    const rows = await t.root().sandboxes('ns/a');
    expect(rows.map((r) => r.id)).toEqual([c.id]);
    expect(rows[0]).toMatchObject({
      key: { template: BASE, net: 'none', size: 'small' },
      hibernated: false,
      archived: false,
      claimRef: 'ns/a',
    });
    expect(await t.root().sandboxes('ns/other')).toEqual([]);
    const metrics = await t.root().metrics();
    expect(metrics).toContain('sandboxd_claims_total{tier="warm"} 1');
  });

  it('counts clone and cold tiers: golden pool misses clone, unpooled keys cold-boot', async () => {
    t = await startTestSim({ pools: [{ template: BASE, warm: 0 }] });
    await t.root().claim({ template: BASE });
    await t.root().claim({ template: 'other:1' });
    const metrics = await t.root().metrics();
    expect(metrics).toContain('sandboxd_claims_total{tier="clone"} 1');
    expect(metrics).toContain('sandboxd_claims_total{tier="cold"} 1');
  });

  it('defaults the TTL to 300 s and clamps it at 24 h', async () => {
    t = await startTestSim();
    const now = t.sim.clock.now();
    const a = await t.root().claim({ template: BASE });
    const b = await t.root().claim({ template: BASE, ttlSeconds: 10 * 86_400 });
    expect(Math.round(((a.deadline?.getTime() ?? 0) - now) / 1000)).toBeGreaterThanOrEqual(299);
    expect(Math.round(((a.deadline?.getTime() ?? 0) - now) / 1000)).toBeLessThanOrEqual(301);
    expect(Math.round(((b.deadline?.getTime() ?? 0) - now) / 1000)).toBeLessThanOrEqual(86_401);
    expect(Math.round(((b.deadline?.getTime() ?? 0) - now) / 1000)).toBeGreaterThanOrEqual(86_399);
  });

  it('answers 400 for a bad body or pool key, with the cause in the message', async () => {
    t = await startTestSim();
    const url = t.url();
    expect(await raw(url, 'POST', '/v1/claim', { token: ROOT })).toMatchObject({ status: 400, json: { error: 'invalid request body' } });
    expect(await raw(url, 'POST', '/v1/claim', { token: ROOT, body: '{"template":' })).toMatchObject({
      status: 400,
      json: { error: 'invalid request body' },
    });
    expect(await raw(url, 'POST', '/v1/claim', { token: ROOT, body: '{"template":"t","ttl_seconds":"5"}' })).toMatchObject({ status: 400 });
    expect(await raw(url, 'POST', '/v1/claim', { token: ROOT, body: '{}' })).toMatchObject({
      status: 400,
      json: { error: 'invalid pool key: empty template' },
    });
    const huge = asSandboxdHttpError(await caught(t.root().claim({ template: 't', size: 'huge' })));
    expect(huge).toMatchObject({ statusCode: 400, message: 'invalid pool key: unknown size "huge"' });
    // unknown fields are ignored
    expect((await raw(url, 'POST', '/v1/claim', { token: ROOT, body: '{"template":"t","whatever":1}' })).status).toBe(200);
  });

  it('refuses bodies over 1 MiB with 400', async () => {
    t = await startTestSim();
    const body = JSON.stringify({ template: 't', pad: 'x'.repeat(1 << 20) });
    expect(await raw(t.url(), 'POST', '/v1/claim', { token: ROOT, body })).toMatchObject({
      status: 400,
      json: { error: 'invalid request body' },
    });
  });

  it('answers 409 for egress on a node without an egress attachment, 200 with one', async () => {
    t = await startTestSim({ nodes: 2, mesh: false, perNode: (i) => ({ egress: i === 1 }) });
    expect(asSandboxdHttpError(await caught(t.root(0).claim({ template: BASE, net: 'egress' })))?.statusCode).toBe(409);
    await expect(t.root(1).claim({ template: BASE, net: 'egress' })).resolves.toMatchObject({ ownerUrl: t.url(1) });
  });

  it('refuses at the node cap with 429 and the daemon message', async () => {
    t = await startTestSim({ maxClaims: 2 });
    await t.root().claim({ template: BASE });
    await t.root().claim({ template: BASE });
    const err = asNodeAtCapacity(await caught(t.root().claim({ template: BASE })));
    expect(err).toMatchObject({ statusCode: 429, message: 'node claim quota reached: 2 live claims, cap 2' });
  });

  it('caps a tenant at its max_claims but never root', async () => {
    t = await startTestSim({ tenants: [{ ...ACME, maxClaims: 1 }] });
    const acme = t.root();
    await acme.claim({ template: BASE }, { token: ACME.token });
    const err = asNodeAtCapacity(await caught(acme.claim({ template: BASE }, { token: ACME.token })));
    expect(err?.message).toBe('node claim quota reached: tenant acme at 1 live claims, cap 1');
    await expect(t.root().claim({ template: BASE })).resolves.toMatchObject({ ownerUrl: t.url() });
    const metrics = await t.root().metrics();
    expect(metrics).toContain('sandboxd_tenant_claims{tenant="acme"} 1');
  });

  it('refuses claims while draining, and serves again after undrain', async () => {
    t = await startTestSim({ pools: [{ template: BASE, warm: 2 }] });
    const live = await t.root().claim({ template: BASE });
    const info = await t.root().drain();
    expect(info).toMatchObject({ draining: true, claimed: 1 });
    expect(info.pools[0]?.warm).toBe(0);
    expect(asNodeAtCapacity(await caught(t.root().claim({ template: BASE })))?.message).toBe('node claim quota reached: node draining');
    // live claims run on
    await expect(t.root().sandbox(live.id)).resolves.toMatchObject({ id: live.id });
    const after = await t.root().undrain();
    expect(after.draining).toBe(false);
    expect(after.pools[0]?.refilling).toBe(2);
    await eventually(async () => (await t.root().info()).pools[0]?.warm === 2);
    await expect(t.root().claim({ template: BASE })).resolves.toBeDefined();
  });

  it('redirects a warm miss to a peer with warm VMs; following serves it there', async () => {
    t = await startTestSim({ nodes: 3, perNode: (i) => ({ pools: i === 2 ? [{ template: BASE, warm: 3 }] : [] }) });
    await t.sim.node('node-0').refreshGossip();
    const err = asNodeAtCapacity(await caught(t.root(0).claim({ template: BASE })));
    expect(err?.statusCode).toBe(200);
    expect(err?.candidates).toEqual([t.url(2)]);
    const c = await t.root(0).claim({ template: BASE, claimRef: 'ns/r' }, { followRedirects: true });
    expect(c.nodeUrl).toBe(t.url(2));
    expect(c.ownerUrl).toBe(t.url(2));
    expect((await t.root(2).sandboxes('ns/r')).map((r) => r.id)).toEqual([c.id]);
    expect(await t.root(0).sandboxes()).toEqual([]);
  });

  it('redirects only once gossip has caught up (a ~1 s tick)', async () => {
    const clock = new ManualClock();
    t = await startTestSim({ nodes: 2, clock });
    await t.root(1).setPools([{ template: BASE, warm: 2 }]);
    await clock.advance(0);
    // node-0 has not heard yet: it serves a cold claim itself
    await expect(t.root(0).claim({ template: BASE })).resolves.toMatchObject({ nodeUrl: t.url(0) });
    await clock.advance(1000);
    expect(asNodeAtCapacity(await caught(t.root(0).claim({ template: BASE })))?.candidates).toEqual([t.url(1)]);
  });

  it('serves locally with no_redirect even when a peer has warm VMs', async () => {
    t = await startTestSim({ nodes: 2, perNode: (i) => ({ pools: i === 1 ? [{ template: BASE, warm: 3 }] : [] }) });
    await t.sim.node('node-0').refreshGossip();
    const c = await t.root(0).claim({ template: BASE, noRedirect: true });
    expect(c.ownerUrl).toBe(t.url(0));
  });

  it('redirects an admission refusal to a warm peer instead of 429', async () => {
    t = await startTestSim({ nodes: 2, perNode: (i) => ({ pools: i === 1 ? [{ template: BASE, warm: 2 }] : [] }) });
    await t.root(0).drain();
    await t.sim.node('node-0').refreshGossip();
    const err = asNodeAtCapacity(await caught(t.root(0).claim({ template: BASE })));
    expect(err).toMatchObject({ statusCode: 200, candidates: [t.url(1)] });
  });

  it('follows a stale redirect: the peer refuses, the entry node serves locally', async () => {
    t = await startTestSim({ nodes: 2, perNode: (i) => ({ pools: i === 1 ? [{ template: BASE, warm: 1 }] : [] }) });
    await t.sim.node('node-0').refreshGossip();
    t.sim.node('node-0').freezeGossip(true);
    await t.root(1).drain();
    const c = await t.root(0).claim({ template: BASE }, { followRedirects: true });
    expect(c.nodeUrl).toBe(t.url(0));
  });

  it('answers 404 to require_promoted when no promoted template resolves', async () => {
    t = await startTestSim();
    const err = asSandboxdHttpError(await caught(t.root().claim({ template: BASE, requirePromoted: true, noRedirect: true })));
    expect(err).toMatchObject({ statusCode: 404, message: 'unknown template' });
  });

  it('fails claims of an image the node cannot boot with 500 provisioning failed', async () => {
    t = await startTestSim({ images: [BASE] });
    await expect(t.root().claim({ template: BASE })).resolves.toBeDefined();
    expect(asSandboxdHttpError(await caught(t.root().claim({ template: 'nope:1' })))).toMatchObject({
      statusCode: 500,
      message: 'provisioning failed',
    });
    expect(await t.root().sandboxes()).toHaveLength(1);
  });

  it('destroys a provision that loses the admission race at commit, with 429', async () => {
    const clock = new ManualClock();
    t = await startTestSim({ speed: 1, clock, maxClaims: 1 });
    const a = t.root().claim({ template: 'cold:1' });
    const b = t.root().claim({ template: 'cold:1' });
    await eventually(() => t.sim.node('node-0').state.provisioning === 2);
    await clock.advance(1000);
    const results = await Promise.allSettled([a, b]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected');
    expect(isNodeAtCapacity(lost?.status === 'rejected' ? lost.reason : undefined)).toBe(true);
    expect((await t.root().info()).claimed).toBe(1);
  });
});

describe('blocking provisions on virtual time', () => {
  let t: TestSim;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = new ManualClock();
    t = await startTestSim({ speed: 1, clock });
  });
  afterEach(async () => t.close());

  it('holds a cold claim open for the cold-boot time', async () => {
    let done = false;
    const pending = t
      .root()
      .claim({ template: 'cold:1' })
      .then((c) => {
        done = true;
        return c;
      });
    await eventually(() => t.sim.node('node-0').state.provisioning === 1);
    await clock.advance(200);
    expect(done).toBe(false);
    await clock.advance(300);
    await expect(pending).resolves.toMatchObject({ ownerUrl: t.url() });
    expect(await t.root().metrics()).toContain('sandboxd_claims_total{tier="cold"} 1');
  });

  it('builds a new pool golden first (cold claims meanwhile), then fills it', async () => {
    const info = await t.root().setPools([{ template: BASE, warm: 3 }]);
    expect(info.pools[0]).toMatchObject({ golden: false, warm: 0, target: 3 });
    await clock.advance(20_000);
    await eventually(async () => (await t.root().info()).pools[0]?.golden === true);
    await clock.advance(100);
    await eventually(async () => (await t.root().info()).pools[0]?.warm === 3);
  });
});
