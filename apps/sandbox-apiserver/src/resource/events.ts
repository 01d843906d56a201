import type { ServedSandbox } from '@sandbox-scale/scale-core';
import type { ListQuery } from './list-query';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One change of one sandbox; `object.metadata.resourceVersion` equals `rev`. */
export interface SandboxEvent {
  readonly type: WatchEventType;
  readonly rev: number;
  readonly object: ServedSandbox;
  /**
   * On MODIFIED: the object before the change, so each watch can tell whether the sandbox
   * entered or left its selector (ADDED / DELETED for that watch, as kube's watch cache does).
   */
  readonly prev?: ServedSandbox;
}

export type Listener = (ev: SandboxEvent) => void;

/** `too old resource version` — the caller relists. */
export class ResourceVersionTooOldError extends Error {
  constructor(
    readonly requested: number,
    readonly oldest: number,
  ) {
    super(`too old resource version: ${requested} (${oldest})`);
    this.name = 'ResourceVersionTooOldError';
  }
}

/** Where a watch starts: the request's resourceVersion, and whether it asked for the initial list. */
export interface WatchStart {
  readonly rv: string;
  readonly sendInitialEvents: boolean;
}

/**
 * What a watch starts with, before live events: either the initial list (ADDED per matching
 * sandbox, walked lazily so a list of 100,000 is never materialised at once) or the history
 * after the resume point.
 */
export interface InitialEvents {
  /** The next event; null for a row the selector skipped (one row of work); undefined at the end. */
  next(): SandboxEvent | null | undefined;
  /** The revision the initial state is as of: live events at or below it are already in it. */
  readonly rev: number;
}

/** An open watch on a storage: its initial events, then every change goes to its listener until stopped. */
export interface WatchSubscription {
  readonly initial: InitialEvents;
  stop(): void;
}

/** What the watch stream reads from: a storage that can be watched. */
export interface Watchable {
  /** kind and apiVersion of the objects, which bookmarks carry. */
  readonly kind: string;
  readonly apiVersion: string;
  /** The revision everything served so far is as of: what a progress bookmark promises. */
  readonly revision: number;
  /** Subscribes `listener`; throws ResourceVersionTooOldError when `start` is older than what can be resumed. */
  watch(q: ListQuery, start: WatchStart, listener: Listener): WatchSubscription;
}
