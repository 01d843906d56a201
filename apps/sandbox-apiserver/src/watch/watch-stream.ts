import type { IncomingMessage, ServerResponse } from 'node:http';
import { statusForError, StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import {
  ResourceVersionTooOldError,
  type InitialEvents,
  type SandboxEvent,
  type Watchable,
  type WatchEventType,
  type WatchSubscription,
} from '../resource/events';
import type { ListQuery } from '../resource/list-query';
import { matches, type Selection } from '../resource/selection';

/** How a watch answers: each event's object as the client asked for it, and how often it is told of progress. */
export interface WatchOptions {
  /** The request's query: resourceVersion, sendInitialEvents, bookmarks, timeoutSeconds. */
  readonly params: URLSearchParams;
  /** The object as the response shape wants it (the object, its metadata, or a table row); bookmarks are sent as they are. */
  readonly transform: (object: ServedSandbox) => unknown;
  /**
   * Names the transform when it gives every watch the same bytes for the same object (the
   * object itself, its metadata at one version; not a table, whose first row differs): each
   * event is then encoded once, and every watch of that encoding writes the same buffer.
   */
  readonly sharedEncoding?: string;
  readonly bookmarkIntervalMs: number;
}

/**
 * Events encoded in this turn of the event loop, per object and per encoding and type. The hub
 * hands one change to every watch in the same turn, so a thousand watchers of it cost one
 * JSON.stringify and one buffer, not a thousand; the map is dropped at the turn's end, so it
 * never holds more than one turn's events (the cache's objects are never kept encoded). A watch
 * that writes the event in a later turn (its socket was full) encodes it again.
 */
let encodedThisTurn: Map<ServedSandbox, Map<string, Buffer>> | undefined;

function sharedEventBytes(encoding: string, type: string, object: ServedSandbox, transform: (o: ServedSandbox) => unknown): Buffer {
  if (encodedThisTurn === undefined) {
    encodedThisTurn = new Map();
    setImmediate(() => (encodedThisTurn = undefined));
  }
  let byKey = encodedThisTurn.get(object);
  if (byKey === undefined) encodedThisTurn.set(object, (byKey = new Map()));
  const key = `${encoding}\u0000${type}`;
  let bytes = byKey.get(key);
  if (bytes === undefined) byKey.set(key, (bytes = Buffer.from(`${JSON.stringify({ type, object: transform(object) })}\n`)));
  return bytes;
}

export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

interface WatchParams {
  readonly rv: string;
  readonly sendInitialEvents: boolean;
  readonly bookmarks: boolean;
  readonly timeoutMs: number;
}

/** Validates the watch parameters as kube-apiserver does. */
export function watchParamsOf(q: URLSearchParams): WatchParams {
  const sendInitialEvents = q.get('sendInitialEvents') === 'true';
  const bookmarks = q.get('allowWatchBookmarks') === 'true';
  const match = q.get('resourceVersionMatch') ?? '';
  if (sendInitialEvents && (match !== 'NotOlderThan' || !bookmarks)) {
    throw new StatusError('Invalid', 'sendInitialEvents requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true', {
      causes: [{ reason: 'FieldValueForbidden', field: 'sendInitialEvents', message: 'Forbidden' }],
    });
  }
  if (!sendInitialEvents && match !== '')
    throw new StatusError('Invalid', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided', {
      causes: [{ reason: 'FieldValueForbidden', field: 'resourceVersionMatch', message: 'Forbidden' }],
    });
  const t = Number(q.get('timeoutSeconds') ?? '');
  const timeoutMs = Number.isFinite(t) && t > 0 ? t * 1000 : (30 + Math.random() * 30) * 60_000;
  return { rv: q.get('resourceVersion') ?? '', sendInitialEvents, bookmarks, timeoutMs };
}

function bookmark(source: Watchable, rev: number, initialEnd: boolean): Record<string, unknown> {
  return {
    kind: source.kind,
    apiVersion: source.apiVersion,
    metadata: { resourceVersion: String(rev), ...(initialEnd ? { annotations: { [INITIAL_EVENTS_END]: 'true' } } : {}) },
  };
}

