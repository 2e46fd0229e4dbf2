import { SluiceError, optionError } from '../../core/errors.js';

/**
 * Whose time a shared store decides by:
 * - `'store'`: the store's own clock (Redis `TIME`, PostgreSQL `statement_timestamp()`), one
 *   clock for every node, so nodes with skewed clocks still enforce one limit; the `now` a
 *   limiter passes is ignored.
 * - `'app'`: the `now` the application passes (the limiter's clock): for managed services that
 *   forbid reading the time in a script, and for tests that move a manual clock. Every node
 *   must then keep good time.
 *
 * Named apart from the limiter's `clock` option (a function returning ms), which it used to
 * collide with.
 */
export type TimeSource = 'store' | 'app';

/**
 * Reads a shared store's `timeSource` option (default `'store'`). The option's former name,
 * `clock` with `'server' | 'caller'`, is refused with the new spelling, so that an upgrade
 * cannot silently fall back to the store's clock. A store calls it before checking its option
 * keys (a non-object reads as the default here and is refused by that check).
 *
 * @param owner the store's name for messages, e.g. `'RedisStore'`
 * @throws SluiceError `SLUICE_CONFIG`
 * @example readTimeSource('RedisStore', { timeSource: 'app' }) // 'app'
 */
export function readTimeSource(owner: string, options: unknown): TimeSource {
  // Called before the store checks its option keys, so that the old name gets this message.
  if (typeof options !== 'object' || options === null) return 'store';
  if (Object.prototype.hasOwnProperty.call(options, 'clock')) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `${owner} option clock was renamed: use timeSource: "store" (was clock: "server") or timeSource: "app" (was clock: "caller")`,
    );
  }
  const given = (options as { readonly timeSource?: unknown }).timeSource;
  const source = given === undefined ? 'store' : given;
  if (source !== 'store' && source !== 'app') {
    throw optionError(`${owner} timeSource`, '"store" or "app"');
  }
  return source;
}
