import { MAX_PENALTY_COUNT } from '../bounds.js';
import { makeDecision, type Decision } from '../decision.js';
import type { Duration } from '../duration.js';
import type { WindowBucketTake, WindowCountOptions } from './window-count-rule.js';
import { AlignedWindowRule } from './aligned-window-rule.js';
import type { RuleAdjustment } from './rule.js';
import type { BucketState } from '../state.js';

/** Options of {@link slidingWindow}. */
export interface SlidingWindowOptions extends WindowCountOptions {
  /**
   * The window's length, a duration string from `"1ms"` to `"366d"`. Counts are kept per window
   * aligned to the Unix epoch, and the previous window's count weighs on a decision by the part
   * of it that a window ending now still covers.
   */
  window: Duration;
}

/**
 * A sliding window estimated from two fixed windows, as Cloudflare and `@upstash/ratelimit` do:
 * a take at `elapsed` ms into the current window is admitted when
 * `previous × (window − elapsed) / window + current + cost <= limit`. Two counts per key, no log
 * of requests.
 *
 * The weighted previous count is computed as `Math.ceil((previous * (W − elapsed)) / W)` on
 * doubles, in exactly that order, so that the Lua and SQL translations of the shared stores agree
 * with it bit for bit; rounding up makes it the exact rational comparison of the formula above
 * while `previous × W < 2^53`.
 *
 * What it guarantees: never more than `limit` admitted within one aligned window, and at most
 * 2 × `limit` within any interval one window long (the estimate assumes the previous window's
 * takes were spread evenly; where they were not, it can admit more than `limit` in a window that
 * straddles two aligned ones, never more than twice).
 *
 * @example
 * const rule: SlidingWindowRule = slidingWindow({ limit: 100, window: '1m' });
 * rule.windowMs; // 60000
 */
export class SlidingWindowRule extends AlignedWindowRule {
  readonly kind = 'sliding-window' as const;
  readonly shape = 'sliding-count' as const;

  constructor(options: SlidingWindowOptions) {
    super('slidingWindow', options);
  }

  /**
   * A count weighs until the end of the window after its own (as that window's previous count);
   * a previous count alone, until the end of the state's window.
   */
  bucketHorizonMs(state: BucketState, now: number): number {
    const w = this.windowMs;
    let end: number;
    if (state.value > 0) end = state.window + 2 * w;
    else if (state.previous > 0) end = state.window + w;
    else return 0;
    return end > now ? end - now : 0;
  }

  /**
   * A refund comes off the take's window while it is the state's current one, or off the
   * previous count while it still weighs as that; a charge goes to the current window.
   */
  adjust(state: BucketState, { now, delta, takenAt }: RuleAdjustment): boolean {
    const w = this.windowMs;
    if (delta < 0) {
      const taken = Math.floor(takenAt / w) * w;
      if (state.window === taken && state.value > 0) {
        const left = state.value + delta;
        state.value = left > 0 ? left : 0;
        return true;
      }
      if (state.window === taken + w && state.previous > 0) {
        const left = state.previous + delta;
        state.previous = left > 0 ? left : 0;
        return true;
      }
      return false;
    }
    if (delta === 0) return false;
    const aligned = Math.floor(now / w) * w;
    charge(state, state.window > aligned ? state.window : aligned, w, delta);
    return true;
  }

