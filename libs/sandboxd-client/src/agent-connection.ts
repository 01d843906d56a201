import type { Socket } from 'node:net';
import { isPrototypeKeyError, parseUntrustedJson } from '@sandbox-scale/scale-core';
import { LineReader, writeFrame } from './agent-frames';
import {
  AGENT_CHUNK_BYTES,
  AgentReplySchema,
  type AgentEntry,
  type AgentReply,
  type AgentRequestInput,
  type AgentStat,
} from './data-plane';
import { AgentError, AgentProtocolError, ReplyTooLargeError } from './errors';

export interface AgentCallOptions {
  /** Aborting a transfer closes the connection (the protocol has no cancel): open another for what follows. */
  signal?: AbortSignal;
}

/** A directory listing the caller keeps whole: its entries and their names' bytes are bounded. */
export interface AgentListOptions extends AgentCallOptions {
  /** Default AGENT_LIST_MAX_ENTRIES. */
  maxEntries?: number;
  /** The names of all entries together, in UTF-8 bytes; default AGENT_LIST_MAX_NAME_BYTES. */
  maxNameBytes?: number;
}

/** The most entries one listing keeps: a guest's directory of millions is refused, not held. */
export const AGENT_LIST_MAX_ENTRIES = 100_000;
/** The most bytes of names one listing keeps. */
export const AGENT_LIST_MAX_NAME_BYTES = 16 << 20;

export interface AgentWriteOptions extends AgentCallOptions {
  /** Permission bits of a new file (an overwritten file keeps its own). */
  mode?: number;
}

export interface AgentExecRequest {
  argv: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Leave the command running and answer once it started (`exitCode` is then -1). */
  detach?: boolean;
}

export interface AgentExecResult {
  pid: number;
  /** -1 when the command was killed or its status is unknown (and for a detached command). */
  exitCode: number;
}

export type AgentOutputStream = 'stdout' | 'stderr';

type Terminal = Extract<AgentReply, { type: 'done' | 'exit' | 'error' }>;
const isTerminal = (f: AgentReply): f is Terminal => f.type === 'done' || f.type === 'exit' || f.type === 'error';

/**
 * One connection to a sandbox's guest agent: newline-delimited JSON RPCs, one after another.
 * Calls are queued, so concurrent callers are safe; each waits for the ones before it.
 * An `error` frame is an AgentError and leaves the connection usable; a protocol failure or a
 * closed socket is an AgentProtocolError and ends it.
 */
export class AgentConnection {
  readonly #socket: Socket;
  readonly #reader: LineReader;
  #tail: Promise<void> = Promise.resolve();

  constructor(socket: Socket) {
    this.#socket = socket;
    this.#reader = new LineReader(socket);
  }

  /** Whether the connection has ended (closed, failed or aborted). */
  get closed(): boolean {
    return this.#reader.ended;
  }

  /** The file's bytes as they arrive; breaking out early drains the rest so the connection stays usable. */
  async *readFile(path: string, opts: AgentCallOptions = {}): AsyncIterable<Buffer> {
    const release = await this.#acquire();
    const unbind = this.#bind(opts.signal);
    let ended = false;
    try {
      await this.#send({ op: 'fs_read', path });
      for (;;) {
        const f = await this.#next();
        if (f.type === 'data') yield Buffer.from(f.data, 'base64');
        else {
          ended = true;
          this.#endOf('fs_read', f, 'done');
          return;
        }
      }
    } finally {
      if (!ended) await this.#drain();
      unbind();
      release();
    }
  }

  /** Written atomically by the guest (temp file and rename), in 256 KiB data frames. */
  async writeFile(path: string, data: Buffer | AsyncIterable<Buffer>, opts: AgentWriteOptions = {}): Promise<void> {
    await this.#rpc(opts.signal, async () => {
      await this.#send({ op: 'fs_write', path, ...(opts.mode !== undefined ? { mode: opts.mode } : {}) });
      for await (const chunk of chunksOf(data)) await writeFrame(this.#socket, { type: 'data', data: chunk.toString('base64') });
      await writeFrame(this.#socket, { type: 'data_end' });
      this.#endOf('fs_write', await this.#next(), 'done');
    });
  }

