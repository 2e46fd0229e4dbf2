/**
 * A place to keep something with a request object for as long as the request lives, without a
 * WeakMap entry per request (those are costly for the garbage collector on a hot path): a
 * property under a symbol private to the slot, invisible to JSON, `Object.keys` and `for … in`.
 * Objects that take no new property (frozen, sealed, non-extensible, or a proxy that refuses it)
 * keep theirs in a WeakMap beside them instead, also when they were sealed after a first value.
 */
export interface RequestSlot<T> {
  /** The value kept with `request`, or undefined. */
  get(request: object): T | undefined;
  /** Keeps `value` with `request`, replacing what was kept. */
  set(request: object, value: T): void;
}

/**
 * @example
 * const charges = requestSlot<Charge>('sluice.charges');
 * charges.set(req, charge);
 */
export function requestSlot<T>(description: string): RequestSlot<T> {
  const key = Symbol(description);
  const beside = new WeakMap<object, T>();
  // Until an object first refuses the property, nothing is beside: no WeakMap lookup at all.
  let anyBeside = false;
  type Holder = Record<symbol, T | undefined>;
  return {
    get(request) {
      const own = (request as Holder)[key];
      if (!anyBeside || (own !== undefined && Object.isExtensible(request))) return own;
      return beside.get(request) ?? own;
    },
    set(request, value) {
      if (Object.isExtensible(request)) {
        try {
          (request as Holder)[key] = value;
          return;
        } catch {
          // A proxy that refuses the property: kept beside it, as for a sealed object.
        }
      }
      anyBeside = true;
      beside.set(request, value);
    },
  };
}
