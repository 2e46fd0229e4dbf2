import { parseDuration, type Duration } from './duration.js';
import { configError } from './errors.js';

/**
 * A clock: milliseconds since the Unix epoch. Limiters take one (`clock` option) so that tests
 * can move time instead of sleeping. Stores shared by several nodes use their own clock
 * instead.
 */
export type Clock = () => number;

/** The wall clock, `Date.now`. The default of every limiter. */
export const systemClock: Clock = Date.now;

/** A clock that only moves when told to; see {@link manualClock}. */
export interface ManualClock extends Clock {
  /**
   * Moves the clock forward by a duration (`"1m"`) or a number of milliseconds (`500`): a test
   * clock counts in ms, so a bare number here is unambiguous, unlike a rule's period.
   */
  advance(by: Duration | number): number;
  /** Sets the clock to an instant (ms since the Unix epoch, or a Date). */
  set(to: number | Date): number;
}

/**
 * A clock for tests: starts at `start` and moves only when advanced.
 *
 * @param start ms since the Unix epoch or a Date. @default 0
 * @example
 * const clock = manualClock(Date.UTC(2026, 0, 1));
 * const limiter = createLimiter({ name: 'login', rule, store, clock });
 * clock.advance('10m');
 */
export function manualClock(start: number | Date = 0): ManualClock {
  let now = toMs(start);
  const clock = (() => now) as ManualClock;
  clock.advance = (by) => {
    if (typeof by === 'number') {
      if (!Number.isSafeInteger(by) || by < 0)
        throw configError('manualClock.advance', 'a whole number of ms >= 0 or a duration string', by);
      now += by;
    } else {
      now += parseDuration(by, 'manualClock.advance');
    }
    return now;
  };
  clock.set = (to) => {
    now = toMs(to);
    return now;
  };
  return clock;
}

function toMs(value: number | Date): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms))
    throw configError('manualClock time', 'a finite number of ms or a valid Date', value);
  return ms;
}
