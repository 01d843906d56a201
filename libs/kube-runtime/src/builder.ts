import { SandboxScaleError } from '@sandbox-scale/scale-core';
import type { KubeObject } from './client/object-meta';
import { Controller, type ControllerOptions } from './controller/controller';
import { informerSource } from './handler/informer-source';
import { type MapFunction, enqueueObject, enqueueOwner } from './handler/map-functions';
import type { Informer } from './informer/informer';
import type { Predicate } from './predicate/predicate';

/** What the builder needs: exactly the controller's own options. */
export type ControllerSpec = ControllerOptions;

/**
 * Wiring that reads as a sentence:
 *   controller({ name: 'warmpool', reconciler, log }).for(pools).watches(templates, poolsOf).build()
 */
export class ControllerBuilder {
  private readonly ctrl: Controller;
  private hasPrimary = false;

  constructor(spec: ControllerSpec) {
    this.ctrl = new Controller(spec);
  }

  /** The primary resource: each object is its own request; malformed ones are enqueued too. */
  for<T extends KubeObject>(informer: Informer<T>, opts: { predicates?: Predicate<T>[] } = {}): this {
    this.hasPrimary = true;
    this.ctrl.watch(
      informerSource(informer, {
        map: enqueueObject<T>(),
        predicates: opts.predicates,
        enqueueMalformed: true,
        cancelDelayedOnDelete: true,
      }),
    );
    return this;
  }

  /** Children: a change wakes the controlling owner of ownerKind. */
  owns<T extends KubeObject>(
    informer: Informer<T>,
    ownerKind: string,
    opts: { apiGroup?: string; predicates?: Predicate<T>[] } = {},
  ): this {
    this.ctrl.watch(
      informerSource(informer, { map: enqueueOwner<T>(ownerKind, { apiGroup: opts.apiGroup }), predicates: opts.predicates }),
    );
    return this;
  }

  /** Anything else: a change wakes whatever map returns. */
  watches<T extends KubeObject>(informer: Informer<T>, map: MapFunction<T>, opts: { predicates?: Predicate<T>[] } = {}): this {
    this.ctrl.watch(informerSource(informer, { map, predicates: opts.predicates }));
    return this;
  }

  build(): Controller {
    if (!this.hasPrimary) throw new SandboxScaleError(`controller ${this.ctrl.name}: for() was not called`);
    return this.ctrl;
  }
}

export function controller(spec: ControllerSpec): ControllerBuilder {
  return new ControllerBuilder(spec);
}