  decideBucket(state: BucketState, { now, name, cost, limit }: WindowBucketTake, commit: boolean): Decision {
    const w = this.windowMs;
    const quota = limit === undefined ? this.limit : limit;
    const aligned = Math.floor(now / w) * w;
    let start: number;
    let elapsed: number;
    let cur: number;
    let prev: number;
    if (state.window > aligned) {
      // A clock stepped back (or a node whose clock lags the one that wrote the state): the take
      // counts against the stored window, as if at its first instant; windows never move back.
      start = state.window;
      elapsed = 0;
      cur = state.value;
      prev = state.previous;
    } else {
      start = aligned;
      elapsed = now - aligned;
      if (state.window === aligned) {
        cur = state.value;
        prev = state.previous;
      } else if (state.window === aligned - w) {
        cur = 0;
        prev = state.value;
      } else {
        cur = 0;
        prev = 0;
      }
    }
    const weighted = weigh(prev, w, elapsed);
    const left = quota - cur - weighted;
    const remaining = left > 0 ? left : 0;
    const asked = cost === 0 ? 1 : cost;
    const resetMs = start + w - now;

    // One exit below, so that every outcome builds its decision in the one place.
    let allowed = false;
    let rest = remaining;
    let retryAfterMs = Infinity;
    if (asked <= remaining) {
      allowed = true;
      retryAfterMs = 0;
      if (cost > 0) {
        rest = remaining - cost;
        if (commit) charge(state, start, w, cost);
      }
    } else if (asked <= quota) {
      // The advice is for the state as it was before this take: a retry at now + retryAfterMs is
      // admitted if nothing else is charged meanwhile (under penalty, this refusal is charged).
      retryAfterMs = start + this.waitFrom(now > start ? now - start : 0, cur, prev, quota - asked) - now;
      if (commit && this.penalty && cost > 0) charge(state, start, w, cost);
    }
    return makeDecision({
      allowed,
      name,
      limit: quota,
      capacity: quota,
      remaining: rest,
      cost,
      retryAfterMs,
      resetMs,
      windowMs: w,
    });
  }

  /**
   * Milliseconds after the current window's start from which a take that leaves `room` of the
   * quota (the quota less the take) is admitted if nothing else is charged, `from` ms into the
   * window, `cur` counted in it and `prev` in the one before: the least whole number, found on
   * the same double arithmetic as the decision so that it is exact for it. `room >= 0`.
   */
  private waitFrom(from: number, cur: number, prev: number, room: number): number {
    const w = this.windowMs;
    // Later in the current window: only the weight of the previous count falls.
    const inCurrent = earliest(prev, w, room - cur, from);
    if (inCurrent < w) return inCurrent;
    // In the next window this window's count is the previous one, and nothing is current.
    const inNext = earliest(cur, w, room, 0);
    if (inNext < w) return w + inNext;
    // Two windows on, nothing weighs any more.
    return 2 * w;
  }
}

/** The previous window's count as it weighs `elapsed` ms into the current one (see the class). */
function weigh(prev: number, w: number, elapsed: number): number {
  return prev === 0 ? 0 : Math.ceil((prev * (w - elapsed)) / w);
}

/** Charges `cost` to the window starting at `start`, rolling the state into it first. */
function charge(state: BucketState, start: number, w: number, cost: number): void {
  if (state.window === start) {
    const charged = state.value + cost;
    // Only a penalty can take a count past the limit; it stops at a bound that keeps it exact.
    state.value = charged < MAX_PENALTY_COUNT ? charged : MAX_PENALTY_COUNT;
    return;
  }
  state.previous = state.window === start - w ? state.value : 0;
  state.window = start;
  state.value = cost;
}

/**
 * The least `elapsed` in [from, w) at which `weigh(prev, w, elapsed) <= room`, or `w` when there
 * is none. `weigh` falls as `elapsed` grows, so the exact bound `w − floor(room × w / prev)` is
 * computed on doubles and then corrected by a step or two against `weigh` itself.
 */
function earliest(prev: number, w: number, room: number, from: number): number {
  if (room < 0) return w;
  if (weigh(prev, w, from) <= room) return from;
  let e = w - Math.floor((room * w) / prev);
  if (e <= from) e = from + 1;
  if (e > w) e = w;
  while (e > from + 1 && weigh(prev, w, e - 1) <= room) e--;
  while (e < w && weigh(prev, w, e) > room) e++;
  return e;
}

/**
 * A sliding window: about `limit` units per any `window`, estimated from the counts of the
 * current and the previous epoch-aligned windows (see {@link SlidingWindowRule}).
 *
 * @example
 * const api = slidingWindow({ limit: 600, window: '1m' });
 * const strict = slidingWindow({ limit: 10, window: '10s', penalty: true });
 */
export function slidingWindow(options: SlidingWindowOptions): SlidingWindowRule {
  return new SlidingWindowRule(options);
}
