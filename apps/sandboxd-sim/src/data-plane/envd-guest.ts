import type { ChildProcess } from 'node:child_process';
import { watch, type Stats } from 'node:fs';
import { lstat, readdir, readlink, rename, rm, stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { Readable } from 'node:stream';
import {
  DEFAULT_USER,
  GuestError,
  type EnvdGuest,
  type EnvdState,
  type GuestChild,
  type GuestFileFacts,
  type StartSpec,
  type WatchEventType,
} from '@sandbox-scale/e2b-protocol';
import { ApiError } from '../api-error';
import type { SandboxAccess } from './access';
import { isSpawnError, spawnGuest } from './exec-runner';
import { hostCwd } from './exec-route';
import { openRegular, writeAtomic } from './guest-files';
import { ensureDir, isGuestPathError, resolveFollow, resolveName } from './guest-path';
import { signalGroup } from './process-groups';

/** envd's default user's home, inside the sandbox's root. */
const HOME = `/home/${DEFAULT_USER}`;

/** A guest path as envd takes it: absolute, or relative to the user's home. */
const guestPath = (path: string): string => posix.normalize(path.startsWith('/') ? path : `${HOME}/${path}`);

/** A failure of the root's paths or files, as envd's callers read it. */
function guestFault(err: unknown): unknown {
  if (isGuestPathError(err))
    return new GuestError(
      err.problem === 'escape' ? 'permission_denied' : err.problem === 'not_found' ? 'not_found' : 'invalid_argument',
      err.message,
    );
  if (err instanceof ApiError) return new GuestError(err.status === 404 ? 'not_found' : 'invalid_argument', err.message);
  const code = (err as { code?: unknown }).code;
  if (code === 'ENOENT') return new GuestError('not_found', 'no such file or directory');
  if (code === 'EEXIST' || code === 'ENOTEMPTY') return new GuestError('already_exists', 'the destination exists');
  if (code === 'EACCES' || code === 'EPERM') return new GuestError('permission_denied', 'permission denied');
  if (code === 'ENOSPC' || code === 'EDQUOT') return new GuestError('resource_exhausted', 'no space left in the sandbox');
  if (typeof code === 'string' && code.startsWith('E')) return new GuestError('invalid_argument', code);
  return err;
}

async function faulted<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw guestFault(err);
  }
}

function factsOf(path: string, st: Stats, symlinkTarget?: string): GuestFileFacts {
  return {
    name: posix.basename(path),
    path,
    kind: st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other',
    size: st.size,
    mode: st.mode,
    modifiedTime: st.mtime,
    owner: DEFAULT_USER,
    group: DEFAULT_USER,
    ...(symlinkTarget !== undefined ? { symlinkTarget } : {}),
  };
}

/** The command's exit, from its own `exit` event (never rejects). */
function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/**
 * One sandbox's processes and files as envd serves them: commands run in the sandbox's process
 * groups as its uid, paths resolve inside its root (a guest `/home/user` is `<root>/home/user`),
 * and every command is a use of the sandbox until it exits.
 */
export class SimEnvdGuest implements EnvdGuest {
  constructor(
    private readonly access: SandboxAccess,
    readonly state: EnvdState,
  ) {}

  touch(): void {
    this.access.touch();
  }

  async start(spec: StartSpec): Promise<GuestChild> {
    const { sb, dp, root, owner } = this.access;
    const home = await faulted(() => ensureDir(root, HOME, owner));
    const cwd = await faulted(() => hostCwd(root, spec.cwd ?? HOME));
    const release = dp.hold(sb.id);
    let child: ChildProcess;
    try {
      child = await spawnGuest(dp.groups, {
        sandboxId: sb.id,
        argv: [spec.cmd, ...spec.args],
        cwd,
        // the user's own variables first, then the caller's
        env: { HOME: home, USER: DEFAULT_USER, ...spec.envs },
        output: 'pipe',
        stdin: spec.stdin ? 'pipe' : 'ignore',
        owner,
      });
    } catch (err) {
      release();
      throw isSpawnError(err) ? new GuestError('invalid_argument', err.message) : err;
    }
    const exited = exitOf(child);
    void exited.then(release);
    const pid = child.pid ?? 0;
    const { stdout, stderr, stdin } = child;
    if (stdout === null || stderr === null) throw new Error('a piped command without its pipes');
    return {
      pid,
      stdout,
      stderr,
      stdin: stdin ?? undefined,
      exited,
      kill: (signal) => {
        // a frozen group would not see the signal until thawed
        signalGroup(pid, 'SIGCONT');
        signalGroup(pid, signal);
      },
    };
  }

