import {
  asNodeAtCapacity,
  asSandboxdHttpError,
  isAbortError,
  isMalformedReply,
  isReplyTooLarge,
  isTransportError,
} from '@sandbox-scale/sandboxd-client';
import { ManualClock } from '../src';
import { ROOT, caught, eventually, raw, startTestSim, type TestSim } from './helpers';

const BASE = 'base:24.04';

describe('fault injection', () => {
  let t: TestSim;
  afterEach(async () => t.close());

  it('fails a verb with its 500 text at the configured rate, without side effects', async () => {
    t = await startTestSim({ faults: { errorRate: { claim: 1 } } });
    expect(asSandboxdHttpError(await caught(t.root().claim({ template: BASE })))).toMatchObject({
      statusCode: 500,
      message: 'provisioning failed',
    });
    expect((await t.root().info()).claimed).toBe(0);
    t.sim.node('node-0').setFaults({ errorRate: { release: 1 } });
    const c = await t.root().claim({ template: BASE });
    expect(asSandboxdHttpError(await caught(t.root().release(c.id)))).toMatchObject({ statusCode: 500, message: 'release failed' });
  });

  it('fails about the configured fraction of calls (seeded)', async () => {
    t = await startTestSim({ faults: { errorRate: { info: 0.5 } } });
    const results = await Promise.allSettled(Array.from({ length: 200 }, () => t.root().info()));
    const failed = results.filter((r) => r.status === 'rejected').length;
    expect(failed).toBeGreaterThan(60);
    expect(failed).toBeLessThan(140);
  });

  it('forces 503 with Retry-After', async () => {
    t = await startTestSim({ faults: { unavailable: { checkpoint_claim: 4 } } });
    expect(asSandboxdHttpError(await caught(t.root().claimCheckpoint('ck_0000000000000000')))).toMatchObject({
      statusCode: 503,
      retryAfterSeconds: 4,
    });
  });

  it('forces provisioning failures for one key only', async () => {
    t = await startTestSim({ faults: { failProvision: [{ template: 'bad:1' }] } });
    expect(asSandboxdHttpError(await caught(t.root().claim({ template: 'bad:1' }))))?.toMatchObject({
      statusCode: 500,
      message: 'provisioning failed',
    });
    await expect(t.root().claim({ template: BASE })).resolves.toBeDefined();
  });

  it('adds latency on the node clock', async () => {
    const clock = new ManualClock();
    t = await startTestSim({ clock, faults: { latencyMs: 1000 } });
    let done = false;
    const p = t
      .root()
      .info()
      .then(() => {
        done = true;
      });
    await eventually(() => clock.pendingTimers > 4);
    await clock.advance(900);
    expect(done).toBe(false);
    await clock.advance(200);
    await p;
    expect(done).toBe(true);
  });

  it('slows one verb only: a claim outlives its caller and still hands the VM over, while lists answer at once', async () => {
    const clock = new ManualClock();
    t = await startTestSim({ clock, faults: { slow: { claim: 1000 } } });
    const ref = 'ns/slow';
    const err = await caught(t.root().claim({ template: BASE, claimRef: ref }, { signal: AbortSignal.timeout(50) }));
    expect(isAbortError(err)).toBe(true);
    // the list is not slowed; the claim is still waiting on the node clock
    expect(await t.root().sandboxes(ref)).toEqual([]);
    await clock.advance(1100);
    await eventually(async () => (await t.root().sandboxes(ref)).length === 1);
  });

  it('partition (hang): the request is accepted but never answered; the caller aborts', async () => {
    t = await startTestSim();
    t.sim.node('node-0').setFaults({ partition: 'hang' });
    const err = await caught(t.root().claim({ template: BASE }, { signal: AbortSignal.timeout(100) }));
    expect(isAbortError(err)).toBe(true);
    t.sim.node('node-0').clearFaults();
    await expect(t.root().claim({ template: BASE }, { signal: AbortSignal.timeout(2000) })).resolves.toBeDefined();
  });

  it('partition (close): the connection drops, a transport error', async () => {
    t = await startTestSim();
    t.sim.node('node-0').setFaults({ partition: 'close' });
    expect(isTransportError(await caught(t.root().info()))).toBe(true);
  });

  it('malformed replies: invalid JSON, a wrong shape, an oversized body', async () => {
    t = await startTestSim({ faults: { malformed: { claim: 'invalid-json', info: 'wrong-shape', sandboxes: 'oversized' } } });
    expect(isMalformedReply(await caught(t.root().claim({ template: BASE })))).toBe(true);
    expect(isMalformedReply(await caught(t.root().info()))).toBe(true);
    expect(isReplyTooLarge(await caught(t.root().sandboxes()))).toBe(true);
    // the connection pool still works afterwards
    await expect(t.root().peers()).resolves.toEqual([]);
  });

  it('is driven over HTTP by POST/GET/DELETE /_sim/faults (root token), even while partitioned', async () => {
    t = await startTestSim();
    expect((await raw(t.url(), 'POST', '/_sim/faults', { body: '{"partition":"hang"}' })).status).toBe(401);
    expect((await raw(t.url(), 'POST', '/_sim/faults', { token: ROOT, body: '{"partition":"sideways"}' })).status).toBe(400);
    expect(await raw(t.url(), 'POST', '/_sim/faults', { token: ROOT, body: '{"partition":"close"}' })).toMatchObject({
      status: 200,
      json: { partition: 'close' },
    });
    expect(isTransportError(await caught(t.root().info()))).toBe(true);
    expect(await raw(t.url(), 'GET', '/_sim/faults', { token: ROOT })).toMatchObject({ json: { partition: 'close' } });
    expect(await raw(t.url(), 'DELETE', '/_sim/faults', { token: ROOT })).toMatchObject({ json: { partition: 'none' } });
    await expect(t.root().info()).resolves.toBeDefined();
  });

  it('drops a partitioned or stopped peer from gossip', async () => {
    t = await startTestSim({ nodes: 3, perNode: (i) => ({ pools: i > 0 ? [{ template: BASE, warm: 2 }] : [] }) });
    const n0 = t.sim.node('node-0');
    await n0.refreshGossip();
    expect(asNodeAtCapacity(await caught(t.root(0).claim({ template: BASE })))?.candidates).toHaveLength(2);
    t.sim.node('node-1').setFaults({ partition: 'hang' });
    await n0.refreshGossip();
    expect(asNodeAtCapacity(await caught(t.root(0).claim({ template: BASE })))?.candidates).toEqual([t.url(2)]);
    await t.sim.stopNode('node-2');
    await n0.refreshGossip();
    await expect(t.root(0).claim({ template: BASE })).resolves.toMatchObject({ nodeUrl: t.url(0) });
    expect(isTransportError(await caught(t.root(2).info()))).toBe(true);
  });
});