const NO_EVENTS: InitialEvents = { rev: 0, next: () => undefined };

/**
 * How one change looks to one watch (kube's cacheWatcher.convertToWatchEvent): a sandbox that
 * starts matching the selector is ADDED, one that stops matching is DELETED with its last
 * matching state at the event's revision, a change outside the selector is nothing.
 */
export function eventForWatch(q: Selection, ev: SandboxEvent): { type: WatchEventType; object: ServedSandbox } | undefined {
  const now = matches(q, ev.object);
  if (ev.type !== 'MODIFIED' || ev.prev === undefined) return now ? ev : undefined;
  const was = matches(q, ev.prev);
  if (now) return was ? ev : { type: 'ADDED', object: ev.object };
  if (!was) return undefined;
  return { type: 'DELETED', object: { ...ev.prev, metadata: { ...ev.prev.metadata, resourceVersion: String(ev.rev) } } };
}

/**
 * Live events a watch may hold while its client does not read: past this the watch is closed
 * (the client resumes from its last resourceVersion), as kube-apiserver drops an unresponsive
 * watcher. The events are shared with the hub's history, so this bounds references, not copies.
 */
export const MAX_PENDING_EVENTS = 10_000;

/** Events (or skipped rows' worth of work) written per turn of the event loop. */
const PUMP_BUDGET = 2_000;

/**
 * Bytes a watch gathers before it writes them: the events one turn has for a watch go out as one
 * write (one chunk of the chunked response, one syscall, one read at the aggregator's proxy)
 * instead of one each. A node's inventory change is tens of events at once for every watcher.
 */
export const WRITE_BATCH_BYTES = 64 * 1024;

/**
 * Streams a watch: newline-delimited JSON events, ended by timeoutSeconds. Writes follow the
 * socket: when it is full the watch waits for `drain`, so a slow client that keeps reading gets
 * the whole initial list however large, and only an encoded event or two is buffered at a time.
 */
