import type { KubeObject } from '../client/object-meta';
import type { Source } from '../controller/controller';
import type { Informer } from '../informer/informer';
import type { Predicate } from '../predicate/predicate';
import type { MapFunction } from './map-functions';

export interface InformerSourceOptions<T> {
  map: MapFunction<T>;
  predicates?: Predicate<T>[];
  /** Also enqueue objects that fail to parse, so the reconciler can report them (primary only). */
  enqueueMalformed?: boolean;
  /**
   * A deleted object's delayed requeue is dropped before its delete is enqueued (primary only):
   * the reconcile of the delete decides anew, and a controller that saw thousands of objects
   * come and go holds no timer for any of them.
   */
  cancelDelayedOnDelete?: boolean;
}

/**
 * Feeds an informer's events into a controller. On start it replays the objects already cached
 * as creates, as client-go does for a late handler, so nothing listed before start is missed.
 */
export function informerSource<T extends KubeObject>(informer: Informer<T>, opts: InformerSourceOptions<T>): Source {
  const ps = opts.predicates ?? [];
  const passes = (test: (p: Predicate<T>) => boolean | undefined): boolean => ps.every((p) => test(p) ?? true);
  return {
    start(enqueue, cancelDelayed) {
      const emit = (obj: T, pass: boolean): void => {
        if (pass) for (const r of opts.map(obj)) enqueue(r);
      };
      const cancel = opts.cancelDelayedOnDelete ? cancelDelayed : undefined;
      const off = informer.on({
        add: (o) =>
          emit(
            o,
            passes((p) => p.create?.(o)),
          ),
        update: (o, old) =>
          emit(
            o,
            passes((p) => p.update?.(o, old)),
          ),
        delete: (o) => {
          if (cancel) for (const r of opts.map(o)) cancel(r);
          emit(
            o,
            passes((p) => p.delete?.(o)),
          );
        },
        malformed: opts.enqueueMalformed ? (ref) => enqueue({ namespace: ref.namespace ?? '', name: ref.name }) : undefined,
      });
      for (const o of informer.list())
        emit(
          o,
          passes((p) => p.create?.(o)),
        );
      if (opts.enqueueMalformed)
        for (const { ref } of informer.malformedObjects()) enqueue({ namespace: ref.namespace ?? '', name: ref.name });
      return off;
    },
  };
}
