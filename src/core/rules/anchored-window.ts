import type { Decision } from '../decision.js';
import type { Duration } from '../duration.js';
import type { BucketState } from '../state.js';
import type { RuleAdjustment } from './rule.js';
import { readWindowOptions } from './window-options.js';
import { adjustWindowCount } from './window-count.js';
import { WindowCountRule, type WindowBucketTake, type WindowCountOptions } from './window-count-rule.js';

/** Options of {@link anchoredWindow}. */
export interface AnchoredWindowOptions extends WindowCountOptions {
  /**
   * The window's length, a duration string from `"1ms"` to `"366d"`. Each key's window starts
   * at its first take (not on the clock's grid) and runs for this long.
   */
  window: Duration;
}

/**
 * A fixed window anchored at each key's first take: at most `limit` units per window of
 * `periodMs`, the window starting when the key first takes rather than on the Unix epoch's grid.
 * This is what express-rate-limit's memory store and rate-limiter-flexible count by default, so
 * a limit moved from them admits the same requests. State per key: the count and its window's
 * start (`'window-count'`, each key with a start of its own).
 *
 * - A key's window runs while its count is above 0 and `now < start + periodMs`; otherwise a
 *   take starts a new window at `now` (a refused take starts none, unless the rule has
 *   `penalty`).
 * - A take of `cost` fits when `count + cost <= limit`. A refusal's `retryAfterMs` and every
 *   decision's `resetMs` are the time to the window's end (for a key with no running window, a
 *   whole window).
 * - A refund (`adjust`, delta < 0) comes off the count only when the take was made in the
 *   running window (`start <= takenAt < start + periodMs`), never below 0; a charge (delta > 0)
 *   goes to the running window, or starts one at `now`.
 * - Its horizon is the window's end while the count is above 0, else 0.
 *
 * It has no `windowMs`: the rule contract keeps that for windows aligned to the Unix epoch,
 * which every key shares. Like the fixed window, a client can spend `limit` at the end of its
 * window and `limit` again right after; unlike it, the boundary is the client's own.
 *
 * @example
 * const rule: AnchoredWindowRule = anchoredWindow({ limit: 100, window: '15m' });
 * rule.periodMs; // 900000
 */
export class AnchoredWindowRule extends WindowCountRule {
  readonly kind = 'anchored-window' as const;
  readonly shape = 'window-count' as const;
  /** The window's length in ms, from each key's own start. */
  readonly periodMs: number;

  constructor(options: AnchoredWindowOptions) {
    const settings = readWindowOptions('anchoredWindow', options);
    super(settings);
    this.periodMs = settings.windowMs;
  }

  /** No count, and no window running: the first take starts one. */
  initialState(now: number): BucketState {
    return { value: 0, window: now, previous: 0, blockedUntil: 0, blockMs: 0 };
  }

  /** Time until the running window's end; 0 when none runs. */
  bucketHorizonMs(state: BucketState, now: number): number {
    const end = state.window + this.periodMs;
    return state.value > 0 && end > now ? end - now : 0;
  }

  /**
   * A refund comes off the running window's count when the take was made in it; a charge goes
   * to the running window, or starts one at `now`.
   */
  adjust(state: BucketState, { now, delta, takenAt }: RuleAdjustment): boolean {
    const start = this.startAt(state, now);
    // A take's window cannot be found from its time alone (it depends on the key's history):
    // it is the running one when the take lies within it, and unknown (nothing given back)
    // otherwise.
    const running = start === state.window && state.value > 0;
    const inWindow = running && takenAt >= start && takenAt < start + this.periodMs;
    return adjustWindowCount(state, inWindow ? start : NaN, start, delta);
  }

  /** The window's own decision, before any lockout. */
  decideBucket(state: BucketState, take: WindowBucketTake, commit: boolean): Decision {
    const now = take.now;
    const start = this.startAt(state, now);
    return this.countIn(state, start, start + this.periodMs, take, commit);
  }

  /**
   * The start of the window a take at `now` counts in: the key's while it runs (a clock stepped
   * back inside it still counts there), else `now`.
   */
  private startAt(state: BucketState, now: number): number {
    return state.value > 0 && now < state.window + this.periodMs ? state.window : now;
  }
}

/**
 * A fixed window that starts at each key's first take: at most `limit` units per `window` from
 * then, as express-rate-limit's memory store and rate-limiter-flexible count.
 *
 * @example
 * const login = anchoredWindow({ limit: 5, window: '15m' });         // 5 per 15 minutes from the first try
 * const strict = anchoredWindow({ limit: 100, window: '1h', penalty: true });
 */
export function anchoredWindow(options: AnchoredWindowOptions): AnchoredWindowRule {
  return new AnchoredWindowRule(options);
}
