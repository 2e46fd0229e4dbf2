import { SluiceError, optionError } from '../core/errors.js';

/** The bounds of {@link WaitingRoom}, as `createLimiter` takes them. */
export interface WaitingBounds {
  /** Calls of one limiter that may wait in `takeOrWait` at once, over all keys. */
  readonly maxWaiters: number;
  /** Calls that may wait in `takeOrWait` at once for one key. */
  readonly maxWaitersPerKey: number;
}

/** The defaults: a waiting call holds about half a kilobyte (its promise, timer and receipt). */
export const defaultWaitingBounds: WaitingBounds = { maxWaiters: 10_000, maxWaitersPerKey: 1_000 };

/** The largest bound accepted: enough for any real queue, small enough to stay a bound. */
const MAX_BOUND = 10_000_000;

/**
 * Reads `maxWaiters` and `maxWaitersPerKey` of `createLimiter`.
 * @throws SluiceError `SLUICE_CONFIG` naming the option and what it must be (never the value)
 */
export function readWaitingBounds(
  name: string,
  maxWaiters: unknown,
  maxWaitersPerKey: unknown,
): WaitingBounds {
  const expected = `a whole number from 1 to ${MAX_BOUND}`;
  const check = (value: unknown, option: string, fallback: number): number => {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_BOUND)
      throw optionError(`limiter ${JSON.stringify(name)} ${option}`, expected);
    return value;
  };
  return {
    maxWaiters: check(maxWaiters, 'maxWaiters', defaultWaitingBounds.maxWaiters),
    maxWaitersPerKey: check(maxWaitersPerKey, 'maxWaitersPerKey', defaultWaitingBounds.maxWaitersPerKey),
  };
}

/**
 * The `takeOrWait` calls of one limiter that are in progress (reserving or waiting for their
 * slot), counted in all and per key, so that a crowd of waiters cannot hold memory without end:
 * a call beyond either bound is refused before anything is reserved. The per-key counts live in
 * a map that holds only keys with a call in progress, so it never has more than `maxWaiters`
 * entries.
 */
export class WaitingRoom {
  private readonly perKey = new Map<string, number>();
  private count = 0;

  constructor(private readonly bounds: WaitingBounds) {}

  /** Calls in progress, over all keys. */
  get size(): number {
    return this.count;
  }

  /** Calls in progress for `key`. */
  waitingFor(key: string): number {
    return this.perKey.get(key) ?? 0;
  }

  /**
   * Lets a call for `key` in, or throws when a bound is reached.
   * @throws SluiceError `SLUICE_WAIT_QUEUE_FULL` naming the limit and the bound, never the key
   */
  enter(name: string, key: string): void {
    const { maxWaiters, maxWaitersPerKey } = this.bounds;
    if (this.count >= maxWaiters)
      throw new SluiceError(
        'SLUICE_WAIT_QUEUE_FULL',
        `limiter ${JSON.stringify(name)}: ${maxWaiters} calls already wait for a slot (maxWaiters)`,
      );
    const here = this.perKey.get(key) ?? 0;
    if (here >= maxWaitersPerKey)
      throw new SluiceError(
        'SLUICE_WAIT_QUEUE_FULL',
        `limiter ${JSON.stringify(name)}: ${maxWaitersPerKey} calls already wait for a slot of this key (maxWaitersPerKey)`,
      );
    this.perKey.set(key, here + 1);
    this.count++;
  }

  /** A call for `key` that entered is over (admitted, refused, failed or aborted). */
  leave(key: string): void {
    const here = this.perKey.get(key);
    if (here === undefined) return;
    if (here <= 1) this.perKey.delete(key);
    else this.perKey.set(key, here - 1);
    this.count--;
  }
}