  stat(path: string): Promise<GuestFileFacts> {
    const p = guestPath(path);
    return faulted(async () => {
      const { host } = await resolveName(this.access.root, p);
      const st = await lstat(host);
      return factsOf(p, st, st.isSymbolicLink() ? await readlink(host) : undefined);
    });
  }

  listDir(path: string, depth: number): Promise<GuestFileFacts[]> {
    const p = guestPath(path);
    return faulted(async () => {
      const dir = await resolveFollow(this.access.root, p);
      if (!(await stat(dir)).isDirectory()) throw new GuestError('invalid_argument', `not a directory: ${p}`);
      const out: GuestFileFacts[] = [];
      const walk = async (host: string, guest: string, left: number): Promise<void> => {
        for (const name of (await readdir(host)).sort()) {
          const st = await lstat(join(host, name)).catch(() => undefined);
          if (st === undefined) continue;
          const g = posix.join(guest, name);
          out.push(factsOf(g, st, st.isSymbolicLink() ? await readlink(join(host, name)).catch(() => '') : undefined));
          if (left > 1 && st.isDirectory()) await walk(join(host, name), g, left - 1);
        }
      };
      await walk(dir, p, depth);
      return out;
    });
  }

  async makeDir(path: string): Promise<GuestFileFacts | undefined> {
    const p = guestPath(path);
    const existing = await this.stat(p).catch(() => undefined);
    if (existing !== undefined) return undefined;
    return faulted(async () => factsOf(p, await lstat(await ensureDir(this.access.root, p, this.access.owner))));
  }

  move(source: string, destination: string): Promise<GuestFileFacts> {
    const from = guestPath(source);
    const to = guestPath(destination);
    return faulted(async () => {
      const a = await resolveName(this.access.root, from);
      const b = await resolveName(this.access.root, to);
      if (a.name === '' || b.name === '') throw new GuestError('invalid_argument', 'the sandbox root cannot be moved or replaced');
      await rename(a.host, b.host);
      return factsOf(to, await lstat(b.host));
    });
  }

  remove(path: string): Promise<void> {
    const p = guestPath(path);
    return faulted(async () => {
      const { host, name } = await resolveName(this.access.root, p);
      if (name === '') throw new GuestError('invalid_argument', 'the sandbox root cannot be removed');
      await lstat(host);
      await rm(host, { recursive: true, force: true });
    });
  }

  readFile(path: string): Promise<{ stream: Readable; size: number }> {
    const p = guestPath(path);
    return faulted(async () => {
      const { file, size } = await openRegular(this.access.root, p);
      return { stream: file.createReadStream(), size };
    });
  }

  writeFile(path: string, data: Buffer): Promise<GuestFileFacts> {
    const p = guestPath(path);
    return faulted(async () => {
      await writeAtomic(this.access.root, p, data, this.access.owner);
      return factsOf(p, await lstat((await resolveName(this.access.root, p)).host));
    });
  }

  watch(path: string, recursive: boolean, onEvent: (name: string, type: WatchEventType) => void): Promise<() => void> {
    const p = guestPath(path);
    return faulted(async () => {
      const dir = await resolveFollow(this.access.root, p);
      if (!(await stat(dir)).isDirectory()) throw new GuestError('invalid_argument', `not a directory: ${p}`);
      const w = watch(dir, { recursive, persistent: false });
      // a rename is a name appearing or going: which one is read from the directory itself
      w.on('change', (kind, file) => {
        const name = typeof file === 'string' ? file : (file?.toString('utf8') ?? '');
        // an atomic write's temp file is not the guest's own
        const base = posix.basename(name);
        if (name === '' || (base.startsWith('.') && base.endsWith('.tmp'))) return;
        if (kind === 'change') return onEvent(name, 'write');
        void lstat(join(dir, name)).then(
          () => onEvent(name, 'create'),
          () => onEvent(name, 'remove'),
        );
      });
      w.on('error', () => w.close());
      return () => w.close();
    });
  }
}
