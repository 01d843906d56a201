import { asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import { ManualClock } from '../src';
import { caught, startTestSim, type TestSim } from './helpers';

const BASE = 'base:24.04';

describe('leases, idle hibernation and archiving on virtual time', () => {
  let t: TestSim;
  let clock: ManualClock;
  const start = async (opts: Parameters<typeof startTestSim>[0] = {}): Promise<void> => {
    clock = new ManualClock();
    t = await startTestSim({ clock, ...opts });
  };
  afterEach(async () => t.close());

  it('reaps a claim within one 5 s tick after its deadline', async () => {
    await start();
    const c = await t.root().claim({ template: BASE, ttlSeconds: 10 });
    await clock.advance(9_000);
    expect((await t.root().sandboxes()).map((r) => r.id)).toEqual([c.id]);
    await clock.advance(6_000);
    expect(await t.root().sandboxes()).toEqual([]);
    expect(await t.root().metrics()).toContain('sandboxd_reaps_total 1');
    await expect(t.root().release(c.id, { token: c.token })).resolves.toBeUndefined();
  });

  it('reaps a claim without a TTL after the 300 s default', async () => {
    await start();
    await t.root().claim({ template: BASE });
    await clock.advance(295_000);
    expect((await t.root().info()).claimed).toBe(1);
    await clock.advance(10_000);
    expect((await t.root().info()).claimed).toBe(0);
  });

  it('reaps a renewed claim at its new deadline, not the old one', async () => {
    await start();
    const c = await t.root().claim({ template: BASE, ttlSeconds: 10 });
    await clock.advance(5_000);
    await t.root().renew(c.id, 60, { token: c.token });
    await clock.advance(20_000);
    expect((await t.root().info()).claimed).toBe(1);
    await clock.advance(45_000);
    expect((await t.root().info()).claimed).toBe(0);
  });

  it('reaps a hibernated claim at its deadline when archiving is off', async () => {
    await start();
    const c = await t.root().claim({ template: BASE, ttlSeconds: 10 });
    await t.root().hibernate(c.id);
    await clock.advance(15_000);
    expect((await t.root().info()).claimed).toBe(0);
  });

  it('idle-hibernates, archives, then wakes from the archive with a fresh lease', async () => {
    await start({
      pools: [{ template: BASE, warm: 1, idleHibernateSeconds: 10, archiveAfterSeconds: 20, archiveDeleteAfterSeconds: 600 }],
    });
    const c = await t.root().claim({ template: BASE, ttlSeconds: 3600 });
    await clock.advance(10_000);
    expect(await t.root().sandbox(c.id)).toMatchObject({ hibernated: true, archived: false });
    await clock.advance(20_000);
    const archived = await t.root().sandbox(c.id);
    expect(archived).toMatchObject({ hibernated: false, archived: true });
    expect(archived.deadline?.getTime()).toBe(clock.now() + 600_000);
    expect(await t.root().info()).toMatchObject({ claimed: 1, hibernated: 0, archived: 1 });
    expect(asSandboxdHttpError(await caught(t.root().renew(c.id, 60)))).toMatchObject({ statusCode: 409 });
    expect(asSandboxdHttpError(await caught(t.root().fork(c.id, { count: 1 }))))?.toMatchObject({ statusCode: 409 });
    await t.root().wake(c.id, { token: c.token });
    const woken = await t.root().sandbox(c.id);
    expect(woken).toMatchObject({ hibernated: false, archived: false });
    expect(woken.deadline?.getTime()).toBe(clock.now() + 3_600_000);
    const m = await t.root().metrics();
    expect(m).toContain('sandboxd_archives_total 1');
    expect(m).toContain('sandboxd_unarchives_total 1');
  });

  it('archives (not reaps) a hibernated claim at its deadline, then purges it at the archive deadline', async () => {
    await start({
      pools: [{ template: BASE, warm: 1, idleHibernateSeconds: 5, archiveAfterSeconds: 1000, archiveDeleteAfterSeconds: 30 }],
    });
    const c = await t.root().claim({ template: BASE, ttlSeconds: 20 });
    await clock.advance(25_000);
    expect(await t.root().sandbox(c.id)).toMatchObject({ archived: true });
    await clock.advance(35_000);
    expect((await t.root().info()).claimed).toBe(0);
    expect(await t.root().metrics()).toContain('sandboxd_archive_deletes_total 1');
  });

  it('reports an archive kept forever with the zero deadline (no deadline)', async () => {
    await start({ idleHibernateSeconds: 5, archiveAfterSeconds: 10 });
    const c = await t.root().claim({ template: 'unpooled:1', ttlSeconds: 3600 });
    await clock.advance(20_000);
    const row = (await t.root().sandboxes())[0];
    expect(row).toMatchObject({ id: c.id, archived: true, deadline: null });
  });

  it('lists checkpoints newest first', async () => {
    await start();
    const src = await t.root().claim({ template: BASE, ttlSeconds: 3600 });
    const first = await t.root().checkpoint(src.id, { name: 'one' });
    await clock.advance(2_000);
    const second = await t.root().checkpoint(src.id, { name: 'two' });
    expect((await t.root().checkpoints()).map((c) => c.id)).toEqual([second.id, first.id]);
  });

  it('ages checkpoints out after checkpoint_ttl_hours on the hourly sweep', async () => {
    await start({ checkpointTtlHours: 1 });
    const src = await t.root().claim({ template: BASE, ttlSeconds: 86_400 });
    await t.root().checkpoint(src.id);
    await clock.advance(3_600_000);
    expect(await t.root().checkpoints()).toEqual([]);
  });
});
