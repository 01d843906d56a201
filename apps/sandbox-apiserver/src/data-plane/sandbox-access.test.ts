import { NotFoundError, statusForError } from '@sandbox-scale/scale-core';
import { SandboxdHttpError, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { SandboxLocation } from '../storage/sandbox-storage';
import { SandboxAccess, type SandboxLocator } from './sandbox-access';

/** A node that answers GET /v1/sandboxes/{id} from a table, counting the reads. */
class FakeNode {
  reads = 0;
  tokens = new Map<string, string | undefined>();
  /** Holds the next reads until released, to see concurrent callers share one. */
  gate: Promise<void> | undefined;
  readonly client = {
    sandbox: async (id: string): Promise<{ id: string; token?: string }> => {
      this.reads++;
      await this.gate;
      if (!this.tokens.has(id)) throw new SandboxdHttpError({ operation: 'sandbox', statusCode: 404, message: 'unknown sandbox' });
      const token = this.tokens.get(id);
      return { id, ...(token !== undefined ? { token } : {}) };
    },
  } as unknown as SandboxdClient;
}

function locator(node: FakeNode, rows: Record<string, { node: string; claimId: string; proven?: boolean }>): SandboxLocator {
  return {
    locate: async (namespace: string, name: string): Promise<SandboxLocation> => {
      const row = rows[`${namespace}/${name}`];
      if (row === undefined) throw new NotFoundError({ group: 'agents.x-k8s.io', resource: 'sandboxes' }, name);
      return { proven: true, ...row, object: {} as SandboxLocation['object'] };
    },
    router: { clientFor: () => node.client },
  };
}

const failure = async (p: Promise<unknown>): Promise<{ code: number; message: string }> => {
  try {
    await p;
  } catch (err) {
    return statusForError(err);
  }
  throw new Error('expected a failure');
};

describe('SandboxAccess', () => {
  it('reads the token once per TTL, by node and id, and again after it expires', async () => {
    const node = new FakeNode();
    node.tokens.set('sb_1', 't-one');
    let now = 1_000;
    const access = new SandboxAccess(locator(node, { 'a/x': { node: 'n1', claimId: 'sb_1' } }), { ttlMs: 30_000, now: () => now });
    expect(await access.resolve('a', 'x')).toMatchObject({ id: 'sb_1', token: 't-one', node: 'n1' });
    await access.resolve('a', 'x');
    expect(node.reads).toBe(1);
    now += 30_001;
    await access.resolve('a', 'x');
    expect(node.reads).toBe(2);
  });

  it('shares one read among concurrent callers, and a caller that gives up does not fail the others', async () => {
    const node = new FakeNode();
    node.tokens.set('sb_1', 't-one');
    let release = (): void => undefined;
    node.gate = new Promise((r) => (release = r));
    const access = new SandboxAccess(locator(node, { 'a/x': { node: 'n1', claimId: 'sb_1' } }));
    const impatient = new AbortController();
    const first = access.resolve('a', 'x', impatient.signal);
    const second = access.resolve('a', 'x');
    await new Promise((r) => setImmediate(r));
    impatient.abort(new Error('gave up'));
    await expect(first).rejects.toThrow('gave up');
    release();
    expect((await second).token).toBe('t-one');
    expect(node.reads).toBe(1);
  });

  it('forgets a token on request and on a 404 from its node, which is NotFound for the sandbox', async () => {
    const node = new FakeNode();
    node.tokens.set('sb_1', 't-one');
    const access = new SandboxAccess(locator(node, { 'a/x': { node: 'n1', claimId: 'sb_1' } }));
    await access.resolve('a', 'x');
    access.forget('n1', 'sb_1');
    expect(access.size).toBe(0);
    node.tokens.delete('sb_1');
    expect(await failure(access.resolve('a', 'x'))).toMatchObject({ code: 404, message: expect.stringContaining('"x"') });
    expect(access.size).toBe(0);
  });

  it('refuses a sandbox served without a claim id, and a node that gives no token', async () => {
    const node = new FakeNode();
    node.tokens.set('sb_2', undefined);
    const access = new SandboxAccess(locator(node, { 'a/x': { node: 'n1', claimId: '' }, 'a/y': { node: 'n1', claimId: 'sb_2' } }));
    expect(await failure(access.resolve('a', 'x'))).toMatchObject({ code: 500 });
    expect(await failure(access.resolve('a', 'y'))).toMatchObject({ code: 500 });
    expect(node.reads).toBe(1);
    expect(await failure(access.resolve('a', 'missing'))).toMatchObject({ code: 404 });
  });

  it('refuses with 403 a sandbox whose claim reference this control plane did not write, before asking its node anything', async () => {
    const node = new FakeNode();
    node.tokens.set('sb_9', 'forged-node-token');
    const access = new SandboxAccess(locator(node, { 'team-a/agent-7': { node: 'evil', claimId: 'sb_9', proven: false } }));
    const refused = await failure(access.resolve('team-a', 'agent-7'));
    expect(refused.code).toBe(403);
    expect(refused.message).toContain('node evil reports team-a/agent-7 under a claim reference it did not write');
    expect(node.reads).toBe(0);
  });

  it('holds at most maxEntries tokens, dropping the oldest', async () => {
    const node = new FakeNode();
    const rows: Record<string, { node: string; claimId: string }> = {};
    for (let i = 0; i < 5; i++) {
      node.tokens.set(`sb_${i}`, `t${i}`);
      rows[`a/s${i}`] = { node: 'n1', claimId: `sb_${i}` };
    }
    const access = new SandboxAccess(locator(node, rows), { maxEntries: 3 });
    for (let i = 0; i < 5; i++) await access.resolve('a', `s${i}`);
    expect(access.size).toBe(3);
    await access.resolve('a', 's4');
    expect(node.reads).toBe(5);
    await access.resolve('a', 's0');
    expect(node.reads).toBe(6);
  });
});
