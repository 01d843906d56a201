import { asNodeAtCapacity, asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import { ACME, GLOBEX, ROOT, caught, raw, startTestSim, type TestSim } from './helpers';

const BASE = 'base:24.04';

describe('sandbox verbs against the simulator', () => {
  let t: TestSim;
  beforeEach(async () => {
    t = await startTestSim({ pools: [{ template: BASE, warm: 4 }] });
  });
  afterEach(async () => t.close());

  it('releases with the sandbox token; a second release (404) still succeeds', async () => {
    const c = await t.root().claim({ template: BASE });
    await t.root().release(c.id, { token: c.token });
    expect(await t.root().sandboxes()).toEqual([]);
    expect((await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/release`, { token: c.token })).status).toBe(404);
    await expect(t.root().release(c.id, { token: c.token })).resolves.toBeUndefined();
    expect(await t.root().metrics()).toContain('sandboxd_releases_total 1');
  });

  it('counts the requests it served by method and route pattern', async () => {
    const c = await t.root().claim({ template: BASE });
    await t.root().sandboxes();
    await t.root().sandboxes();
    await t.root().sandbox(c.id);
    const text = await t.root().metrics();
    expect(text).toContain('sandboxd_sim_requests_total{method="POST",route="/v1/claim"} 1');
    expect(text).toContain('sandboxd_sim_requests_total{method="GET",route="/v1/sandboxes"} 2');
    expect(text).toContain('sandboxd_sim_requests_total{method="GET",route="/v1/sandboxes/:id"} 1');
  });

  it('releases by id with the root token (operator path)', async () => {
    const c = await t.root().claim({ template: BASE });
    await t.root().release(c.id);
    expect((await t.root().info()).claimed).toBe(0);
  });

  it('keeps the sandbox when a release carries a wrong or tenant token (404)', async () => {
    const c = await t.root().claim({ template: BASE });
    expect(await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/release`, { token: 'f'.repeat(32) })).toMatchObject({
      status: 404,
      json: { error: 'unknown sandbox' },
    });
    expect(await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/release`, { token: ACME.token })).toMatchObject({ status: 404 });
    expect(await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/release`)).toMatchObject({
      status: 401,
      json: { error: 'missing bearer token' },
    });
    expect((await t.root().sandboxes()).map((r) => r.id)).toEqual([c.id]);
  });

  it('hibernates (idempotently) and wakes, keeping the deadline', async () => {
    const c = await t.root().claim({ template: BASE, ttlSeconds: 600 });
    await t.root().hibernate(c.id, { token: c.token });
    await t.root().hibernate(c.id, { token: c.token });
    expect(await t.root().sandbox(c.id)).toMatchObject({ hibernated: true, deadline: c.deadline });
    expect(await t.root().stats(c.id)).toMatchObject({ hibernated: true, memUsedMeasured: false, memUsedBytes: 0 });
    expect((await t.root().info()).hibernated).toBe(1);
    await t.root().wake(c.id, { token: c.token });
    await t.root().wake(c.id, { token: c.token });
    expect(await t.root().sandbox(c.id)).toMatchObject({ hibernated: false, deadline: c.deadline });
    const m = await t.root().metrics();
    expect(m).toContain('sandboxd_hibernates_total 1');
    expect(m).toContain('sandboxd_wakes_total 1');
  });

  it('refuses to hibernate an egress-lane sandbox with 409', async () => {
    await t.close();
    t = await startTestSim({ egress: true });
    const c = await t.root().claim({ template: BASE, net: 'egress' });
    expect(asSandboxdHttpError(await caught(t.root().hibernate(c.id)))).toMatchObject({
      statusCode: 409,
      message: 'egress-lane sandboxes do not hibernate',
    });
  });

  it('renews to now + TTL (shortening too); the reply is authoritative', async () => {
    const c = await t.root().claim({ template: BASE, ttlSeconds: 3600 });
    const now = t.sim.clock.now();
    const r = await t.root().renew(c.id, 60, { token: c.token });
    expect(Math.abs((r.deadline?.getTime() ?? 0) - (now + 60_000))).toBeLessThan(2000);
    const d = await t.root().renew(c.id, 0, { token: c.token });
    expect(Math.abs((d.deadline?.getTime() ?? 0) - (now + 300_000))).toBeLessThan(2000);
    expect((await t.root().sandbox(c.id)).deadline).toEqual(d.deadline);
    expect((await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/renew`, { token: c.token, body: '{"ttl_seconds":' })).status).toBe(400);
    expect((await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/renew`, { token: c.token })).status).toBe(200);
  });

  it('shows the token on a single read with a root token, and stats from the size tier', async () => {
    const c = await t.root().claim({ template: BASE, size: 'medium' });
    expect(await t.root().sandbox(c.id)).toMatchObject({ id: c.id, token: c.token, key: { size: 'medium' } });
    const s = await t.root().stats(c.id);
    expect(s).toMatchObject({ id: c.id, cpuCount: 2, memTotalBytes: 2 ** 30, memUsedMeasured: true, hibernated: false });
    expect(s.memUsedBytes).toBeGreaterThan(0);
    expect(asSandboxdHttpError(await caught(t.root().sandbox('sb_0000000000000000')))).toMatchObject({
      statusCode: 404,
      message: 'unknown sandbox',
    });
    expect(asSandboxdHttpError(await caught(t.root().stats('sb_0000000000000000')))?.statusCode).toBe(404);
  });

  it('answers owner with the node address for the sandbox token', async () => {
    const c = await t.root().claim({ template: BASE });
    expect(await t.root().owner(c.id, { token: c.token })).toEqual({ ownerAddr: t.sim.nodes[0]?.addr });
    expect(asSandboxdHttpError(await caught(t.root().owner(c.id, { token: 'x' })))?.statusCode).toBe(404);
  });

  it('forks all children with their own lease and claim_ref prefix', async () => {
    const parent = await t.root().claim({ template: BASE }, { token: ACME.token });
    const now = t.sim.clock.now();
    const kids = await t
      .root()
      .fork(parent.id, { count: 3, ttlSeconds: 120, claimRefPrefix: 'ns/fork-', sandboxToken: parent.token }, { token: ACME.token });
    expect(kids).toHaveLength(3);
    for (const k of kids) {
      expect(Math.abs((k.deadline?.getTime() ?? 0) - (now + 120_000))).toBeLessThan(2000);
      expect(await t.root().sandboxes(`ns/fork-${k.id}`)).toHaveLength(1);
    }
    // children belong to the parent's tenant
    expect(await t.root().sandboxes(undefined, { token: ACME.token })).toHaveLength(4);
  });

  it('forks by id with the root token and an empty body token; a tenant needs the right token', async () => {
    const parent = await t.root().claim({ template: BASE });
    await expect(t.root().fork(parent.id, { count: 1 })).resolves.toHaveLength(1);
    expect(asSandboxdHttpError(await caught(t.root().fork(parent.id, { count: 1 }, { token: ACME.token })))?.statusCode).toBe(404);
    expect(
      asSandboxdHttpError(await caught(t.root().fork(parent.id, { count: 1, sandboxToken: 'bad' }, { token: ACME.token })))?.statusCode,
    ).toBe(404);
  });

  it('rejects a bad fork count (400) and a fork that does not fit (429, no child)', async () => {
    await t.close();
    t = await startTestSim({ maxClaims: 3, maxForkCount: 4 });
    const parent = await t.root().claim({ template: BASE });
    expect(asSandboxdHttpError(await caught(t.root().fork(parent.id, { count: 0 })))).toMatchObject({
      statusCode: 400,
      message: 'invalid fork count',
    });
    expect(asSandboxdHttpError(await caught(t.root().fork(parent.id, { count: 5 })))?.statusCode).toBe(400);
    expect(asNodeAtCapacity(await caught(t.root().fork(parent.id, { count: 3 })))?.statusCode).toBe(429);
    expect((await t.root().info()).claimed).toBe(1);
  });

  it('loses every child when one clone fails (all or nothing)', async () => {
    const parent = await t.root().claim({ template: BASE });
    t.sim.node('node-0').setFaults({ failProvision: [{ template: BASE }] });
    expect(asSandboxdHttpError(await caught(t.root().fork(parent.id, { count: 3 })))).toMatchObject({
      statusCode: 500,
      message: 'fork failed',
    });
    expect((await t.root().info()).claimed).toBe(1);
  });

  it('promotes a sandbox; claims of the template clone from it and echo its digest', async () => {
    const src = await t.root().claim({ template: BASE, size: 'large' });
    const p = await t.root().promote(src.id, { template: 'myproj:v1', sandboxToken: src.token }, { token: ACME.token });
    expect(p.key).toEqual({ template: 'myproj:v1', net: 'none', size: 'large' });
    expect(p.contentDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    await t.root().release(src.id);
    const c = await t.root().claim({ template: 'myproj:v1', size: 'large' });
    expect(c.templateDigest).toBe(p.contentDigest);
    expect(await t.root().metrics()).toContain('sandboxd_claims_total{tier="clone"} 1');
    const again = await t.root().promote(c.id, { template: 'myproj:v1' });
    expect(again.contentDigest).not.toBe(p.contentDigest);
  });

  it('refuses promotes of bad names (400), pool keys and foreign templates (409)', async () => {
    const src = await t.root().claim({ template: BASE });
    expect(asSandboxdHttpError(await caught(t.root().promote(src.id, { template: '-bad' })))).toMatchObject({
      statusCode: 400,
      message: 'invalid template name',
    });
    expect(asSandboxdHttpError(await caught(t.root().promote(src.id, { template: BASE })))).toMatchObject({
      statusCode: 409,
      message: 'template belongs to a configured pool',
    });
    await t.root().promote(src.id, { template: 'shared:v1', sandboxToken: src.token }, { token: ACME.token });
    expect(
      asSandboxdHttpError(
        await caught(t.root().promote(src.id, { template: 'shared:v1', sandboxToken: src.token }, { token: GLOBEX.token })),
      )?.message,
    ).toBe('template owned by another tenant');
  });

  it('deletes templates: tenants only their own, 404 unknown, 409 for a pool key', async () => {
    const src = await t.root().claim({ template: BASE });
    await t.root().promote(src.id, { template: 'mine:v1', sandboxToken: src.token }, { token: ACME.token });
    expect(asSandboxdHttpError(await caught(t.root().deleteTemplate({ template: 'mine:v1' }, { token: GLOBEX.token })))).toMatchObject({
      statusCode: 404,
      message: 'unknown template',
    });
    expect(asSandboxdHttpError(await caught(t.root().deleteTemplate({ template: BASE })))?.statusCode).toBe(409);
    await expect(t.root().deleteTemplate({ template: 'mine:v1' }, { token: ACME.token })).resolves.toMatchObject({ deleted: true });
    expect(asSandboxdHttpError(await caught(t.root().deleteTemplate({ template: 'mine:v1' })))?.statusCode).toBe(404);
  });

  it('checkpoints, lists per tenant, claims a branch and deletes (404 is success)', async () => {
    const src = await t.root().claim({ template: BASE }, { token: ACME.token });
    const a = await t.root().checkpoint(src.id, { name: 'after-setup', sandboxToken: src.token }, { token: ACME.token });
    const b = await t.root().checkpoint(src.id);
    expect(a).toMatchObject({ name: 'after-setup', sandboxId: src.id, tenant: 'acme', key: { template: BASE } });
    expect(a.id).toMatch(/^ck_[0-9a-f]{16}$/);
    expect(b.tenant).toBeUndefined();
    expect((await t.root().checkpoints()).map((c) => c.id).sort()).toEqual([a.id, b.id].sort());
    expect((await t.root().checkpoints({ token: ACME.token })).map((c) => c.id)).toEqual([a.id]);
    expect(await t.root().checkpoints({ token: GLOBEX.token })).toEqual([]);
    const branch = await t.root().claimCheckpoint(a.id, { claimRef: 'ns/branch' }, { token: GLOBEX.token });
    expect(branch.fromCheckpoint).toBe(a.id);
    expect((await t.root().sandboxes('ns/branch', { token: GLOBEX.token }))[0]).toMatchObject({ fromCheckpoint: a.id });
    // a tenant cannot delete another's checkpoint: 404, which the client treats as success
    await t.root().deleteCheckpoint(a.id, { token: GLOBEX.token });
    expect(await t.root().checkpoints({ token: ACME.token })).toHaveLength(1);
    await t.root().deleteCheckpoint(a.id, { token: ACME.token });
    expect(await t.root().checkpoints({ token: ACME.token })).toEqual([]);
    expect(asSandboxdHttpError(await caught(t.root().claimCheckpoint(a.id)))).toMatchObject({
      statusCode: 404,
      message: 'unknown checkpoint',
    });
  });

  it('refuses a bad checkpoint name (400) and a checkpoint claim while draining (429)', async () => {
    const src = await t.root().claim({ template: BASE });
    expect(asSandboxdHttpError(await caught(t.root().checkpoint(src.id, { name: '../x' })))).toMatchObject({
      statusCode: 400,
      message: 'invalid checkpoint name',
    });
    const ck = await t.root().checkpoint(src.id);
    await t.root().drain();
    expect(asNodeAtCapacity(await caught(t.root().claimCheckpoint(ck.id)))?.message).toBe('node claim quota reached: node draining');
  });

  it('refuses to checkpoint or promote an egress-lane sandbox (409), and a bad checkpoint-claim body (400)', async () => {
    await t.close();
    t = await startTestSim({ egress: true });
    const c = await t.root().claim({ template: BASE, net: 'egress' });
    expect(asSandboxdHttpError(await caught(t.root().checkpoint(c.id)))).toMatchObject({
      statusCode: 409,
      message: 'egress-lane sandboxes do not checkpoint',
    });
    expect(asSandboxdHttpError(await caught(t.root().promote(c.id, { template: 'e:1' }))))?.toMatchObject({ statusCode: 409 });
    expect(asSandboxdHttpError(await caught(t.root().fork(c.id, { count: 1 }))))?.toMatchObject({ statusCode: 409 });
    const plain = await t.root().claim({ template: BASE });
    const ck = await t.root().checkpoint(plain.id);
    expect(await raw(t.url(), 'POST', `/v1/checkpoints/${ck.id}/claim`, { token: ROOT })).toMatchObject({
      status: 400,
      json: { error: 'invalid request body' },
    });
    expect(await raw(t.url(), 'POST', `/v1/checkpoints/${ck.id}/claim`, { token: ROOT, body: '{"ttl_seconds":true}' })).toMatchObject({
      status: 400,
    });
  });

  it('keeps checkpoints after their source sandbox is released', async () => {
    const src = await t.root().claim({ template: BASE });
    const ck = await t.root().checkpoint(src.id);
    await t.root().release(src.id);
    await expect(t.root().claimCheckpoint(ck.id)).resolves.toMatchObject({ fromCheckpoint: ck.id });
  });

  it('redirects a checkpoint claim to the peer holding it', async () => {
    await t.close();
    t = await startTestSim({ nodes: 2 });
    const src = await t.root(1).claim({ template: BASE });
    const ck = await t.root(1).checkpoint(src.id);
    const err = asNodeAtCapacity(await caught(t.root(0).claimCheckpoint(ck.id)));
    expect(err?.candidates).toEqual([t.url(1)]);
    const c = await t.root(0).claimCheckpoint(ck.id, {}, { followRedirects: true });
    expect(c).toMatchObject({ nodeUrl: t.url(1), fromCheckpoint: ck.id });
    expect(asSandboxdHttpError(await caught(t.root(0).claimCheckpoint(ck.id, { noRedirect: true })))?.statusCode).toBe(404);
  });

  it('redirects a template delete to the node that owns it', async () => {
    await t.close();
    t = await startTestSim({ nodes: 2 });
    const src = await t.root(1).claim({ template: BASE });
    await t.root(1).promote(src.id, { template: 'far:v1' });
    await t.sim.node('node-0').refreshGossip();
    expect(await t.root(0).deleteTemplate({ template: 'far:v1' })).toEqual({ deleted: false, candidates: [t.url(1)] });
    expect(await t.root(0).deleteTemplate({ template: 'far:v1' }, { followRedirects: true })).toEqual({ deleted: true, nodeUrl: t.url(1) });
  });

  it('redirects a claim of a promoted template owned by a peer', async () => {
    await t.close();
    t = await startTestSim({ nodes: 2 });
    const src = await t.root(1).claim({ template: BASE });
    await t.root(1).promote(src.id, { template: 'far:v2' });
    await t.sim.node('node-0').refreshGossip();
    const c = await t.root(0).claim({ template: 'far:v2' }, { followRedirects: true });
    expect(c.nodeUrl).toBe(t.url(1));
    expect(c.templateDigest).toMatch(/^sha256:/);
  });

  it('uses the root token from the header for root-only reads', async () => {
    expect((await raw(t.url(), 'GET', '/v1/info', { token: ROOT })).status).toBe(200);
  });
});
