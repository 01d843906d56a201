import { deleteSandbox } from '../src/storage/delete-sandbox';
import { MAX_FORK_COUNT, type LifecycleStorage } from '../src/storage/lifecycle-storage';
import type { SandboxStorage } from '../src/storage/sandbox-storage';
import { startStorageFleet, statusOf, type StorageFleet } from './fleet-fixture';

const NS = 'team-a';

let fleet: StorageFleet;

beforeAll(async () => {
  fleet = await startStorageFleet({ token: 'unit-fleet-token', template: 'registry.local/guard:1', warm: 4 });
});

afterAll(async () => {
  await fleet?.stop();
});

async function setup(name: string): Promise<{ lifecycle: LifecycleStorage; storage: SandboxStorage; id: string }> {
  const { lifecycle, storage, ids } = await fleet.storageWith(NS, [name]);
  return { lifecycle, storage, id: ids[0] ?? '' };
}

const live = async (id: string): Promise<boolean> => (await fleet.direct.sandboxes()).some((s) => s.id === id);

describe('delete preconditions', () => {
  it('refuses a delete whose resourceVersion or uid is not the object one with 409, releasing nothing', async () => {
    const { storage, id } = await setup('keep-me');
    const obj = await storage.get(NS, 'keep-me');
    const rv = obj.metadata.resourceVersion ?? '';
    const stale = await statusOf(
      deleteSandbox(storage, NS, 'keep-me', {
        dryRun: false,
        body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { resourceVersion: `${rv}9` } },
      }),
    );
    expect(stale).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(stale.message).toContain(`ResourceVersion in precondition: ${rv}9`);
    expect(
      await statusOf(deleteSandbox(storage, NS, 'keep-me', { dryRun: false, body: { preconditions: { uid: 'not-the-uid' } } })),
    ).toMatchObject({ code: 409 });
    expect(await live(id)).toBe(true);
    await deleteSandbox(storage, NS, 'keep-me', { dryRun: false, body: { preconditions: { resourceVersion: rv, uid: obj.metadata.uid } } });
    expect(await live(id)).toBe(false);
  });

  it('answers a body that is not DeleteOptions with 400, not 500', async () => {
    const { storage } = await setup('odd-body');
    expect(await statusOf(deleteSandbox(storage, NS, 'odd-body', { dryRun: false, body: { preconditions: { uid: 7 } } }))).toMatchObject({
      code: 400,
      reason: 'BadRequest',
    });
    expect(await statusOf(deleteSandbox(storage, NS, 'odd-body', { dryRun: false, body: [1, 2] }))).toMatchObject({ code: 400 });
  });
});

describe('fork count', () => {
  it('refuses more children than the node fork limit with 422 naming count, before any node call', async () => {
    const { lifecycle } = await setup('parent');
    const before = (await fleet.direct.sandboxes()).length;
    const s = await statusOf(lifecycle.act(NS, 'parent', 'fork', { kind: 'SandboxForkOptions', count: 1_000_000 }, false));
    expect(s).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(s.details?.causes).toEqual([expect.objectContaining({ field: 'count' })]);
    expect(s.message).toContain(`at most ${MAX_FORK_COUNT}`);
    expect((await fleet.direct.sandboxes()).length).toBe(before);
  });
});
