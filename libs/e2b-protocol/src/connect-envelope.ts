/**
 * The Connect protocol's stream framing, as envd speaks it with the JSON codec: every message is
 * an envelope of one flag byte, a 4-byte big-endian length and that many bytes of JSON. A stream
 * ends with one end-stream envelope (flag 0x02) holding `{}` or `{"error":{code,message}}`; e2b's
 * JS SDK fails a stream that lacks it ("missing EndStreamResponse"), and ignores the body of a
 * non-200 stream answer, so a stream's errors go in that envelope.
 */

export const FLAG_MESSAGE = 0x00;
/** Set on a message compressed with the negotiated encoding; no e2b SDK compresses. */
export const FLAG_COMPRESSED = 0x01;
export const FLAG_END_STREAM = 0x02;

const HEADER = 5;

export interface Envelope {
  flags: number;
  data: Buffer;
}

export function encodeEnvelope(flags: number, data: Buffer): Buffer {
  const header = Buffer.alloc(HEADER);
  header.writeUInt8(flags, 0);
  header.writeUInt32BE(data.length, 1);
  return Buffer.concat([header, data]);
}

/** One message of a stream: its JSON in an envelope. */
export function messageEnvelope(message: unknown): Buffer {
  return encodeEnvelope(FLAG_MESSAGE, Buffer.from(JSON.stringify(message)));
}

/** The stream's last envelope: `{}`, or the error that ended it. */
export function endStreamEnvelope(error?: { code: string; message: string }): Buffer {
  return encodeEnvelope(FLAG_END_STREAM, Buffer.from(JSON.stringify(error ? { error } : {})));
}

export class EnvelopeError extends Error {
  override readonly name = 'EnvelopeError';
}

export function isEnvelopeError(err: unknown): err is EnvelopeError {
  return err instanceof EnvelopeError;
}

/**
 * Splits bytes into envelopes as they arrive (a chunked request body may cut one anywhere). A
 * length over `maxMessageBytes` is refused before its bytes are buffered, so a peer cannot make
 * the reader hold more than that.
 */
export class EnvelopeReader {
  #pending: Buffer = Buffer.alloc(0);

  constructor(private readonly maxMessageBytes: number) {}

  /** The envelopes the bytes so far complete; the rest waits for more. */
  push(chunk: Buffer): Envelope[] {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const out: Envelope[] = [];
    while (this.#pending.length >= HEADER) {
      const flags = this.#pending.readUInt8(0);
      const length = this.#pending.readUInt32BE(1);
      if (length > this.maxMessageBytes)
        throw new EnvelopeError(`a message of ${length} bytes is over the limit of ${this.maxMessageBytes}`);
      if (flags & FLAG_COMPRESSED) throw new EnvelopeError('compressed messages are not accepted');
      if (this.#pending.length < HEADER + length) break;
      out.push({ flags, data: this.#pending.subarray(HEADER, HEADER + length) });
      this.#pending = this.#pending.subarray(HEADER + length);
    }
    return out;
  }

  /** Bytes of an envelope begun and not finished: a stream cut short. */
  get partial(): number {
    return this.#pending.length;
  }
}
