import { Agent, type Dispatcher } from 'undici';
import type { CallDeadline } from './deadline-signals';
import { ReplyTooLargeError, SandboxdTransportError } from './errors';

/** Success replies are read up to 1 MiB; past that the connection is closed, not drained. */
export const SUCCESS_BODY_LIMIT_BYTES = 1 << 20;
/** Error replies are read up to 64 KiB, enough for `{"error": ...}`. */
export const ERROR_BODY_LIMIT_BYTES = 1 << 16;

export interface SandboxdAgentOptions {
  /** Sockets per node (undici queues requests beyond this). Default 32, as the fleet client. */
  connectionsPerNode?: number;
  /** How long an idle socket is kept for reuse. Default 90 s. */
  idleTimeoutMs?: number;
  /**
   * TCP connect bound. Default 10 s: a connection never legitimately takes long to open,
   * unlike a reply (cold claims block for the boot), so only replies are unbounded.
   */
  connectTimeoutMs?: number;
}

/**
 * The keep-alive dispatcher shared by every node client of a process. undici's 300 s
 * header/body timeouts are switched off: a cold claim blocks for the whole boot, and
 * callers bound their calls with an AbortSignal instead.
 */
export function createSandboxdAgent(opts: SandboxdAgentOptions = {}): Agent {
  const idle = opts.idleTimeoutMs ?? 90_000;
  return new Agent({
    connections: opts.connectionsPerNode ?? 32,
    keepAliveTimeout: idle,
    keepAliveMaxTimeout: idle,
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: { timeout: opts.connectTimeoutMs ?? 10_000 },
  });
}

export interface SendSpec {
  operation: string;
  method: Dispatcher.HttpMethod;
  path: string;
  body?: unknown;
  token: string;
  signal: AbortSignal | undefined;
  /** A shared call bound (DeadlineSignals); the call ends at whichever of it and `signal` fires first. */
  deadline?: CallDeadline | undefined;
  keepAlive: boolean;
  /** Statuses read with the success cap (and turned into ReplyTooLargeError past it). */
  isSuccess: (status: number) => boolean;
  /** The success cap of this call; default SUCCESS_BODY_LIMIT_BYTES. */
  successLimitBytes?: number;
  /** Told each chunk's size before it is kept; what it throws ends the read and the call. */
  holdReplyBytes?: (bytes: number) => void;
}

export interface RawReply {
  statusCode: number;
  success: boolean;
  /** Undefined when an error body passed its cap (the message is then unknown). */
  body: Buffer | undefined;
  retryAfterSeconds: number | undefined;
}

export interface Endpoint {
  dispatcher: Dispatcher;
  origin: string;
  /** Path prefix of the base URL, without trailing slash (usually empty). */
  prefix: string;
}

function buildHeaders(spec: SendSpec): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (spec.body !== undefined) headers['content-type'] = 'application/json';
  // Sent only when non-empty: an empty bearer is "no token", not an invalid one.
  if (spec.token !== '') headers.authorization = `Bearer ${spec.token}`;
  if (!spec.keepAlive) headers.connection = 'close';
  return headers;
}

function rethrowIfAborted(spec: SendSpec): void {
  if (spec.signal?.aborted) throw spec.signal.reason;
  if (spec.deadline?.aborted) throw spec.deadline.reason;
}

/** One request, its reply body read within the cap; every path consumes or destroys the body. */
export async function send(ep: Endpoint, spec: SendSpec): Promise<RawReply> {
  if (spec.signal === undefined || spec.deadline === undefined) return sendOnce(ep, spec, spec.signal ?? spec.deadline ?? null);
  // both: one signal that fires with whichever comes first, let go of both when the call ends
  const { signal, deadline } = spec;
  const either = new AbortController();
  const onSignal = (): void => either.abort(signal.reason);
  const onDeadline = (): void => either.abort(deadline.reason);
  if (signal.aborted) onSignal();
  else if (deadline.aborted) onDeadline();
  signal.addEventListener('abort', onSignal, { once: true });
  deadline.once('abort', onDeadline);
  try {
    return await sendOnce(ep, spec, either.signal);
  } finally {
    signal.removeEventListener('abort', onSignal);
    deadline.removeListener('abort', onDeadline);
  }
}

