import { asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import { ManualClock } from '../src';
import { ROOT, caught, eventually, raw, startTestSim, type TestSim } from './helpers';

const BASE = 'base:24.04';
const PY = 'python:3.12';

describe('PUT /v1/pools and refill', () => {
  let t: TestSim;
  afterEach(async () => t.close());

  it('creates pools with warm targets and fills them; info reports them in a stable order', async () => {
    t = await startTestSim();
    await t.root().setPools([
      { template: BASE, warm: 3 },
      { template: PY, size: 'large', warm: 2 },
    ]);
    await eventually(async () => (await t.root().info()).pools.every((p) => p.warm === p.target));
    const info = await t.root().info();
    expect(info.pools.map((p) => [p.key.template, p.key.size, p.warm, p.target, p.golden]).sort()).toEqual([
      [BASE, 'small', 3, 3, true],
      [PY, 'large', 2, 2, true],
    ]);
    const again = await t.root().info();
    expect(again.pools.map((p) => p.key.template)).toEqual(info.pools.map((p) => p.key.template));
    const m = await t.root().metrics();
    expect(m).toContain(`sandboxd_pool_warm{template="${PY}",net="none",size="large"} 2`);
    expect(m).toContain(`sandboxd_pool_target{template="${BASE}",net="none",size="small"} 3`);
  });

  it('replaces the set wholesale: an omitted pool drains, live claims stay', async () => {
    t = await startTestSim({
      pools: [
        { template: BASE, warm: 2 },
        { template: PY, warm: 2 },
      ],
    });
    const live = await t.root().claim({ template: PY });
    const info = await t.root().setPools([{ template: BASE, warm: 2 }]);
    expect(info.pools.map((p) => p.key.template)).toEqual([BASE]);
    expect(info.claimed).toBe(1);
    await expect(t.root().sandbox(live.id)).resolves.toMatchObject({ key: { template: PY } });
    // the drained key now cold-boots
    await t.root().claim({ template: PY });
    expect(await t.root().metrics()).toContain('sandboxd_claims_total{tier="cold"} 1');
    const none = await t.root().setPools([]);
    expect(none.pools).toEqual([]);
  });

  it('destroys warm VMs above a lowered target at once', async () => {
    t = await startTestSim({ pools: [{ template: BASE, warm: 5 }] });
    const info = await t.root().setPools([{ template: BASE, warm: 2 }]);
    expect(info.pools[0]).toMatchObject({ warm: 2, target: 2 });
  });

  it('refills a pool right after claims take from it', async () => {
    t = await startTestSim({ pools: [{ template: BASE, warm: 3 }] });
    for (let i = 0; i < 5; i++) await t.root().claim({ template: BASE });
    await eventually(async () => (await t.root().info()).pools[0]?.warm === 3);
    expect(await t.root().metrics()).toContain('sandboxd_claims_total{tier="warm"} 5');
  });

  it('rejects unknown, repeated and config-owned fields, bad values and duplicate keys with 400', async () => {
    t = await startTestSim();
    const put = (body: string) => raw(t.url(), 'PUT', '/v1/pools', { token: ROOT, body });
    expect(await put('{"pools":[{"template":"t","warm":1,"wram":2}]}')).toMatchObject({
      status: 400,
      json: { error: 'invalid request body: unknown field "wram"' },
    });
    expect(await put('{"pools":[{"template":"t","warm":1,"warm":2}]}')).toMatchObject({
      status: 400,
      json: { error: 'invalid request body: duplicate field "warm"' },
    });
    expect(await put('{"pools":[{"template":"t","warmup":true}]}')).toMatchObject({ status: 400 });
    expect(await put('{"pools":[{"template":"t","warm":-1}]}')).toMatchObject({ status: 400 });
    expect(await put('{"pools":[{"template":"t","warm":4,"warm_max":2}]}')).toMatchObject({ status: 400 });
    expect(await put('{"pools":[{"template":"t","size":"huge"}]}')).toMatchObject({
      status: 400,
      json: { error: 'invalid pool key: unknown size "huge"' },
    });
    expect(await put('{"pools":[{"template":"t","archive_after_seconds":10}]}')).toMatchObject({ status: 400 });
    expect(await put('{"pools":[{"template":"t"},{"template":"t","net":"none"}]}')).toMatchObject({
      status: 400,
      json: { error: 'duplicate pool t/none/small' },
    });
    expect(await put('not json')).toMatchObject({ status: 400, json: { error: 'invalid request body' } });
    // nothing was applied
    expect((await t.root().info()).pools).toEqual([]);
  });

  it('answers 409 for an egress pool on a node without egress, and 400 for idle hibernate on one', async () => {
    t = await startTestSim();
    expect(asSandboxdHttpError(await caught(t.root().setPools([{ template: 't', net: 'egress', warm: 1 }])))?.statusCode).toBe(409);
    await t.close();
    t = await startTestSim({ egress: true });
    expect(
      asSandboxdHttpError(await caught(t.root().setPools([{ template: 't', net: 'egress', warm: 1, idleHibernateSeconds: 5 }])))
        ?.statusCode,
    ).toBe(400);
    await expect(t.root().setPools([{ template: 't', net: 'egress', warm: 1 }])).resolves.toBeDefined();
  });

  it('stops filling at the VM capacity and reports at_capacity', async () => {
    t = await startTestSim({ vmCapacity: 3, pools: [{ template: BASE, warm: 10 }] });
    await eventually(async () => (await t.root().info()).atCapacity);
    const info = await t.root().info();
    expect(info.pools[0]?.warm).toBe(3);
    expect(info.atCapacityReason).toContain('capacity');
  });
});

describe('refill pacing on virtual time', () => {
  let t: TestSim;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = new ManualClock();
    t = await startTestSim({ speed: 1, clock, refillConcurrency: 2, latency: { goldenBuildMs: 0 } });
  });
  afterEach(async () => t.close());

  it('starts at most refill_concurrency clones per tick', async () => {
    await t.root().setPools([{ template: BASE, warm: 6 }]);
    await clock.advance(0);
    expect((await t.root().info()).pools[0]).toMatchObject({ golden: true, warm: 0, refilling: 2 });
    await clock.advance(100);
    expect((await t.root().info()).pools[0]).toMatchObject({ warm: 2, refilling: 0 });
    // the next pass waits for the 2 s refill tick, not for the clones
    await clock.advance(1800);
    expect((await t.root().info()).pools[0]).toMatchObject({ warm: 2, refilling: 0 });
    await clock.advance(200);
    expect((await t.root().info()).pools[0]).toMatchObject({ warm: 4, refilling: 0 });
    await clock.advance(2000);
    expect((await t.root().info()).pools[0]).toMatchObject({ warm: 6, refilling: 0 });
  });

  it('retries a failed golden build after 30 s', async () => {
    t.sim.node('node-0').setFaults({ failProvision: [{ template: BASE }] });
    await t.root().setPools([{ template: BASE, warm: 2 }]);
    await clock.advance(100);
    expect((await t.root().info()).pools[0]).toMatchObject({ golden: false, warm: 0 });
    t.sim.node('node-0').clearFaults();
    await clock.advance(20_000);
    expect((await t.root().info()).pools[0]?.golden).toBe(false);
    await clock.advance(10_000);
    await clock.advance(2_100);
    expect((await t.root().info()).pools[0]).toMatchObject({ golden: true, warm: 2 });
  });
});
