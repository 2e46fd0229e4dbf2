/**
 * Internal: the convenience forms (`clientAddress(input, options)`, `ipKey(address, options)`)
 * compile their options once per options object, so that calling them with a constant options
 * object costs one WeakMap lookup, not a validation and a CIDR compile per request.
 */
export function compiledPerOptions<O extends object, F>(create: (options?: O) => F): (options?: O) => F {
  const cache = new WeakMap<O, F>();
  let defaults: F | undefined;
  return (options) => {
    if (options === undefined) return (defaults ??= create());
    // A primitive cannot key a WeakMap; `create` rejects it with SLUICE_CONFIG.
    if (typeof options !== 'object' || options === null) return create(options);
    let fn = cache.get(options);
    if (fn === undefined) {
      fn = create(options);
      cache.set(options, fn);
    }
    return fn;
  };
}