async function sendOnce(ep: Endpoint, spec: SendSpec, abortOn: AbortSignal | CallDeadline | null): Promise<RawReply> {
  let res: Dispatcher.ResponseData;
  try {
    res = await ep.dispatcher.request({
      origin: ep.origin,
      path: ep.prefix + spec.path,
      method: spec.method,
      headers: buildHeaders(spec),
      body: spec.body === undefined ? null : JSON.stringify(spec.body),
      signal: abortOn,
    });
  } catch (err) {
    rethrowIfAborted(spec);
    throw new SandboxdTransportError({ operation: spec.operation, url: ep.origin + ep.prefix + spec.path, cause: err });
  }
  const success = spec.isSuccess(res.statusCode);
  const limit = success ? (spec.successLimitBytes ?? SUCCESS_BODY_LIMIT_BYTES) : ERROR_BODY_LIMIT_BYTES;
  let body: Buffer | undefined;
  const hold = success ? spec.holdReplyBytes : undefined;
  try {
    body = await readBounded(res.body, limit, res.headers['content-length'], hold);
  } catch (err) {
    if (err instanceof HoldRefused) throw err.cause;
    rethrowIfAborted(spec);
    throw new SandboxdTransportError({ operation: spec.operation, url: ep.origin + ep.prefix + spec.path, cause: err });
  }
  if (body === undefined && success) throw new ReplyTooLargeError({ operation: spec.operation, limitBytes: limit });
  // undici marks the socket idle on a setImmediate after the reply ends; yielding once lets
  // a caller's next sequential request reuse it instead of opening a second connection.
  await new Promise<void>((resolve) => setImmediate(resolve));
  return { statusCode: res.statusCode, success, body, retryAfterSeconds: parseRetryAfter(res.headers['retry-after']) };
}

type ReplyBody = Dispatcher.ResponseData['body'];

/**
 * Drops a reply body unread. undici's body emits 'error' once destroyed, and an 'error' nobody
 * listens to ends the process: a node that declares a huge reply must not take the caller down.
 */
function discard(body: ReplyBody): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** What holdReplyBytes threw, carried past the transport's own error wrapping. */
class HoldRefused extends Error {
  constructor(override readonly cause: unknown) {
    super('the reply holds more bytes than the caller allows');
  }
}

async function readBounded(
  body: ReplyBody,
  limit: number,
  contentLength: string | string[] | undefined,
  hold?: (bytes: number) => void,
): Promise<Buffer | undefined> {
  const declared = typeof contentLength === 'string' ? Number(contentLength) : NaN;
  if (declared > limit) {
    discard(body);
    return undefined;
  }
  // a declared length is read into one buffer of that size: gathering chunks and joining them
  // would hold a large reply twice while it is joined
  // (the caller holds that size before it is allocated; without one, each chunk as it comes)
  const sized = Number.isSafeInteger(declared) && declared > 0;
  const take = (bytes: number): void => {
    try {
      hold?.(bytes);
    } catch (err) {
      discard(body);
      throw new HoldRefused(err);
    }
  };
  if (sized) take(declared);
  const whole = sized ? Buffer.allocUnsafe(declared) : undefined;
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    if (total + buf.length > limit || (whole !== undefined && total + buf.length > whole.length)) {
      // Closing the socket bounds the work; draining an unbounded body would not.
      discard(body);
      return undefined;
    }
    if (whole === undefined) take(buf.length);
    if (whole !== undefined) buf.copy(whole, total);
    else chunks.push(buf);
    total += buf.length;
  }
  if (whole !== undefined) return total === whole.length ? whole : whole.subarray(0, total);
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total);
}

function parseRetryAfter(v: string | string[] | undefined): number | undefined {
  if (typeof v !== 'string') return undefined;
  const n = Number(v.trim());
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}
