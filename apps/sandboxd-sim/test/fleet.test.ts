import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { nodeToken } from '@sandbox-scale/sandboxd-client';
import { startSim } from '../src';
import { ROOT, raw, startTestSim, type TestSim } from './helpers';

describe('many nodes in one process', () => {
  let t: TestSim;
  afterEach(async () => t.close());

  it('gives every node its own port and its own state', async () => {
    t = await startTestSim({ nodes: 40, mesh: false });
    expect(new Set(t.sim.nodes.map((n) => n.port)).size).toBe(40);
    expect(t.sim.nodes[7]).toMatchObject({ name: 'node-7', token: ROOT, addr: `127.0.0.1:${t.sim.nodes[7]?.port}` });
    await t.root(3).claim({ template: 'base:24.04' });
    expect((await t.root(3).info()).claimed).toBe(1);
    expect((await t.root(4).info()).claimed).toBe(0);
    expect(await t.root(3).peers()).toEqual([]);
  });

  it('lists every other node of the process as a peer on a mesh', async () => {
    t = await startTestSim({ nodes: 3 });
    expect((await t.root(0).peers()).sort()).toEqual([t.sim.nodes[1]?.addr, t.sim.nodes[2]?.addr].sort());
    expect((await t.root(0).info()).peers).toHaveLength(2);
  });

  it('gives each node a root token of its own, derived from the key and its name, with a node token key', async () => {
    t = await startTestSim({ nodes: 2, nodeTokenKey: 'fleet-key' });
    const [a, b] = t.sim.nodes;
    expect(a?.token).toBe(nodeToken('fleet-key', 'node-0'));
    expect(b?.token).toBe(nodeToken('fleet-key', 'node-1'));
    expect((await raw(a?.url ?? '', 'GET', '/v1/info', { token: a?.token ?? '' })).status).toBe(200);
    // neither another node's token, nor the key, nor the shared root token is root here
    for (const token of [b?.token ?? '', 'fleet-key', ROOT])
      expect({ token: token.slice(0, 6), status: (await raw(a?.url ?? '', 'GET', '/v1/info', { token })).status }).toEqual({
        token: token.slice(0, 6),
        status: 401,
      });
  });

  it('names nodes with a run-specific prefix', async () => {
    t = await startTestSim({ nodes: 2, namePrefix: 'sim-abc-' });
    expect(t.sim.nodes.map((n) => n.name)).toEqual(['sim-abc-0', 'sim-abc-1']);
    expect(() => t.sim.node('node-0')).toThrow(/no simulated node/);
  });
});

describe('peers outside the process (by flag)', () => {
  it('redirects to a peer of another simulator, learnt from its GET /v1/info', async () => {
    const far = await startTestSim({ pools: [{ template: 'base:24.04', warm: 2 }] });
    const near = await startTestSim({ peers: [far.sim.nodes[0]?.addr ?? ''] });
    try {
      await near.sim.node('node-0').refreshGossip();
      expect(await near.root().peers()).toEqual([far.sim.nodes[0]?.addr]);
      const c = await near.root().claim({ template: 'base:24.04' }, { followRedirects: true });
      expect(c.nodeUrl).toBe(far.url());
      const ck = await far.root().checkpoint(c.id);
      const branch = await near.root().claimCheckpoint(ck.id, {}, { followRedirects: true });
      expect(branch).toMatchObject({ nodeUrl: far.url(), fromCheckpoint: ck.id });
    } finally {
      await near.close();
      await far.close();
    }
  });
});

describe('fixed ports', () => {
  it('listens on consecutive ports from --base-port', async () => {
    // below the kernel's ephemeral range (32768+), where every port-0 listener of a busy
    // machine lands; a port another test holds is still possible, so a taken base is redrawn
    let base = 0;
    let sim: Awaited<ReturnType<typeof startSim>> | undefined;
    for (let attempt = 0; sim === undefined; attempt++) {
      base = 10_000 + Math.floor(Math.random() * 20_000);
      sim = await startSim({ nodes: 3, basePort: base, speed: 0 }).catch((err: unknown) => {
        if (attempt < 5 && err instanceof Error && 'code' in err && err.code === 'EADDRINUSE') return undefined;
        throw err;
      });
    }
    try {
      expect(sim.nodes.map((n) => n.port)).toEqual([base, base + 1, base + 2]);
      expect((await raw(sim.nodes[2]?.url ?? '', 'GET', '/healthz')).text).toBe('ok');
    } finally {
      await sim.stop();
    }
  });
});

const ReportSchema = z.object({ nodes: z.array(z.object({ name: z.string(), url: z.string(), port: z.number(), addr: z.string() })) });

describe('the CLI', () => {
  it('reports its ports as JSON on stdout, serves, and stops on SIGTERM', async () => {
    const main = resolve(__dirname, '../src/main.ts');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', main, '--nodes', '2', '--base-port', '0', '--speed', '0', '--token', 'cli-root'],
      {
        cwd: resolve(__dirname, '../../..'),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const line = await new Promise<string>((res, rej) => {
        createInterface({ input: child.stdout }).once('line', res);
        child.once('exit', (code) => rej(new Error(`exited ${code}`)));
      });
      const report = ReportSchema.parse(JSON.parse(line));
      expect(report.nodes).toHaveLength(2);
      const url = report.nodes[1]?.url ?? '';
      expect((await raw(url, 'GET', '/v1/info')).status).toBe(401);
      expect((await raw(url, 'GET', '/v1/info', { token: 'cli-root' })).status).toBe(200);
    } finally {
      const exited = new Promise((res) => child.once('exit', res));
      child.kill('SIGTERM');
      await exited;
    }
  }, 30_000);

  it('prints --help and exits 0; a bad flag exits 2 naming it', async () => {
    const main = resolve(__dirname, '../src/main.ts');
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((res) => {
        const c = spawn(process.execPath, ['--import', 'tsx', main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        c.stdout.on('data', (d: Buffer) => (out += d.toString()));
        c.stderr.on('data', (d: Buffer) => (err += d.toString()));
        c.once('exit', (code) => res({ code, out, err }));
      });
    const [help, bad] = await Promise.all([run(['--help']), run(['--nodes', '401'])]);
    expect(help.code).toBe(0);
    expect(help.out).toContain('--base-port');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--nodes');
  }, 30_000);
});
