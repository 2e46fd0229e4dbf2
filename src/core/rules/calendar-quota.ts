import { CalendarPeriods, type CalendarUnit, type IsoWeekday } from '../calendar.js';
import type { Decision } from '../decision.js';
import { MAX_COUNT } from '../bounds.js';
import { optionError } from '../errors.js';
import { checkOptionKeys } from '../options.js';
import type { RuleAdjustment } from './rule.js';
import type { BucketState } from '../state.js';
import { adjustWindowCount } from './window-count.js';
import { WindowCountRule, type WindowBucketTake } from './window-count-rule.js';
import { readBlockOptions, type BlockOptions } from './lockout.js';

/** Options of {@link calendarQuota}. */
export interface CalendarQuotaOptions {
  /**
   * Units per calendar period. A whole number from 1 to {@link MAX_COUNT} (10^12). A take may
   * pass its own limit instead (a per-key limit from data, e.g. an API key's daily limit).
   */
  limit: number;
  /**
   * The calendar period the quota counts per: a local `'hour'` (from local :00), `'day'`,
   * `'week'` (from `weekStart`) or `'month'` (from local day 1).
   * @default "day"
   */
  per?: CalendarUnit;
  /**
   * The IANA time zone whose calendar counts, e.g. `"Europe/Berlin"`. Periods are local: a day
   * is 23 hours long on the spring DST change and 25 on the autumn one; the hour repeated when
   * clocks go back is a second hour with a quota of its own.
   * @default "UTC"
   */
  timeZone?: string;
  /**
   * The ISO weekday a week starts on: 1 = Monday … 7 = Sunday. Only with `per: 'week'`.
   * @default 1
   */
  weekStart?: IsoWeekday;
  /**
   * When true, refused takes are counted too (a count saturates at 2 × {@link MAX_COUNT}). Off
   * by default: a refusal consumes nothing.
   * @default false
   */
  penalty?: boolean;
  /** A lockout: a refusal blocks the key for a while, longer when it is refused again soon. */
  block?: BlockOptions;
}

const calendarQuotaKeys = ['limit', 'per', 'timeZone', 'weekStart', 'penalty', 'block'] as const;

/**
 * A quota of N per local calendar period (hour, day, week or month): the count resets at the
 * start of each period. State per key: the count and the start of the period it belongs to.
 *
 * @example
 * const rule: CalendarQuotaRule = calendarQuota({ limit: 10, per: 'month', timeZone: 'Asia/Kolkata' });
 * rule.periods.endOf(Date.now()); // the first instant of next month in Kolkata
 */
export class CalendarQuotaRule extends WindowCountRule {
  readonly kind = 'calendar-quota' as const;
  readonly shape = 'window-count' as const;
  /** What one period is. */
  readonly per: CalendarUnit;
  /** The time zone whose calendar counts. */
  readonly timeZone: string;
  /** The ISO weekday weeks start on (1 unless `per` is `'week'`). */
  readonly weekStart: IsoWeekday;
  /** Period boundaries of `timeZone`: what a store needs to find the period of an instant. */
  readonly periods: CalendarPeriods;

  constructor(options: CalendarQuotaOptions) {
    checkOptionKeys('calendarQuota', options, calendarQuotaKeys);
    const { limit, per = 'day', timeZone = 'UTC', weekStart, penalty = false } = options;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_COUNT)
      throw optionError('calendarQuota limit', `a whole number from 1 to ${MAX_COUNT}`);
    if (typeof penalty !== 'boolean') throw optionError('calendarQuota penalty', 'a boolean');
    if (weekStart !== undefined && per !== 'week')
      throw optionError('calendarQuota weekStart', 'left out unless per is "week"');
    const periods = new CalendarPeriods(timeZone, per, weekStart ?? 1);
    super({ limit, penalty, block: readBlockOptions('calendarQuota', options.block) });
    this.periods = periods;
    this.per = periods.per;
    this.timeZone = periods.timeZone;
    this.weekStart = periods.weekStart;
  }

  /** An untouched quota. */
  initialState(now: number): BucketState {
    return { value: 0, window: this.periods.startOf(now), previous: 0, blockedUntil: 0, blockMs: 0 };
  }

  /** Time until the end of the period the count belongs to: after it, the count is spent. */
  bucketHorizonMs(state: BucketState, now: number): number {
    const end = state.value > 0 ? this.periods.endOf(state.window) : now;
    return end > now ? end - now : 0;
  }

  /** A refund comes off the take's period while it is the state's; a charge goes to the current one. */
  adjust(state: BucketState, { now, delta, takenAt }: RuleAdjustment): boolean {
    const current = this.periods.startOf(now);
    const start = state.window > current ? state.window : current;
    return adjustWindowCount(state, this.periods.startOf(takenAt), start, delta);
  }

  /** The quota's own decision, before any lockout. */
  decideBucket(state: BucketState, take: WindowBucketTake, commit: boolean): Decision {
    const now = take.now;
    const current = this.periods.startOf(now);
    // A clock stepped back (or a node whose clock lags the one that wrote the state) lands in a
    // period earlier than the stored one: that take counts against the stored period, which
    // never moves backwards, so stepping a clock back can neither reset a count nor spend a
    // period twice.
    const behind = state.window > current;
    const start = behind ? state.window : current;
    const end = behind ? this.periods.endOf(start) : this.periods.endOf(now);
    return this.countIn(state, start, end, take, commit);
  }
}

/**
 * A quota of `limit` per local calendar period (`per`, by default a day) in `timeZone`.
 *
 * @example
 * const reports = calendarQuota({ limit: 10 });                              // 10 a day, UTC days
 * const local = calendarQuota({ limit: 10, timeZone: 'Europe/Berlin' });
 * const weekly = calendarQuota({ limit: 500, per: 'week', weekStart: 7, timeZone: 'America/New_York' });
 * const monthly = calendarQuota({ limit: 10_000, per: 'month' });
 * await reportsLimiter.take(key, { limit: apiKey.dailyLimit });            // per-key limit
 */
export function calendarQuota(options: CalendarQuotaOptions): CalendarQuotaRule {
  return new CalendarQuotaRule(options);
}
