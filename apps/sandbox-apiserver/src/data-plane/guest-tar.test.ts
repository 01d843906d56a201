import {
  encodeTarHeader,
  isArchiveError,
  readTar,
  statusForError,
  TAR_END,
  tarPadding,
  type TarHeaderEntry,
} from '@sandbox-scale/scale-core';
import { AgentError, type AgentEntry, type AgentStat } from '@sandbox-scale/sandboxd-client';
import { agentSignals } from './agent-signals';
import { extractToGuest, tarFromGuest } from './guest-tar';

const SIGNALS = agentSignals(undefined);
import type { AgentSession } from './reach';

interface GuestNode {
  kind: AgentStat['kind'];
  mode: number;
  data?: Buffer;
  /** What stat says, where the file changes size between the stat and the read. */
  statSize?: number;
}

/** A guest's file tree in memory, behind the agent calls guest-tar makes. */
class FakeGuest implements AgentSession {
  readonly nodes = new Map<string, GuestNode>();
  readonly written: string[] = [];
  /** For each stat and list: whether it carried a signal. */
  readonly signalled: boolean[] = [];

  constructor(tree: Record<string, GuestNode>) {
    for (const [path, node] of Object.entries(tree)) this.nodes.set(path, node);
  }

  #node(path: string): GuestNode {
    const node = this.nodes.get(path);
    if (node === undefined) throw new AgentError({ operation: 'fs_stat', kind: 'not_found', message: `${path}: no such file` });
    return node;
  }

  async stat(path: string, opts: { signal?: AbortSignal } = {}): Promise<AgentStat> {
    this.signalled.push(opts.signal !== undefined);
    const n = this.#node(path);
    return { kind: n.kind, size: n.statSize ?? n.data?.length ?? 0, mode: n.mode, mtimeEpochSecs: 1_700_000_000 };
  }

  async list(path: string, opts: { signal?: AbortSignal } = {}): Promise<AgentEntry[]> {
    this.signalled.push(opts.signal !== undefined);
    const prefix = path === '/' ? '/' : `${path}/`;
    return [...this.nodes]
      .filter(([p]) => p.startsWith(prefix) && p !== prefix && !p.slice(prefix.length).includes('/'))
      .map(([p, n]) => ({ name: p.slice(prefix.length), kind: n.kind, size: n.data?.length ?? 0 }));
  }

  async *readFile(path: string): AsyncIterable<Buffer> {
    const data = this.#node(path).data ?? Buffer.alloc(0);
    // in two pieces, as frames arrive
    yield data.subarray(0, 1);
    yield data.subarray(1);
  }

  async writeFile(path: string, data: Buffer | AsyncIterable<Buffer>, opts: { mode?: number } = {}): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of Buffer.isBuffer(data) ? [data] : data) chunks.push(c);
    this.written.push(`${path} ${(opts.mode ?? 0).toString(8)} ${Buffer.concat(chunks).toString()}`);
  }

  async mkdir(path: string): Promise<void> {
    this.nodes.set(path, { kind: 'dir', mode: 0o755 });
  }

  async remove(): Promise<void> {}

  close(): void {}
}

const dir = (mode = 0o755): GuestNode => ({ kind: 'dir', mode });
const file = (data: string, mode = 0o644): GuestNode => ({ kind: 'file', mode, data: Buffer.from(data) });

const GUEST = {
  '/work': dir(),
  '/work/tree': dir(),
  '/work/tree/b.txt': file('B'),
  '/work/tree/a.sh': file('#!', 0o755),
  '/work/tree/sub': dir(0o700),
  '/work/tree/sub/c': file('CC'),
  '/work/tree/link': { kind: 'symlink', mode: 0o777 },
  '/work/tree/fifo': { kind: 'other', mode: 0o644 },
} satisfies Record<string, GuestNode>;

/** Each entry of a tar stream: path, type, mode and content. */
async function listing(tar: AsyncIterable<Buffer>): Promise<string[]> {
  const out: string[] = [];
  for await (const { entry, body } of readTar(tar)) {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(c);
    out.push(`${entry.path} ${entry.type} ${entry.mode.toString(8)} ${Buffer.concat(chunks).toString()}`.trimEnd());
  }
  return out;
}

async function* archive(entries: Array<TarHeaderEntry & { body?: string }>): AsyncGenerator<Buffer> {
  for (const e of entries) {
    yield encodeTarHeader({ ...e, size: Buffer.byteLength(e.body ?? '') });
    if (e.body !== undefined) yield Buffer.concat([Buffer.from(e.body), tarPadding(Buffer.byteLength(e.body))]);
  }
  yield TAR_END;
}
const entry = (path: string, type: TarHeaderEntry['type'], extra: { mode?: number; body?: string; linkname?: string } = {}) => ({
  path,
  type,
  mode: 0o644,
  size: 0,
  mtimeSecs: 0,
  ...extra,
});

