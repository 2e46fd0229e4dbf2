import type { Decision } from '../decision.js';
import type { Duration } from '../duration.js';
import { AlignedWindowRule } from './aligned-window-rule.js';
import type { RuleAdjustment } from './rule.js';
import type { BucketState } from '../state.js';
import { adjustWindowCount } from './window-count.js';
import type { WindowBucketTake, WindowCountOptions } from './window-count-rule.js';

/** Options of {@link fixedWindow}. */
export interface FixedWindowOptions extends WindowCountOptions {
  /**
   * The window's length, a duration string from `"1ms"` to `"366d"`. Windows are aligned to the
   * Unix epoch: a `"1m"` window runs from :00 to :59 of every UTC minute, on every node alike.
   */
  window: Duration;
}

/**
 * The windows of envoyproxy/ratelimit's units, for a fixed window that admits what Envoy's rate
 * limit service admits: it counts in blocks aligned to the Unix epoch (the key of a hit is
 * `floor(now_s / divider) * divider`), a MONTH being 30 days and a YEAR 365.
 *
 * With `penalty: true`, `fixedWindow({ limit, window: ENVOY_UNIT_WINDOWS.MINUTE, penalty: true })`
 * admits exactly what Envoy admits for every sequence of hits of 1 to `limit` units: both count
 * refused hits. One difference remains: a single hit above the limit is refused by both, but
 * Envoy charges it and sluice does not (it can never be admitted, so sluice answers it before
 * asking a store).
 *
 * @example
 * const perMinute = fixedWindow({ limit: 100, window: ENVOY_UNIT_WINDOWS.MINUTE, penalty: true });
 */
export const ENVOY_UNIT_WINDOWS = {
  SECOND: '1s',
  MINUTE: '1m',
  HOUR: '1h',
  DAY: '1d',
  WEEK: '7d',
  MONTH: '30d',
  YEAR: '365d',
} as const;

/**
 * A fixed window: at most `limit` units per window of `window`, windows aligned to the Unix epoch.
 * State per key: the count and the start of the window it belongs to.
 *
 * Cheap and predictable, but a client can spend `limit` at the end of one window and `limit`
 * again at the start of the next: up to twice the limit within one window's length. Use a
 * sliding window or a token bucket where that burst matters.
 *
 * @example
 * const rule: FixedWindowRule = fixedWindow({ limit: 100, window: '1m' });
 * rule.windowMs; // 60000
 */
export class FixedWindowRule extends AlignedWindowRule {
  readonly kind = 'fixed-window' as const;
  readonly shape = 'window-count' as const;

  constructor(options: FixedWindowOptions) {
    super('fixedWindow', options);
  }

  /** Time until the end of the window the count belongs to: after it, the count is spent. */
  bucketHorizonMs(state: BucketState, now: number): number {
    if (!(state.value > 0)) return 0;
    const end = state.window + this.windowMs;
    return end > now ? end - now : 0;
  }

  /** A refund comes off the take's window while it is the state's; a charge goes to the current one. */
  adjust(state: BucketState, { now, delta, takenAt }: RuleAdjustment): boolean {
    const w = this.windowMs;
    const aligned = Math.floor(now / w) * w;
    const start = state.window > aligned ? state.window : aligned;
    return adjustWindowCount(state, Math.floor(takenAt / w) * w, start, delta);
  }

  decideBucket(state: BucketState, take: WindowBucketTake, commit: boolean): Decision {
    const now = take.now;
    const windowMs = this.windowMs;
    const aligned = Math.floor(now / windowMs) * windowMs;
    // A clock stepped back (or a node whose clock lags the one that wrote the state) counts
    // against the stored window, which never moves backwards.
    const start = state.window > aligned ? state.window : aligned;
    return this.countIn(state, start, start + windowMs, take, commit);
  }
}

/**
 * A fixed window: at most `limit` units per `window`, windows aligned to the Unix epoch.
 *
 * @example
 * const search = fixedWindow({ limit: 100, window: '1m' });        // 100 per UTC minute
 * const strict = fixedWindow({ limit: 5, window: '10s', penalty: true });
 */
export function fixedWindow(options: FixedWindowOptions): FixedWindowRule {
  return new FixedWindowRule(options);
}
