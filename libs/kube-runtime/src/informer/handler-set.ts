import type { Logger } from '../log/logger';
import type { StoreChange } from './object-store';
import type { ParseFailure } from './parse-failure';

export interface ObjectRef {
  namespace?: string;
  name: string;
}

export interface InformerHandlers<T> {
  add?: (obj: T) => void;
  update?: (obj: T, old: T) => void;
  delete?: (obj: T) => void;
  /** The object exists but does not parse (failure), or such an object is gone (null). */
  malformed?: (ref: ObjectRef, failure: ParseFailure | null) => void;
}

/** The subscribers of one informer; one that throws is logged and counted, the rest still run. */
export class HandlerSet<T> {
  private readonly handlers = new Set<InformerHandlers<T>>();

  constructor(
    private readonly log: Logger,
    private readonly onError: () => void,
  ) {}

  add(h: InformerHandlers<T>): () => void {
    this.handlers.add(h);
    return () => this.handlers.delete(h);
  }

  change(change: StoreChange<T>): void {
    switch (change.type) {
      case 'add':
        return this.dispatch((h) => h.add?.(change.obj));
      case 'update':
        return this.dispatch((h) => h.update?.(change.obj, change.old));
      case 'delete':
        return this.dispatch((h) => h.delete?.(change.obj));
    }
  }

  malformed(ref: ObjectRef, failure: ParseFailure | null): void {
    this.dispatch((h) => h.malformed?.(ref, failure));
  }

  private dispatch(call: (h: InformerHandlers<T>) => void): void {
    for (const h of this.handlers) {
      try {
        call(h);
      } catch (err) {
        // A handler bug must not stop the cache for every other consumer.
        this.onError();
        this.log.error({ err }, 'informer event handler threw');
      }
    }
  }
}