describe('tarFromGuest', () => {
  it('names a directory from its parent, its entries in name order with their modes; links and special files are left out', async () => {
    expect(await listing(tarFromGuest(new FakeGuest(GUEST), '/work/tree', SIGNALS))).toEqual([
      'tree dir 755',
      'tree/a.sh file 755 #!',
      'tree/b.txt file 644 B',
      'tree/sub dir 700',
      'tree/sub/c file 644 CC',
    ]);
  });

  it("names the root's contents from the root, and a single file by its base name", async () => {
    const fromRoot = await listing(tarFromGuest(new FakeGuest({ '/': dir(), ...GUEST }), '/', SIGNALS));
    expect(fromRoot.slice(0, 3)).toEqual(['work dir 755', 'work/tree dir 755', 'work/tree/a.sh file 755 #!']);
    expect(await listing(tarFromGuest(new FakeGuest(GUEST), '/work/tree/b.txt', SIGNALS))).toEqual(['b.txt file 644 B']);
  });

  it('holds each file to the size stat gave: one that grew is cut, one that shrank is padded with zeros', async () => {
    const guest = new FakeGuest({
      '/d': dir(),
      '/d/grew': { ...file('ABCDE'), statSize: 3 },
      '/d/shrank': { ...file('A'), statSize: 4 },
      '/d/z': file('after'),
    });
    expect(await listing(tarFromGuest(guest, '/d', SIGNALS))).toEqual([
      'd dir 755',
      'd/grew file 644 ABC',
      'd/shrank file 644 A\0\0\0',
      'd/z file 644 after',
    ]);
  });

  it('pads a file that shrank a lot in slices, and bounds every stat and listing with a signal', async () => {
    const guest = new FakeGuest({ '/d': dir(), '/d/shrank': { ...file('A'), statSize: 1 << 20 } });
    const parts: Buffer[] = [];
    for await (const part of tarFromGuest(guest, '/d', SIGNALS)) parts.push(part);
    expect(Math.max(...parts.map((p) => p.length))).toBeLessThanOrEqual(64 * 1024);
    expect(Buffer.concat(parts).length).toBe(512 + 512 + (1 << 20) + 1024);
    expect(guest.signalled.length).toBeGreaterThanOrEqual(3);
    expect(guest.signalled.every(Boolean)).toBe(true);
  });

  it('refuses to tar a special file with a 400', async () => {
    const err: unknown = await listing(tarFromGuest(new FakeGuest(GUEST), '/work/tree/fifo', SIGNALS)).catch((e: unknown) => e);
    expect(statusForError(err)).toMatchObject({ code: 400, message: expect.stringContaining('neither a file nor a directory') });
  });
});

describe('extractToGuest', () => {
  it('makes the directories and writes the files under the target with their modes; links are skipped', async () => {
    const guest = new FakeGuest({ '/': dir() });
    const result = await extractToGuest(
      guest,
      '/dst',
      archive([
        entry('', 'dir'),
        entry('sub', 'dir'),
        entry('sub/a', 'file', { mode: 0o600, body: 'A' }),
        entry('deep/er/b', 'file', { mode: 0, body: 'B' }),
        entry('l', 'symlink', { linkname: 'sub/a' }),
      ]),
      SIGNALS,
    );
    expect(result).toEqual({ files: 2, dirs: 2, skipped: 1 });
    expect(guest.written).toEqual(['/dst/sub/a 600 A', '/dst/deep/er/b 644 B']);
    expect([...guest.nodes.keys()].sort()).toEqual(['/', '/dst', '/dst/deep/er', '/dst/sub']);
  });

  it.each([
    ['a name with a control character', entry('bad\u0001name', 'file', { body: 'x' }), /control character/],
    ['a file where the target directory goes', entry('.', 'file', { body: 'x' }), /names the target directory itself/],
  ])('stops at %s with a 400, the entries before it written', async (_what, bad, message) => {
    const guest = new FakeGuest({ '/': dir() });
    const err: unknown = await extractToGuest(guest, '/dst', archive([entry('ok', 'file', { body: 'y' }), bad]), SIGNALS).catch(
      (e: unknown) => e,
    );
    expect(statusForError(err)).toMatchObject({ code: 400, message: expect.stringMatching(message) });
    expect(guest.written).toEqual(['/dst/ok 644 y']);
  });

  it('stops at an entry that climbs out of the target, which the tar reader refuses', async () => {
    const guest = new FakeGuest({ '/': dir() });
    const err: unknown = await extractToGuest(guest, '/dst', archive([entry('../escape', 'file', { body: 'x' })]), SIGNALS).catch(
      (e: unknown) => e,
    );
    expect(isArchiveError(err)).toBe(true);
    expect(guest.written).toEqual([]);
  });
});
