/**
 * Freezes the built-in prototypes (and the constructors a JSON key can reach through
 * `constructor`), so that no input, whatever path it takes, can add or replace a property every
 * object of the process inherits. A field missing from a TokenReview answer then stays missing:
 * nothing set on Object.prototype can stand in for it.
 *
 * Freezing alone has a cost in ordinary code, the "override mistake": once `Error.prototype.name`
 * is read-only, `this.name = 'MyError'` on an instance throws in strict code. So, before freezing,
 * the data properties of the prototypes that code commonly overrides on instances
 * (Object.prototype, the Error prototypes, Function.prototype) become accessors whose setter
 * defines an own property on the instance and refuses only the prototype itself. The other
 * prototypes are frozen as they are: turning their methods into accessors would switch off
 * engine fast paths (array iteration, species, promise then) for every call.
 */

type Obj = Record<PropertyKey, unknown>;

const ERROR_CONSTRUCTORS = [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError, AggregateError];

/** Prototypes whose properties instances override by assignment, and which of them (all when undefined). */
function overriddenPrototypes(): Array<{ proto: object; keys?: readonly PropertyKey[] }> {
  return [
    { proto: Object.prototype },
    // call, apply and bind stay data properties: they are on every hot path, and nobody overrides them
    { proto: Function.prototype, keys: ['toString'] },
    ...ERROR_CONSTRUCTORS.map((c) => ({ proto: c.prototype as object })),
  ];
}

/** Prototypes and constructors frozen as they are. */
function plainIntrinsics(): object[] {
  const typedArray = Object.getPrototypeOf(Uint8Array) as object;
  const iteratorProto = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())) as object;
  return [
    Object,
    Function,
    Array,
    Array.prototype,
    String.prototype,
    Number.prototype,
    Boolean.prototype,
    Symbol.prototype,
    BigInt.prototype,
    RegExp.prototype,
    Date.prototype,
    Map.prototype,
    Set.prototype,
    WeakMap.prototype,
    WeakSet.prototype,
    Promise.prototype,
    ArrayBuffer.prototype,
    typedArray,
    (typedArray as { prototype: object }).prototype,
    iteratorProto,
    Object.getPrototypeOf([][Symbol.iterator]()) as object,
    Object.getPrototypeOf(new Map()[Symbol.iterator]()) as object,
    Object.getPrototypeOf(new Set()[Symbol.iterator]()) as object,
    Object.getPrototypeOf(''[Symbol.iterator]()) as object,
  ];
}

/** Makes writable data properties of `proto` accessors that an instance may still override. */
function allowOverrides(proto: object, keys: readonly PropertyKey[] = Reflect.ownKeys(proto)): void {
  for (const key of keys) {
    const desc = Object.getOwnPropertyDescriptor(proto, key);
    if (desc === undefined || !('value' in desc) || desc.writable !== true || desc.configurable !== true) continue;
    const value: unknown = desc.value;
    Object.defineProperty(proto, key, {
      get: function (): unknown {
        return value;
      },
      set: function (this: unknown, next: unknown): void {
        const instance = (typeof this === 'object' && this !== null) || typeof this === 'function';
        if (this === proto || !instance) throw new TypeError(`Cannot assign to ${String(key)} of a frozen prototype`);
        Object.defineProperty(this as Obj, key, { value: next, writable: true, enumerable: true, configurable: true });
      },
      enumerable: desc.enumerable ?? false,
      configurable: false,
    });
  }
}

let frozen = false;

/** Freezes the intrinsics once per process; later calls do nothing. */
export function freezeIntrinsics(): void {
  if (frozen) return;
  for (const { proto, keys } of overriddenPrototypes()) allowOverrides(proto, keys);
  for (const o of [...overriddenPrototypes().map((p) => p.proto), ...plainIntrinsics()]) Object.freeze(o);
  frozen = true;
}

/** Whether the prototypes every plain object and array inherits from can no longer change. */
export function intrinsicsFrozen(): boolean {
  return [...overriddenPrototypes().map((p) => p.proto), ...plainIntrinsics()].every((o) => Object.isFrozen(o));
}
