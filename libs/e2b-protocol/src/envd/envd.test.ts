import { PassThrough } from 'node:stream';
import { toJson } from '@bufbuild/protobuf';
import { EntryInfoSchema } from '../gen/filesystem/filesystem_pb';
import { entryInfo, permissionString } from './entry-info';
import { EnvdState, type ProcessOutput } from './envd-state';
import type { GuestChild } from './guest';
import { UnknownUserError, userOf } from './user';

/** A command's pipes and exit, driven by the test. */
function fakeChild(
  pid: number,
): GuestChild & { stdout: PassThrough; stderr: PassThrough; exit: (code: number | null, signal?: string) => void } {
  let exit!: (v: { code: number | null; signal: string | null }) => void;
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  return {
    pid,
    stdout,
    stderr,
    stdin: undefined,
    exited: new Promise((resolve) => (exit = resolve)),
    kill: () => undefined,
    exit: (code, signal) => {
      stdout.end();
      stderr.end();
      exit({ code, signal: signal ?? null });
    },
  };
}

describe('envd messages and state', () => {
  it('describes a file as the EntryInfo the SDKs read, in proto3 JSON', () => {
    expect(permissionString('dir', 0o40755)).toBe('drwxr-xr-x');
    const e = entryInfo({
      name: 'a.txt',
      path: '/home/user/a.txt',
      kind: 'file',
      size: 5,
      mode: 0o100644,
      modifiedTime: new Date('2026-12-07T00:00:00Z'),
      owner: 'user',
      group: 'user',
    });
    expect(toJson(EntryInfoSchema, e)).toEqual({
      name: 'a.txt',
      type: 'FILE_TYPE_FILE',
      path: '/home/user/a.txt',
      size: '5',
      mode: 0o644,
      permissions: '-rw-r--r--',
      owner: 'user',
      group: 'user',
      modifiedTime: '2026-12-07T00:00:00Z',
    });
  });

  it('takes the default user, user and root, and refuses anyone else', () => {
    expect(userOf(undefined)).toBe('user');
    expect(userOf(`Basic ${Buffer.from('root:').toString('base64')}`)).toBe('root');
    expect(userOf(undefined, 'user')).toBe('user');
    expect(() => userOf(`Basic ${Buffer.from('mallory:').toString('base64')}`)).toThrow(UnknownUserError);
    expect(() => userOf('Bearer x')).toThrow(UnknownUserError);
  });

  it("fans a command's output out to every reader, ends each with the exit, and forgets the command", async () => {
    const state = new EnvdState();
    const child = fakeChild(41);
    const p = state.add(child, { cmd: 'x', args: [], envs: {}, cwd: undefined, stdin: false }, 'tag-1');
    const a = p.read();
    child.stdout.write('one');
    const b = p.read();
    child.stderr.write('two');
    child.exit(null, 'SIGKILL');
    const drain = async (r: typeof a): Promise<ProcessOutput[]> => {
      const out: ProcessOutput[] = [];
      for (;;) {
        const o = await r?.next(undefined, new AbortController().signal);
        if (o === undefined || o === 'idle') return out;
        out.push(o);
      }
    };
    const text = (os: ProcessOutput[]) =>
      os.map((o) => (o.kind === 'end' ? `end:${o.exitCode}:${o.status}` : `${o.kind}:${o.data.toString()}`));
    expect(text(await drain(a))).toEqual(['stdout:one', 'stderr:two', 'end:-1:signal: killed']);
    expect(text(await drain(b))).toEqual(['stderr:two', 'end:-1:signal: killed']);
    expect(state.find({ tag: 'tag-1' })).toBeUndefined();
    expect(p.read()).toBeUndefined();
  });

  it('pauses the pipes while a reader is 4 MiB behind, and resumes once it caught up', async () => {
    const state = new EnvdState();
    const child = fakeChild(42);
    const p = state.add(child, { cmd: 'x', args: [], envs: {}, cwd: undefined, stdin: false }, undefined);
    const r = p.read();
    for (let i = 0; i < 5; i++) child.stdout.write(Buffer.alloc(1 << 20));
    await new Promise((resolve) => setImmediate(resolve));
    expect(child.stdout.isPaused()).toBe(true);
    for (let i = 0; i < 5; i++) await r?.next(undefined, new AbortController().signal);
    expect(child.stdout.isPaused()).toBe(false);
    child.exit(0);
  });
});
