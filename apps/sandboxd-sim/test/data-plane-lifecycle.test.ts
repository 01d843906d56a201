import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asSandboxdHttpError, SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { ManualClock } from '../src';
import { caught, eventually, hasEnded, procState, raw, startDataSim, startTestSim, type DataSim } from './helpers';

const statusOf = (err: unknown): number | undefined => asSandboxdHttpError(err)?.statusCode;

async function readText(t: DataSim, sb: { id: string; token: string }, path: string): Promise<string> {
  const agent = await t.root().openAgent(sb.id, sb.token);
  try {
    const chunks: Buffer[] = [];
    for await (const c of agent.readFile(path)) chunks.push(c);
    return Buffer.concat(chunks).toString();
  } finally {
    agent.close();
  }
}

async function writeText(t: DataSim, sb: { id: string; token: string }, path: string, text: string): Promise<void> {
  const agent = await t.root().openAgent(sb.id, sb.token);
  try {
    await agent.writeFile(path, Buffer.from(text));
  } finally {
    agent.close();
  }
}

/** Starts `sleep 1000` detached through the agent and returns its pid. */
async function detachedSleep(t: DataSim, sb: { id: string; token: string }): Promise<number> {
  const agent = await t.root().openAgent(sb.id, sb.token);
  try {
    return (await agent.exec({ argv: ['sleep', '1000'], detach: true })).pid;
  } finally {
    agent.close();
  }
}

describe('the data plane through the lifecycle', () => {
  let t: DataSim;
  beforeAll(async () => {
    t = await startDataSim();
  });
  afterAll(() => t.close());

  it('creates no directory for warm or untouched claims, and one on first use', async () => {
    const sandboxes = join(t.dataDir, 'node-0', 'sandboxes');
    expect(readdirSync(sandboxes)).toEqual([]);
    const sb = await t.claim();
    expect(readdirSync(sandboxes)).toEqual([]);
    await t.root().exec(sb.id, sb.token, { argv: ['true'] });
    expect(readdirSync(sandboxes)).toEqual([sb.id]);
    await t.root().release(sb.id, { token: sb.token });
  });

  it("gives each fork child a copy of the parent's files", async () => {
    const parent = await t.claim();
    await writeText(t, parent, '/work/main.py', 'print(1)\n');
    const children = await t.root().fork(parent.id, { count: 2 });
    for (const child of children) expect(await readText(t, child, '/work/main.py')).toBe('print(1)\n');
    // copies, not shared: a child's change stays its own
    await writeText(t, children[0] ?? parent, '/work/main.py', 'changed\n');
    expect(await readText(t, parent, '/work/main.py')).toBe('print(1)\n');
  });

  it('starts a claim from a checkpoint with the files the sandbox had then', async () => {
    const sb = await t.claim();
    await writeText(t, sb, '/state.txt', 'at checkpoint');
    const ck = await t.root().checkpoint(sb.id);
    await writeText(t, sb, '/state.txt', 'after checkpoint');
    const branch = await t.root().claimCheckpoint(ck.id);
    expect(await readText(t, branch, '/state.txt')).toBe('at checkpoint');
    await t.root().deleteCheckpoint(ck.id);
    await eventually(() => !existsSync(join(t.dataDir, 'node-0', 'checkpoints', ck.id)));
  });

  it('removes the root on release and kills what still runs, detached or in a running exec', async () => {
    const sb = await t.claim();
    const detached = await detachedSleep(t, sb);
    const longExec = caught(
      t.root().exec(sb.id, sb.token, { argv: ['sh', '-c', 'echo $$ > exec.pid.tmp; mv exec.pid.tmp exec.pid; exec sleep 1000'] }),
    );
    const pidFile = join(t.rootOf(sb.id), 'exec.pid');
    await eventually(() => existsSync(pidFile));
    const running = Number(readFileSync(pidFile, 'utf8'));
    expect(hasEnded(detached)).toBe(false);
    expect(hasEnded(running)).toBe(false);
    await t.root().release(sb.id, { token: sb.token });
    expect(existsSync(t.rootOf(sb.id))).toBe(false);
    await eventually(() => hasEnded(detached) && hasEnded(running));
    expect(statusOf(await longExec)).toBe(404);
  });

  it('stops the processes on hibernate (state T) and resumes them on wake', async () => {
    const sb = await t.claim();
    const pid = await detachedSleep(t, sb);
    await eventually(() => procState(pid) === 'S');
    await t.root().hibernate(sb.id, { token: sb.token });
    await eventually(() => procState(pid) === 'T');
    await t.root().wake(sb.id, { token: sb.token });
    await eventually(() => procState(pid) === 'S');
  });

  it('wakes a hibernated sandbox on exec, resuming its processes', async () => {
    const sb = await t.claim();
    const pid = await detachedSleep(t, sb);
    await t.root().hibernate(sb.id, { token: sb.token });
    await eventually(() => procState(pid) === 'T');
    await expect(t.root().exec(sb.id, sb.token, { argv: ['echo', 'awake'] })).resolves.toMatchObject({ stdout: 'awake\n' });
    expect((await t.root().sandbox(sb.id)).hibernated).toBe(false);
    await eventually(() => procState(pid) === 'S');
  });
});

describe('lease expiry', () => {
  it('releases as release does: root removed, processes killed', async () => {
    const clock = new ManualClock();
    const t = await startDataSim({ clock });
    try {
      const c = await t.root().claim({ template: 'base:24.04', ttlSeconds: 60 });
      const sb = { id: c.id, token: c.token };
      const pid = await detachedSleep(t, sb);
      expect(existsSync(t.rootOf(sb.id))).toBe(true);
      await clock.advance(61_000);
      t.sim.node('node-0').tick();
      await eventually(() => !existsSync(t.rootOf(sb.id)) && hasEnded(pid));
    } finally {
      await t.close();
    }
  });
});

describe('--data-plane=off', () => {
  it('answers 501 on every data-plane endpoint and creates nothing on disk', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'sim-off-'));
    const dataDir = join(parent, 'data');
    const t = await startTestSim({ dataDir, pools: [{ template: 'base:24.04', warm: 1 }] });
    try {
      const c = await t.root().claim({ template: 'base:24.04' });
      const client: SandboxdClient = t.root();
      const disabled = 'data plane disabled on this node (--data-plane=off)';
      for (const call of [
        client.exec(c.id, c.token, { argv: ['true'] }),
        client.openAgent(c.id, c.token),
        client.openPort(c.id, c.token, 8888),
      ]) {
        const err = await caught(call);
        expect(statusOf(err)).toBe(501);
        expect(asSandboxdHttpError(err)?.message).toBe(disabled);
      }
      const bare = await raw(t.url(), 'GET', `/v1/sandboxes/${c.id}/ports/8888`, { token: c.token });
      expect(bare.status).toBe(501);
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      await t.close();
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
