import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import { GuestUidRangeSchema } from '../src/data-plane/guest-ids';
import { caught, eventually, hasEnded, startDataSim, type DataSim } from './helpers';

const FIRST_UID = 210_000;
const asRoot = process.platform === 'linux' && process.getuid?.() === 0;
// handing out uids needs root; CI runs as root, so there the suite may not skip
if (!asRoot && process.env.CI !== undefined) throw new Error('the guest-uid suite needs root on Linux, and CI runs as root');
const suite = asRoot ? describe : describe.skip;

describe('--guest-uids', () => {
  it('takes <first>-<last> within 1000..2^31-1, and refuses anything else', () => {
    expect(GuestUidRangeSchema.parse('200000-200009')).toEqual({ first: 200_000, count: 10 });
    for (const bad of ['0-10', '999-2000', '5000-4000', '200000', '1-2-3', '-1-5', '2000-3000000000'])
      expect(GuestUidRangeSchema.safeParse(bad).success).toBe(false);
  });
});

suite('guests with uids of their own (--guest-uids)', () => {
  let t: DataSim;
  let secret: string;
  let shared: string;

  beforeAll(async () => {
    // a file of the simulator's own only (the node's root token) and a directory anyone may write (a container's /dev/shm)
    const host = mkdtempSync(join(tmpdir(), 'sim-guest-host-'));
    chmodSync(host, 0o755);
    secret = join(host, 'api-token');
    writeFileSync(secret, 'node-root-token', { mode: 0o400 });
    shared = join(host, 'shm');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    t = await startDataSim({ guestUids: { first: FIRST_UID, count: 1000 }, closedDirs: [shared] });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(join(secret, '..'), { recursive: true, force: true });
  });

  const sh = (sb: { id: string; token: string }, script: string) => t.root().exec(sb.id, sb.token, { argv: ['sh', '-c', script] });

  it('runs each sandbox as a uid of its own, with no supplementary groups', async () => {
    const a = await t.claim();
    const b = await t.claim();
    const ida = await sh(a, 'id -u; id -G');
    const idb = await sh(b, 'id -u; id -G');
    const [uidA, groupsA] = ida.stdout.trim().split('\n');
    const [uidB] = idb.stdout.trim().split('\n');
    expect(Number(uidA)).toBeGreaterThanOrEqual(FIRST_UID);
    expect(groupsA).toBe(uidA);
    expect(uidB).not.toBe(uidA);
    expect(statSync(t.rootOf(a.id))).toMatchObject({ uid: Number(uidA), mode: 0o40700 });
  });

  it("cannot read the simulator's root token, nor write outside its root", async () => {
    const a = await t.claim();
    const b = await t.claim();
    await sh(b, 'echo mine > own.txt');
    const r = await sh(
      a,
      [
        `cat ${secret} && echo READ-TOKEN`,
        `touch ${t.dataDir}/x && echo WROTE-DATA-DIR`,
        `touch ${t.dataDir}/node-0/sandboxes/x && echo WROTE-SANDBOXES`,
        `cat ${t.rootOf(b.id)}/own.txt && echo READ-OTHER`,
        `touch ${t.rootOf(b.id)}/x && echo WROTE-OTHER`,
        `touch ${shared}/x && echo WROTE-SHARED`,
        'touch mine.txt && echo WROTE-OWN',
      ].join('; '),
    );
    expect(r.stdout.trim()).toBe('WROTE-OWN');
    expect(r.stderr).toContain('Permission denied');
    expect(r.stdout).not.toContain('node-root-token');
  });

  it('owns the files and directories written for it, so its commands can change them', async () => {
    const sb = await t.claim();
    const agent = await t.root().openAgent(sb.id, sb.token);
    try {
      await agent.writeFile('/deep/dir/f.txt', Buffer.from('one\n'), { mode: 0o644 });
      await agent.mkdir('/made');
    } finally {
      agent.close();
    }
    const r = await sh(
      sb,
      'echo two >> deep/dir/f.txt && touch made/x deep/y && cat deep/dir/f.txt && stat -c %u deep deep/dir deep/dir/f.txt made',
    );
    const [one, two, ...owners] = r.stdout.trim().split('\n');
    expect([one, two]).toEqual(['one', 'two']);
    const uid = (await sh(sb, 'id -u')).stdout.trim();
    expect(owners).toEqual([uid, uid, uid, uid]);
  });

  it("gives fork children their parent's files, owned by each child's own uid", async () => {
    const parent = await t.claim();
    await sh(parent, 'mkdir -p work && echo print > work/main.py');
    const children = await t.root().fork(parent.id, { count: 2 });
    const uids = new Set<string>();
    for (const child of children) {
      const r = await sh(child, 'id -u; stat -c %u work work/main.py; echo more >> work/main.py && echo CHANGED');
      const [uid, ...rest] = r.stdout.trim().split('\n');
      expect(rest).toEqual([uid, uid, 'CHANGED']);
      uids.add(uid ?? '');
    }
    expect(uids.size).toBe(2);
  });

  it("relays a port by the uid that listens: another sandbox's listener is refused, its own reached even outside its process groups", async () => {
    const owner = await t.claim();
    const other = await t.claim();
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    probe.close();
    // setsid: the server leaves the command's process group, and is still the sandbox's by its uid
    const agent = await t.root().openAgent(owner.id, owner.token);
    await agent.exec({
      argv: ['setsid', 'node', '-e', `require('net').createServer((s) => s.end('owner')).listen(${port}, '127.0.0.1')`],
      detach: true,
    });
    agent.close();
    let reached = '';
    await eventually(async () => {
      const socket = await t
        .root()
        .openPort(owner.id, owner.token, port)
        .catch(() => undefined);
      if (socket === undefined) return false;
      reached = await new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (d: Buffer) => (text += d.toString()));
        socket.on('close', () => resolve(text));
      });
      return true;
    });
    expect(reached).toBe('owner');
    const refused = await caught(t.root().openPort(other.id, other.token, port));
    expect(asSandboxdHttpError(refused)?.statusCode).toBe(502);
  });

  it('kills on release whatever still runs as the sandbox, in its process groups or not', async () => {
    const sb = await t.claim();
    const agent = await t.root().openAgent(sb.id, sb.token);
    await agent.exec({ argv: ['sh', '-c', 'setsid sleep 600 & echo $! > pid; wait'], detach: true });
    agent.close();
    let pid = 0;
    await eventually(async () => {
      pid = Number((await sh(sb, 'cat pid 2>/dev/null || echo 0')).stdout.trim());
      return pid > 0;
    });
    expect(hasEnded(pid)).toBe(false);
    await t.root().release(sb.id, { token: sb.token });
    await eventually(() => hasEnded(pid), 10_000);
  });
});
