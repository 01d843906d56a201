import type { IncomingMessage, ServerResponse } from 'node:http';
import { SANDBOX_API_VERSION, statusForError, StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import type { ResponseShape } from '../http/negotiate';
import { matches, type SandboxStorage } from '../storage/sandbox-storage';
import type { ListQuery } from '../storage/list-query';
import { metadataOnly, sandboxTable, includeObjectOf } from '../storage/sandbox-table';
import type { Row } from '../storage/sandbox-view';
import { lowerBound, sortKeyOf } from '../storage/sorted-rows';
import { ResourceVersionTooOldError, type SandboxEvent, type WatchEventType, type WatchHub } from './watch-hub';

export interface WatchContext {
  readonly storage: SandboxStorage;
  readonly hub: WatchHub;
  /** The revision of the first synced state: older resume points are rebuilt from the snapshot. */
  readonly startRev: number;
  readonly bookmarkIntervalMs: number;
}

export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

interface WatchParams {
  readonly rv: string;
  readonly sendInitialEvents: boolean;
  readonly bookmarks: boolean;
  readonly timeoutMs: number;
}

/** Validates the watch parameters as kube-apiserver does (k8s-api.md §4.10). */
export function watchParamsOf(q: URLSearchParams): WatchParams {
  const sendInitialEvents = q.get('sendInitialEvents') === 'true';
  const bookmarks = q.get('allowWatchBookmarks') === 'true';
  const match = q.get('resourceVersionMatch') ?? '';
  if (sendInitialEvents && (match !== 'NotOlderThan' || !bookmarks)) {
    throw new StatusError('Invalid', 'sendInitialEvents requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true', { causes: [{ reason: 'FieldValueForbidden', field: 'sendInitialEvents', message: 'Forbidden' }] });
  }
  if (!sendInitialEvents && match !== '') throw new StatusError('Invalid', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided', { causes: [{ reason: 'FieldValueForbidden', field: 'resourceVersionMatch', message: 'Forbidden' }] });
  const t = Number(q.get('timeoutSeconds') ?? '');
  const timeoutMs = Number.isFinite(t) && t > 0 ? t * 1000 : (30 + Math.random() * 30) * 60_000;
  return { rv: q.get('resourceVersion') ?? '', sendInitialEvents, bookmarks, timeoutMs };
}

function bookmark(rev: number, initialEnd: boolean): Record<string, unknown> {
  return { kind: 'Sandbox', apiVersion: SANDBOX_API_VERSION, metadata: { resourceVersion: String(rev), ...(initialEnd ? { annotations: { [INITIAL_EVENTS_END]: 'true' } } : {}) } };
}

/**
 * What a watch starts with, before live ones: either the initial list (ADDED per matching
 * sandbox, walked lazily over an immutable snapshot of the view so a list of 100,000 is never
 * materialised at once) or the hub's history after the resume point.
 */
interface InitialEvents {
  /** The next event; null for a row the selector skipped (one row of work); undefined at the end. */
  next(): SandboxEvent | null | undefined;
  /** The revision the initial state is as of: live events at or below it are already in it. */
  readonly rev: number;
}

function listEvents(ctx: WatchContext, q: ListQuery): InitialEvents {
  const snap = ctx.storage.view.sortedRows();
  const { keys, rows } = snap;
  let i = q.namespace === '' ? 0 : lowerBound(keys, sortKeyOf(q.namespace, ''));
  const end = q.namespace === '' ? keys.length : lowerBound(keys, `${q.namespace}\u0001`);
  return {
    rev: ctx.storage.revisions.current,
    next: () => {
      if (i >= end) return undefined;
      const object = ctx.storage.view.objectOf(rows[i++] as Row);
      return matches(q, object) ? { type: 'ADDED', rev: Number(object.metadata.resourceVersion), object } : null;
    },
  };
}

function historyEvents(events: readonly SandboxEvent[], rev: number): InitialEvents {
  let i = 0;
  return { rev, next: () => events[i++] };
}

/** The events a watch starts with; throws ResourceVersionTooOldError when it cannot resume. */
function initialEvents(ctx: WatchContext, q: ListQuery, p: WatchParams): InitialEvents {
  if (p.sendInitialEvents || p.rv === '' || p.rv === '0') return listEvents(ctx, q);
  if (!/^[0-9]+$/.test(p.rv)) throw new StatusError('BadRequest', `invalid resourceVersion ${JSON.stringify(p.rv)}`);
  const n = Number(p.rv);
  const current = ctx.storage.revisions.current;
  // A resume point from before this process synced is 410 Expired, as kube-apiserver's watch
  // cache answers after a restart. Replaying the rows changed since would miss every sandbox
  // deleted while this process was down: nothing here remembers what existed at that revision,
  // so only a relist lets the client's cache drop them (client-go's reflector relists on 410).
  if (n < ctx.startRev) throw new ResourceVersionTooOldError(n, ctx.startRev);
  // A point ahead of this replica (its list came from a replica whose informer is further on)
  // resumes from here: the inventory changes this one has yet to see arrive as it sees them,
  // at the same etcd-derived revisions, and an event the client already has is a no-op to it.
  return historyEvents(ctx.hub.since(Math.min(n, current)), current);
}

/**
 * How one change looks to one watch (kube's cacheWatcher.convertToWatchEvent): a sandbox that
 * starts matching the selector is ADDED, one that stops matching is DELETED with its last
 * matching state at the event's revision, a change outside the selector is nothing.
 */
export function eventForWatch(q: Pick<ListQuery, 'namespace' | 'labels' | 'fields'>, ev: SandboxEvent): { type: WatchEventType; object: ServedSandbox } | undefined {
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
 * Streams a watch: newline-delimited JSON events, ended by timeoutSeconds. Writes follow the
 * socket: when it is full the watch waits for `drain`, so a slow client that keeps reading gets
 * the whole initial list however large, and only an encoded event or two is buffered at a time.
 */
export function serveWatch(req: IncomingMessage, res: ServerResponse, ctx: WatchContext, q: ListQuery, shape: ResponseShape, url: URL): void {
  const p = watchParamsOf(url.searchParams);
  const live: SandboxEvent[] = [];
  let liveHead = 0;
  let started = false;
  let closed = false;
  let waitingForDrain = false;
  let lastRev = 0;
  let firstTable = true;
  const include = includeObjectOf(url.searchParams.get('includeObject'));
  const encode = (type: string, object: ServedSandbox | Record<string, unknown>, isBookmark = false): string => {
    if (isBookmark || shape.kind === 'object' || shape.kind === 'discovery-v2') return JSON.stringify({ type, object });
    const s = object as ServedSandbox;
    if (shape.kind === 'metadata') return JSON.stringify({ type, object: metadataOnly(s, shape.version) });
    const t = sandboxTable([s], { resourceVersion: s.metadata.resourceVersion, include, version: shape.version, columns: firstTable });
    firstTable = false;
    return JSON.stringify({ type, object: t });
  };
  const send = (ev: SandboxEvent, replay = false): void => {
    if (!replay && ev.rev <= lastRev) return;
    const out = eventForWatch(q, ev);
    if (out === undefined) return;
    lastRev = Math.max(lastRev, ev.rev);
    res.write(`${encode(out.type, out.object)}\n`);
  };
  let initial: InitialEvents = historyEvents([], 0);
  let initialDone = false;
  const writable = (): boolean => !closed && !res.writableEnded && !res.destroyed;
  // a bookmark promises every change up to its revision was sent: only when nothing is queued
  const caughtUp = (): boolean => initialDone && liveHead === live.length && !res.writableNeedDrain;
  const progressBookmark = (): string => `${encode('BOOKMARK', bookmark(Math.max(lastRev, ctx.storage.revisions.current), false), true)}\n`;
  // writes while the socket takes them; resumes on drain
  let yielded = false;
  const pump = (): void => {
    // a socket that keeps taking data (or a selector that skips most rows) would otherwise hold
    // the event loop for the whole initial list: other requests get a turn every so often
    for (let budget = PUMP_BUDGET; writable() && !res.writableNeedDrain; budget--) {
      if (budget === 0) {
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
        if (p.sendInitialEvents) res.write(`${encode('BOOKMARK', bookmark(lastRev, true), true)}\n`);
      } else if (liveHead < live.length) {
        send(live[liveHead++] as SandboxEvent);
        if (liveHead === live.length) {
          live.length = 0;
          liveHead = 0;
        }
      } else return;
    }
    if (writable() && !waitingForDrain) {
      waitingForDrain = true;
      res.once('drain', () => {
        waitingForDrain = false;
        pump();
      });
    }
  };
  const unsubscribe = ctx.hub.subscribe((ev) => {
    live.push(ev);
    if (live.length - liveHead > MAX_PENDING_EVENTS) close();
    else if (started && !waitingForDrain) pump();
  });
  const timers: { timeout?: NodeJS.Timeout; ticker?: NodeJS.Timeout } = {};
  const close = (): void => {
    if (closed) return;
    unsubscribe();
    clearTimeout(timers.timeout);
    clearTimeout(timers.ticker);
    if (!res.writableEnded && !res.destroyed) {
      if (p.bookmarks && caughtUp()) res.write(progressBookmark());
      res.end();
    }
    closed = true;
    live.length = 0;
    initial = historyEvents([], initial.rev);
  };
  let expired: ResourceVersionTooOldError | undefined;
  try {
    initial = initialEvents(ctx, q, p);
  } catch (err) {
    if (!(err instanceof ResourceVersionTooOldError)) {
      unsubscribe();
      throw err;
    }
    expired = err;
  }
  res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  if (expired !== undefined) {
    // as kube-apiserver's watch cache: the watch opens, then one ERROR event with the 410 Status
    // (client-go and @kubernetes/client-node read it as "relist", a 410 response as a failure)
    unsubscribe();
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
      timers.ticker = setTimeout(tick, ctx.bookmarkIntervalMs);
    };
    timers.ticker = setTimeout(tick, ctx.bookmarkIntervalMs);
  }
}
