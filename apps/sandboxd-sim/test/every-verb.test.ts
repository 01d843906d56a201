import { asSandboxdHttpError, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { FaultsSchema, VERBS, type Verb } from '../src';
import { caught, ROOT, startTestSim, type TestSim } from './helpers';

const BASE = 'base:24.04';

type Call = (c: SandboxdClient, ids: { sb: string; ck: string }) => Promise<unknown>;

/** One client call per fault verb, each reaching the route the verb names. */
const CALLS: Record<Verb, Call> = {
  claim: (c) => c.claim({ template: BASE }),
  release: (c, { sb }) => c.release(sb),
  hibernate: (c, { sb }) => c.hibernate(sb),
  wake: (c, { sb }) => c.wake(sb),
  renew: (c, { sb }) => c.renew(sb, 60),
  fork: (c, { sb }) => c.fork(sb, { count: 1 }),
  promote: (c, { sb }) => c.promote(sb, { template: 'p:1' }),
  delete_template: (c) => c.deleteTemplate({ template: 'p:1' }),
  checkpoint: (c, { sb }) => c.checkpoint(sb),
  checkpoint_claim: (c, { ck }) => c.claimCheckpoint(ck),
  checkpoints: (c) => c.checkpoints(),
  delete_checkpoint: (c, { ck }) => c.deleteCheckpoint(ck),
  sandboxes: (c) => c.sandboxes(),
  sandbox: (c, { sb }) => c.sandbox(sb),
  stats: (c, { sb }) => c.stats(sb),
  owner: (c, { sb }) => c.owner(sb),
  info: (c) => c.info(),
  peers: (c) => c.peers(),
  pools: (c) => c.setPools([{ template: BASE, warm: 2 }]),
  drain: (c) => c.drain(),
  metrics: (c) => c.metrics(),
  exec: (c, { sb }) => c.exec(sb, ROOT, { argv: ['true'] }),
  agent: async (c, { sb }) => (await c.openAgent(sb, ROOT)).close(),
  ports: async (c, { sb }) => (await c.openPort(sb, ROOT, 8888)).destroy(),
};

describe('every verb', () => {
  let t: TestSim;
  let ids: { sb: string; ck: string };
  beforeAll(async () => {
    t = await startTestSim({ dataPlane: true, pools: [{ template: BASE, warm: 2 }] });
    const sb = await t.root().claim({ template: BASE });
    const ck = await t.root().checkpoint(sb.id);
    ids = { sb: sb.id, ck: ck.id };
  });
  afterAll(async () => t.close());
  afterEach(() => t.sim.node('node-0').clearFaults());

  it.each(VERBS.map((v) => [v]))('%s: an injected failure surfaces as SandboxdHttpError 500 with the daemon text', async (verb) => {
    const faults = FaultsSchema.parse({ errorRate: { [verb]: 1 } });
    t.sim.node('node-0').setFaults(faults);
    const err = asSandboxdHttpError(await caught(CALLS[verb](t.root(), ids)));
    expect(err?.statusCode).toBe(500);
    expect(err?.message).toMatch(/failed$/);
  });

  it.each(VERBS.map((v) => [v]))('%s: succeeds once the fault is lifted', async (verb) => {
    // fresh objects, since earlier verbs released, promoted or drained
    await t.root().undrain();
    const sb = await t.root().claim({ template: BASE });
    const fresh = { sb: sb.id, ck: (await t.root().checkpoint(sb.id)).id };
    if (verb === 'delete_template') await t.root().promote(sb.id, { template: 'p:1' });
    await expect(CALLS[verb](t.root(), fresh)).resolves.not.toBeInstanceOf(Error);
  });
});