export function serveWatch(req: IncomingMessage, res: ServerResponse, source: Watchable, q: ListQuery, opts: WatchOptions): void {
  const p = watchParamsOf(opts.params);
  const live: SandboxEvent[] = [];
  let liveHead = 0;
  let started = false;
  let closed = false;
  let waitingForDrain = false;
  let lastRev = 0;
  const encode = (type: string, object: ServedSandbox): string => JSON.stringify({ type, object: opts.transform(object) });
  const encodeBookmark = (rev: number, initialEnd: boolean): string =>
    JSON.stringify({ type: 'BOOKMARK', object: bookmark(source, rev, initialEnd) });
  // what pump() has for the socket and not written yet; never held past the pump that gathered it
  const batch: (Buffer | string)[] = [];
  let batchBytes = 0;
  const flush = (): void => {
    if (batch.length === 0) return;
    if (!writable()) {
      batch.length = 0;
      batchBytes = 0;
      return;
    }
    const chunk = batch.length === 1 ? batch[0] : Buffer.concat(batch.map((b) => (typeof b === 'string' ? Buffer.from(b) : b)));
    batch.length = 0;
    batchBytes = 0;
    if (chunk !== undefined) res.write(chunk);
  };
  const gather = (bytes: Buffer | string): void => {
    batch.push(bytes);
    batchBytes += bytes.length;
    if (batchBytes >= WRITE_BATCH_BYTES) flush();
  };
  const send = (ev: SandboxEvent, replay = false): void => {
    if (!replay && ev.rev <= lastRev) return;
    const out = eventForWatch(q, ev);
    if (out === undefined) return;
    lastRev = Math.max(lastRev, ev.rev);
    // a live event is the same for every watch of it; the initial list is each watch's own
    if (!replay && opts.sharedEncoding !== undefined) gather(sharedEventBytes(opts.sharedEncoding, out.type, out.object, opts.transform));
    else gather(`${encode(out.type, out.object)}\n`);
  };
  let initial: InitialEvents = NO_EVENTS;
  let initialDone = false;
  const writable = (): boolean => !closed && !res.writableEnded && !res.destroyed;
  // a bookmark promises every change up to its revision was sent: only when nothing is queued
  const caughtUp = (): boolean => initialDone && liveHead === live.length && !res.writableNeedDrain;
  const progressBookmark = (): string => `${encodeBookmark(Math.max(lastRev, source.revision), false)}\n`;
  // writes while the socket takes them; resumes on drain
  let yielded = false;
  const pump = (): void => {
    // a socket that keeps taking data (or a selector that skips most rows) would otherwise hold
    // the event loop for the whole initial list: other requests get a turn every so often
    for (let budget = PUMP_BUDGET; writable() && !res.writableNeedDrain; budget--) {
      if (budget === 0) {
        flush();
        if (!yielded) {
          yielded = true;
          setImmediate(() => {
            yielded = false;
            if (!waitingForDrain) pump();
          });
        }
        return;
      }
      const ev = initialDone ? undefined : initial.next();
      if (ev === null) continue;
      if (ev !== undefined) {
        send(ev, true);
      } else if (!initialDone) {
        initialDone = true;
        // everything buffered meanwhile is already part of the initial events
        lastRev = Math.max(lastRev, initial.rev);
        if (p.sendInitialEvents) gather(`${encodeBookmark(lastRev, true)}\n`);
      } else if (liveHead < live.length) {
        send(live[liveHead++] as SandboxEvent);
        if (liveHead === live.length) {
          live.length = 0;
          liveHead = 0;
        }
      } else {
        flush();
        return;
      }
    }
    // the loop ends on a full socket, and a flush is what fills it: nothing is left gathered here
    flush();
    if (writable() && !waitingForDrain) {
      waitingForDrain = true;
      res.once('drain', () => {
        waitingForDrain = false;
        pump();
      });
    }
  };
  // the hub hands a node's changes over one after another in one go: they are written together
  // once it is done, as one write
  let pumpQueued = false;
  const pumpQueuedEvents = (): void => {
    pumpQueued = false;
    if (!waitingForDrain) pump();
  };
  const listener = (ev: SandboxEvent): void => {
    live.push(ev);
    if (live.length - liveHead > MAX_PENDING_EVENTS) close();
    else if (started && !waitingForDrain && !pumpQueued) {
      pumpQueued = true;
      queueMicrotask(pumpQueuedEvents);
    }
  };
  const timers: { timeout?: NodeJS.Timeout; ticker?: NodeJS.Timeout } = {};
  let subscription: WatchSubscription | undefined;
  const close = (): void => {
    if (closed) return;
    subscription?.stop();
    clearTimeout(timers.timeout);
    clearTimeout(timers.ticker);
    if (!res.writableEnded && !res.destroyed) {
      if (p.bookmarks && caughtUp()) res.write(progressBookmark());
      res.end();
    }
    closed = true;
    live.length = 0;
    initial = { rev: initial.rev, next: () => undefined };
  };
  let expired: ResourceVersionTooOldError | undefined;
  try {
    // subscribed before the initial events are cut, so no change falls between the two
    subscription = source.watch(q, p, listener);
    initial = subscription.initial;
  } catch (err) {
    if (!(err instanceof ResourceVersionTooOldError)) throw err;
    expired = err;
  }
  res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  if (expired !== undefined) {
    // as kube-apiserver's watch cache: the watch opens, then one ERROR event with the 410 Status
    // (client-go and @kubernetes/client-node read it as "relist", a 410 response as a failure)
    res.end(`${JSON.stringify({ type: 'ERROR', object: statusForError(new StatusError('Expired', expired.message)) })}\n`);
    return;
  }
  started = true;
  req.on('close', close);
  res.on('close', close);
  res.on('error', close);
  pump();
  timers.timeout = setTimeout(close, p.timeoutMs);
  if (p.bookmarks) {
    const tick = (): void => {
      if (!writable()) return;
      // a client that is behind gets its next bookmark once it has caught up
      if (caughtUp()) res.write(progressBookmark());
      timers.ticker = setTimeout(tick, opts.bookmarkIntervalMs);
    };
    timers.ticker = setTimeout(tick, opts.bookmarkIntervalMs);
  }
}
