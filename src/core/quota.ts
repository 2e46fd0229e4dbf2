import { CalendarDays } from './calendar.js';
import { makeDecision, type Decision } from './decision.js';
import { MAX_COUNT } from './bounds.js';
import { configError } from './errors.js';
import { checkOptionKeys } from './options.js';
import type { Rule } from './algorithm.js';
import type { BucketState } from './state.js';

/** Options of {@link calendarQuota}. */
export interface CalendarQuotaOptions {
  /**
   * Units per calendar day. A whole number from 1 to {@link MAX_COUNT} (10^12). A take may pass
   * its own limit instead
   * (a per-key limit from data, e.g. ADR-0057's `api_keys.daily_limit`).
   */
  limit: number;
  /**
   * The IANA time zone whose calendar days count, e.g. `"Europe/Berlin"`. Days are local days:
   * 23 hours long on the spring DST change and 25 on the autumn one.
   * @default "UTC"
   */
  timeZone?: string;
  /**
   * When true, refused takes are counted too. Off by default: a refusal consumes nothing.
   * @default false
   */
  penalty?: boolean;
}

const calendarQuotaKeys = ['limit', 'timeZone', 'penalty'] as const;

/**
 * A quota of N per calendar day: the count resets at the start of each local day.
 * State per key: the count and the start of the day it belongs to.
 */
export class CalendarQuotaRule implements Rule {
  readonly kind = 'calendar-quota' as const;
  readonly shape = 'window-count' as const;
  /** A take may pass its own limit (a per-key limit from data). */
  readonly acceptsCallLimit = true;
  /** The default units per day (a take may pass its own). */
  readonly limit: number;
  /** The time zone whose days count. */
  readonly timeZone: string;
  /** Whether refusals are counted. */
  readonly penalty: boolean;
  /** Day boundaries of `timeZone`. */
  readonly days: CalendarDays;

  constructor(options: CalendarQuotaOptions) {
    checkOptionKeys('calendarQuota', options, calendarQuotaKeys);
    const { limit, timeZone = 'UTC', penalty = false } = options;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_COUNT)
      throw configError('calendarQuota limit', `a whole number from 1 to ${MAX_COUNT}`, limit);
    if (typeof penalty !== 'boolean') throw configError('calendarQuota penalty', 'a boolean', penalty);
    this.days = new CalendarDays(timeZone);
    this.limit = limit;
    this.timeZone = this.days.timeZone;
    this.penalty = penalty;
  }

  /** The per-call limit, or the rule's. */
  limitFor(limit: number | undefined): number {
    return limit === undefined ? this.limit : limit;
  }

  /** The most one take can ever get: the per-call limit, or the rule's. */
  capacityFor(limit: number | undefined): number {
    return limit === undefined ? this.limit : limit;
  }

  /** An untouched quota. */
  initialState(now: number): BucketState {
    return { value: 0, window: this.days.startOf(now), previous: 0 };
  }

  /** A quota with no count has nothing to remember. */
  floorValue(): number {
    return 0;
  }

  /** Time until the end of the day the count belongs to: after it, the count is spent. */
  horizonMs(state: BucketState, now: number): number {
    if (!(state.value > 0)) return 0;
    const end = this.days.endOf(state.window);
    return end > now ? end - now : 0;
  }

  decide(
    state: BucketState,
    now: number,
    _epoch: number,
    name: string,
    cost: number,
    limit: number | undefined,
    commit: boolean,
  ): Decision {
    const quota = limit === undefined ? this.limit : limit;
    const today = this.days.startOf(now);
    // A clock stepped back (or a node whose clock lags the one that wrote the state) lands in a
    // day earlier than the stored one: that take counts against the stored day, which never
    // moves backwards, so stepping a clock back can neither reset a count nor spend a day twice.
    const behind = state.window > today;
    const start = behind ? state.window : today;
    const end = behind ? this.days.endOf(start) : this.days.endOf(now);
    const resetMs = end - now;
    const windowMs = end - start;
    // A count from an earlier day is spent; the new day starts at zero.
    const used = state.window === start ? state.value : 0;
    const asked = cost === 0 ? 1 : cost;
    const left = used >= quota ? 0 : quota - used;

    if (asked > quota)
      return makeDecision(false, name, quota, quota, left, cost, Infinity, resetMs, windowMs);
    if (asked <= left) {
      if (cost === 0) return makeDecision(true, name, quota, quota, left, 0, 0, resetMs, windowMs);
      if (commit) {
        state.value = used + cost;
        state.window = start;
      }
      return makeDecision(true, name, quota, quota, left - cost, cost, 0, resetMs, windowMs);
    }
    if (commit && this.penalty && cost > 0) {
      state.value = used + cost;
      state.window = start;
    }
    return makeDecision(false, name, quota, quota, left, cost, resetMs, resetMs, windowMs);
  }
}

/**
 * A quota of `limit` per calendar day in `timeZone`.
 *
 * @example
 * const reports = calendarQuota({ limit: 10 });                              // 10 a day, UTC days
 * const local = calendarQuota({ limit: 10, timeZone: 'Europe/Berlin' });
 * await reportsLimiter.take(key, { limit: apiKey.dailyLimit });            // per-key limit
 */
export function calendarQuota(options: CalendarQuotaOptions): CalendarQuotaRule {
  return new CalendarQuotaRule(options);
}
