import type { IncomingMessage, ServerResponse } from 'node:http';
import { SANDBOX_API_VERSION, StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import type { ResponseShape } from '../http/negotiate';
import { matches, type SandboxStorage } from '../storage/sandbox-storage';
import type { ListQuery } from '../storage/list-query';
import { metadataOnly, sandboxTable, includeObjectOf } from '../storage/sandbox-table';
import { ResourceVersionTooOldError, type SandboxEvent, type WatchHub } from './watch-hub';

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

/** The events a watch starts with, before live ones. */
function initialEvents(ctx: WatchContext, q: ListQuery, p: WatchParams): { events: SandboxEvent[]; rev: number } {
  const rev = ctx.storage.revisions.current;
  if (p.sendInitialEvents || p.rv === '' || p.rv === '0') {
    const items = ctx.storage.list({ namespace: q.namespace, labels: q.labels, fields: q.fields, limit: 0 }).items;
    return { events: items.map((object) => ({ type: 'ADDED', rev: Number(object.metadata.resourceVersion), object })), rev };
  }
  const n = Number(p.rv);
  if (!/^[0-9]+$/.test(p.rv)) throw new StatusError('BadRequest', `invalid resourceVersion ${JSON.stringify(p.rv)}`);
  if (n >= ctx.startRev) return { events: ctx.hub.since(n), rev };
  // resumed from before this process started: whatever changed since is re-sent from the view
  const replay: SandboxEvent[] = [];
  for (const row of ctx.storage.view.rows()) {
    if (row.rev > n && row.rev <= ctx.startRev) replay.push({ type: 'ADDED', rev: row.rev, object: ctx.storage.view.objectOf(row) });
  }
  replay.sort((a, b) => a.rev - b.rev);
  return { events: [...replay, ...ctx.hub.since(Math.max(n, ctx.startRev))], rev };
}

/**
 * Live events a watch may hold while its client does not read: past this the watch is closed
 * (the client resumes from its last resourceVersion), as kube-apiserver drops an unresponsive
 * watcher. The events are shared with the hub's history, so this bounds references, not copies.
 */
export const MAX_PENDING_EVENTS = 10_000;

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
    if ((!replay && ev.rev <= lastRev) || !matches(q, ev.object)) return;
    lastRev = Math.max(lastRev, ev.rev);
    res.write(`${encode(ev.type, ev.object)}\n`);
  };
  let initial: { events: SandboxEvent[]; rev: number } = { events: [], rev: 0 };
  let next = 0;
  let initialDone = false;
  const writable = (): boolean => !closed && !res.writableEnded && !res.destroyed;
  // a bookmark promises every change up to its revision was sent: only when nothing is queued
  const caughtUp = (): boolean => initialDone && liveHead === live.length && !res.writableNeedDrain;
  const progressBookmark = (): string => `${encode('BOOKMARK', bookmark(Math.max(lastRev, ctx.storage.revisions.current), false), true)}\n`;
  // writes while the socket takes them; resumes on drain
  const pump = (): void => {
    while (writable() && !res.writableNeedDrain) {
      if (next < initial.events.length) {
        send(initial.events[next++] as SandboxEvent, true);
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
    initial = { events: [], rev: initial.rev };
  };
  try {
    initial = initialEvents(ctx, q, p);
  } catch (err) {
    unsubscribe();
    if (err instanceof ResourceVersionTooOldError) throw new StatusError('Expired', err.message);
    throw err;
  }
  res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
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
