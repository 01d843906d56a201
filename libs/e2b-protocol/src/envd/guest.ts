import type { Readable, Writable } from 'node:stream';
import type { EnvdState } from './envd-state';

/**
 * What envd serves over: one sandbox's processes and files, as the runtime that hosts envd gives
 * them. The services here translate envd's RPCs onto it and own the protocol; the host owns the
 * operating system (where paths resolve, which uid runs a command, what is killed on release).
 */

/** The Connect codes a guest operation fails with; each reaches the SDK as its own error. */
export type GuestErrorCode =
  'not_found' | 'already_exists' | 'invalid_argument' | 'permission_denied' | 'resource_exhausted' | 'failed_precondition';

export class GuestError extends Error {
  override readonly name = 'GuestError';
  constructor(
    readonly code: GuestErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function isGuestError(err: unknown): err is GuestError {
  return err instanceof Error && err.name === 'GuestError';
}

/** What the guest says of one path, before it is an EntryInfo. */
export interface FileFacts {
  name: string;
  /** The guest's absolute path. */
  path: string;
  kind: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  /** Permission bits and the type bits, as stat reports st_mode. */
  mode: number;
  modifiedTime: Date;
  owner: string;
  group: string;
  symlinkTarget?: string;
}

/** A command the guest started, as envd needs it: its pipes, its end, and a way to signal it. */
export interface GuestChild {
  readonly pid: number;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Open only when the caller asked for stdin. */
  readonly stdin: Writable | undefined;
  /** Its exit: a code, or the signal that ended it. Never rejects. */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** Signals the command and everything it started. */
  kill(signal: 'SIGKILL' | 'SIGTERM'): void;
}

export interface StartSpec {
  cmd: string;
  args: readonly string[];
  envs: Readonly<Record<string, string>>;
  /** A guest path; undefined: the user's home. */
  cwd: string | undefined;
  stdin: boolean;
}

/** The guest port envd listens on in e2b's templates, which e2b's SDKs reach. */
export const ENVD_PORT = 49983;

export type WatchEventType = 'create' | 'write' | 'remove' | 'rename' | 'chmod';

export interface EnvdGuest {
  /** Every RPC and request is a use of the sandbox: its idle clock starts over. */
  touch(): void;
  start(spec: StartSpec): Promise<GuestChild>;
  stat(path: string): Promise<FileFacts>;
  /** Entries under `path`, `depth` levels down (1: its children). */
  listDir(path: string, depth: number): Promise<FileFacts[]>;
  /** `mkdir -p`; undefined when the directory existed already. */
  makeDir(path: string): Promise<FileFacts | undefined>;
  move(source: string, destination: string): Promise<FileFacts>;
  remove(path: string): Promise<void>;
  readFile(path: string): Promise<{ stream: Readable; size: number }>;
  writeFile(path: string, data: Buffer): Promise<FileFacts>;
  /** Calls `onEvent` for each change under `path` until the returned function is called. */
  watch(path: string, recursive: boolean, onEvent: (name: string, type: WatchEventType) => void): Promise<() => void>;
  /** The processes and watchers envd keeps for this sandbox (the host keeps one per sandbox). */
  readonly state: EnvdState;
}