  /**
   * The directory's entries. A guest that answers more than `maxEntries` entries, or names longer
   * than `maxNameBytes` together, gets a ReplyTooLargeError and the connection ends (the rest of
   * its answer is never read).
   */
  async list(path: string, opts: AgentListOptions = {}): Promise<AgentEntry[]> {
    const maxEntries = opts.maxEntries ?? AGENT_LIST_MAX_ENTRIES;
    const maxNameBytes = opts.maxNameBytes ?? AGENT_LIST_MAX_NAME_BYTES;
    return this.#rpc(opts.signal, async () => {
      await this.#send({ op: 'fs_list', path });
      const entries: AgentEntry[] = [];
      let nameBytes = 0;
      for (let f = await this.#next(); ; f = await this.#next()) {
        if (f.type !== 'entries') {
          this.#endOf('fs_list', f, 'done');
          return entries;
        }
        for (const e of f.entries) {
          nameBytes += Buffer.byteLength(e.name);
          if (entries.length >= maxEntries || nameBytes > maxNameBytes) {
            const err = new ReplyTooLargeError({
              operation: `fs_list ${path}`,
              limitBytes: maxNameBytes,
              detail: `more than ${maxEntries} entries or ${maxNameBytes} bytes of names`,
            });
            this.#reader.fail(err);
            throw err;
          }
          entries.push(e);
        }
      }
    });
  }

  async stat(path: string, opts: AgentCallOptions = {}): Promise<AgentStat> {
    return this.#rpc(opts.signal, async () => {
      await this.#send({ op: 'fs_stat', path });
      const f = await this.#next();
      if (f.type !== 'stat') {
        this.#endOf('fs_stat', f, 'stat');
        throw this.#unexpected('fs_stat', f);
      }
      this.#endOf('fs_stat', await this.#next(), 'done');
      return f.info;
    });
  }

  async mkdir(path: string, opts: AgentCallOptions & { parents?: boolean } = {}): Promise<void> {
    await this.#simple({ op: 'fs_mkdir', path, parents: opts.parents ?? false }, opts.signal);
  }

  async remove(path: string, opts: AgentCallOptions & { recursive?: boolean } = {}): Promise<void> {
    await this.#simple({ op: 'fs_rm', path, recursive: opts.recursive ?? false }, opts.signal);
  }

  async rename(from: string, to: string, opts: AgentCallOptions = {}): Promise<void> {
    await this.#simple({ op: 'fs_rename', from, to }, opts.signal);
  }

  /** Streams the command's output to `onOutput` and resolves at its exit. */
  async exec(
    req: AgentExecRequest,
    onOutput?: (stream: AgentOutputStream, data: Buffer) => void,
    opts: AgentCallOptions = {},
  ): Promise<AgentExecResult> {
    return this.#rpc(opts.signal, async () => {
      await this.#send({ op: 'exec', ...req });
      let pid = -1;
      for (;;) {
        const f = await this.#next();
        if (f.type === 'started') pid = f.pid;
        else if (f.type === 'stdout' || f.type === 'stderr') onOutput?.(f.type, Buffer.from(f.data, 'base64'));
        else if (f.type === 'exit') return { pid, exitCode: f.code };
        else {
          this.#endOf('exec', f, 'done');
          return { pid, exitCode: -1 };
        }
      }
    });
  }

  /** Ends the socket; queued and running calls fail with AgentProtocolError. */
  close(): void {
    this.#reader.fail(new AgentProtocolError({ operation: 'agent', detail: 'connection closed by the caller' }));
  }

  async #simple(frame: AgentRequestInput, signal: AbortSignal | undefined): Promise<void> {
    await this.#rpc(signal, async () => {
      await this.#send(frame);
      this.#endOf(frame.op, await this.#next(), 'done');
    });
  }

  async #rpc<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    const release = await this.#acquire();
    const unbind = this.#bind(signal);
    try {
      return await fn();
    } catch (err) {
      // An abort or a failed connection surfaces as its cause, not as the write that noticed it.
      if (err instanceof AgentError) throw err;
      throw this.#reader.failure ?? err;
    } finally {
      unbind();
      release();
    }
  }

  /** Waits for the calls queued before this one; the returned function lets the next one go. */
  async #acquire(): Promise<() => void> {
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const before = this.#tail;
    this.#tail = before.then(() => mine);
    await before;
    if (this.#reader.ended) {
      release();
      throw this.#reader.failure ?? closedError();
    }
    return release;
  }

  /** An abort fails the connection with the signal's reason, which ends the call waiting on it. */
  #bind(signal: AbortSignal | undefined): () => void {
    if (signal === undefined) return () => undefined;
    const onAbort = (): void => this.#reader.fail(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  }

  #send(frame: AgentRequestInput): Promise<void> {
    return writeFrame(this.#socket, { v: 1, ...frame });
  }

  /** The next frame of the RPC; the node closing the connection, or a frame of no known shape, ends the connection. */
  async #next(): Promise<AgentReply> {
    const line = await this.#reader.next();
    if (line === undefined) throw closedError();
    let value: unknown;
    try {
      value = parseUntrustedJson(line.toString('utf8'), 'the frame');
    } catch (err) {
      const detail = isPrototypeKeyError(err) ? `a frame key names a prototype (${err.field})` : 'a frame is not JSON';
      throw this.#broken(new AgentProtocolError({ operation: 'agent', detail, cause: err }));
    }
    const parsed = AgentReplySchema.safeParse(value);
    if (!parsed.success)
      throw this.#broken(new AgentProtocolError({ operation: 'agent', detail: 'a frame of no known shape', cause: parsed.error }));
    return parsed.data;
  }

  #broken(err: AgentProtocolError): AgentProtocolError {
    this.#reader.fail(err);
    return err;
  }

  /** Reads to the end of an RPC the caller stopped following, so the next RPC starts in step. */
  async #drain(): Promise<void> {
    try {
      for (let f = await this.#next(); !isTerminal(f); f = await this.#next());
    } catch {
      // the connection is failed already; later calls see that failure
    }
  }

  /** The RPC's last frame: an `error` frame is an AgentError, any frame but `want` a protocol failure. */
  #endOf(op: string, f: AgentReply, want: AgentReply['type']): void {
    if (f.type === want) return;
    if (f.type === 'error') throw new AgentError({ operation: op, kind: f.kind, message: f.message });
    throw this.#unexpected(op, f);
  }

  #unexpected(op: string, f: AgentReply): AgentProtocolError {
    return this.#broken(new AgentProtocolError({ operation: op, detail: `unexpected ${f.type} frame` }));
  }
}

const closedError = (): AgentProtocolError => new AgentProtocolError({ operation: 'agent', detail: 'connection closed by the node' });

/** The data as chunks of at most AGENT_CHUNK_BYTES. */
async function* chunksOf(data: Buffer | AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  const source: AsyncIterable<Buffer> | Iterable<Buffer> = Buffer.isBuffer(data) ? [data] : data;
  for await (const buf of source) {
    for (let at = 0; at < buf.length; at += AGENT_CHUNK_BYTES) yield buf.subarray(at, at + AGENT_CHUNK_BYTES);
  }
}
