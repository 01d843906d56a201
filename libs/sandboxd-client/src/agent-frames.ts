import type { Socket } from 'node:net';
import { AGENT_FRAME_LIMIT_BYTES } from './data-plane';
import { AgentProtocolError } from './errors';

const NEWLINE = 0x0a;
/** Lines split but not yet taken; past this the socket is paused, so a slow reader bounds memory. */
const QUEUE_HIGH_WATER = 8;

interface Waiter {
  resolve: (line: Buffer | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * Splits a socket's bytes into newline-delimited frames (one JSON text each), handed out one at a
 * time; both ends of the agent protocol read with it. `next` resolves with the next line, or with
 * undefined once the peer ended the stream. A line longer than the frame cap, a socket error or
 * `fail` ends the reader for good (the socket is destroyed): `next` then rejects with that error.
 */
export class LineReader {
  readonly #socket: Socket;
  readonly #lines: Buffer[] = [];
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #waiter: Waiter | undefined;
  #ended = false;
  #failure: unknown;

  readonly limitBytes: number;
  readonly #destroyOnFail: boolean;

  /**
   * `destroyOnFail: false` leaves the socket open after a failure, so the reading side can still
   * answer (the guest writes a last error frame before it ends the connection).
   */
  constructor(socket: Socket, opts: { limitBytes?: number; destroyOnFail?: boolean } = {}) {
    this.#socket = socket;
    this.limitBytes = opts.limitBytes ?? AGENT_FRAME_LIMIT_BYTES;
    this.#destroyOnFail = opts.destroyOnFail ?? true;
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('end', () => this.#onEnd());
    socket.on('close', () => this.#onEnd());
    socket.on('error', (err) =>
      this.fail(new AgentProtocolError({ operation: 'agent', detail: `connection failed: ${err.message}`, cause: err })),
    );
  }

  /** The error that ended the reader, if one did. */
  get failure(): unknown {
    return this.#failure;
  }

  /** Whether the reader has ended (the peer's end of stream, or a failure). */
  get ended(): boolean {
    return this.#ended || this.#failure !== undefined;
  }

  next(): Promise<Buffer | undefined> {
    const line = this.#lines.shift();
    if (line !== undefined) {
      if (this.#lines.length < QUEUE_HIGH_WATER && this.#socket.isPaused()) this.#socket.resume();
      return Promise.resolve(line);
    }
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#ended) return Promise.resolve(undefined);
    return new Promise<Buffer | undefined>((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  /** Ends the reader with `err` (the first failure wins) and destroys the socket (unless told not to). */
  fail(err: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = err;
    if (this.#destroyOnFail) this.#socket.destroy();
    else this.#socket.pause();
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.reject(err);
  }

  #onEnd(): void {
    if (this.#ended) return;
    this.#ended = true;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.resolve(undefined);
  }

  #onData(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1 && this.#failure === undefined; nl = chunk.indexOf(NEWLINE, start)) {
      const part = chunk.subarray(start, nl);
      const line = this.#pendingBytes === 0 ? part : Buffer.concat([...this.#pending, part]);
      this.#pending = [];
      this.#pendingBytes = 0;
      start = nl + 1;
      if (line.length > this.limitBytes) return this.#tooLarge();
      if (line.length > 0) this.#push(line);
    }
    if (start < chunk.length && this.#failure === undefined) {
      const rest = chunk.subarray(start);
      this.#pending.push(rest);
      this.#pendingBytes += rest.length;
      if (this.#pendingBytes > this.limitBytes) this.#tooLarge();
    }
  }

  #tooLarge(): void {
    this.fail(new AgentProtocolError({ operation: 'agent', detail: `a frame exceeds ${this.limitBytes} bytes` }));
  }

  #push(line: Buffer): void {
    const w = this.#waiter;
    if (w !== undefined) {
      this.#waiter = undefined;
      w.resolve(line);
      return;
    }
    this.#lines.push(line);
    if (this.#lines.length >= QUEUE_HIGH_WATER) this.#socket.pause();
  }
}

/** Writes one frame (a JSON line), waiting for the socket to drain when its buffer is full. */
export async function writeFrame(socket: Socket, frame: object): Promise<void> {
  if (socket.destroyed || socket.writableEnded) throw new AgentProtocolError({ operation: 'agent', detail: 'connection closed' });
  if (socket.write(`${JSON.stringify(frame)}\n`)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (err?: unknown): void => {
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onDrain = (): void => done();
    const onClose = (): void => done(new AgentProtocolError({ operation: 'agent', detail: 'connection closed' }));
    socket.on('drain', onDrain);
    socket.on('close', onClose);
  });
}
