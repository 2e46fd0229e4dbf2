import type { Rule } from '../../../core/rules/rule.js';
import { CalendarPeriods } from '../../../core/calendar.js';
import type { CalendarQuotaRule } from '../../../core/rules/calendar-quota.js';
import type { AlgorithmModule } from './algorithm-module.js';
import { readWindowRow, windowAdjustSql, windowFamily, windowRuleSql } from './window-counts.js';

/** The SQLSTATE `period_now` raises when the periods sent do not hold the store's time. */
const STALE_PERIODS = 'SLB01';

/**
 * The store's time in a "periods do not hold the store time" error (see `period_now` in the
 * migrations), or undefined for any other error: the store then sends the periods around it.
 */
export function stalePeriodsAt(error: unknown): number | undefined {
  const e = error as { code?: unknown; message?: unknown } | null;
  if (e?.code !== STALE_PERIODS || typeof e.message !== 'string') return undefined;
  const match = /(-?\d+)\s*$/.exec(e.message);
  return match === null ? undefined : Number(match[1]);
}

/**
 * The boundaries of the periods before, holding and after an instant, from the core's
 * CalendarPeriods (exact in every IANA zone: DST days of 23 and 25 hours, skipped and repeated
 * hours, half-hour shifts, months, week starts). The last four are reused while the instant
 * stays in the same period, so a decision costs two comparisons.
 */
class PeriodBounds {
  private bounds: number[] = [0, 0, 0, 0];
  private start = 0;
  private end = -1;

  constructor(private readonly periods: CalendarPeriods) {}

  around(now: number): number[] {
    const t = Math.floor(now);
    if (t >= this.start && t < this.end) return this.bounds;
    const periods = this.periods;
    const start = periods.startOf(t);
    const end = periods.endOf(t);
    this.bounds = [periods.startOf(start - 1), start, end, periods.endOf(end)];
    this.start = start;
    this.end = end;
    return this.bounds;
  }
}

/**
 * The start of a refunded take's period from its time `taken` (ms) and the four boundaries
 * around it ($3, as `bounds` of the rule's statements): NULL outside them (a time the
 * application did not expect, on a store clock far from its own), which gives nothing back.
 */
function takenPeriod(taken: string): string {
  return `CASE WHEN ${taken} < ($3::bigint[])[1] THEN NULL::bigint
      WHEN ${taken} < ($3::bigint[])[2] THEN ($3::bigint[])[1]
      WHEN ${taken} < ($3::bigint[])[3] THEN ($3::bigint[])[2]
      WHEN ${taken} < ($3::bigint[])[4] THEN ($3::bigint[])[3] END`;
}

/**
 * Calendar quota (src/core/rules/calendar-quota.ts) of any period in any zone, in `window_counters` (see
 * window-counts.ts): the window is the local period, its start and end computed by the core in
 * the application and sent as four boundaries (the previous, current and next period around the
 * time the statement is expected to decide at). PostgreSQL picks the period holding the
 * statement's time from them; when none does (a store clock far from the application's), the
 * statement raises and the store sends the periods around the store's time. Rule parameters: $1
 * rule, $2 the four boundaries (bigint[]), $3 penalty; a refund's: $1 rule, $2 the boundaries
 * around the statement's time, $3 those around the take's.
 */
export const calendarQuotaModule: AlgorithmModule = {
  kind: 'calendar-quota',
  bind(name: string, bound: Rule) {
    const rule = bound as CalendarQuotaRule;
    // Its own periods: the rule's cache keeps serving the decisions replayed in this process.
    const bounds = new PeriodBounds(new CalendarPeriods(rule.timeZone, rule.per, rule.weekStart));
    // Found now rather than on the first take: the first reading of a zone's clock loads the
    // platform's time-zone data, which takes milliseconds that a take's deadline should not pay.
    bounds.around(Date.now());
    rule.periods.startOf(Date.now());
    // The periods around a refunded take's time, kept apart: takes and refunds move both.
    const taken = new PeriodBounds(new CalendarPeriods(rule.timeZone, rule.per, rule.weekStart));
    return {
      ruleParams: (now) => [name, bounds.around(now), rule.penalty],
      adjustParams: (now, takenAt) => [name, bounds.around(now), taken.around(takenAt)],
      entryParams: (now) => bounds.around(now),
      read: readWindowRow,
      ...(rule.per === 'day' ? { carriedTimeZone: rule.timeZone } : {}),
    };
  },
  ruleSql: (names) => {
    const prelude = (now: string) => `SELECT a.now_ms,
    CASE WHEN a.now_ms < a.b[2] THEN a.b[1] WHEN a.now_ms < a.b[3] THEN a.b[2] ELSE a.b[3] END AS a_start,
    CASE WHEN a.now_ms < a.b[2] THEN a.b[2] WHEN a.now_ms < a.b[3] THEN a.b[3] ELSE a.b[4] END AS a_end,
    0::bigint AS w, false AS slides, false AS anchored, 0::bigint AS tail
  FROM (SELECT ${names.schema}.period_now(${now}, $2::bigint[]) AS now_ms, $2::bigint[] AS b) a`;
    return windowRuleSql(names, prelude, windowAdjustSql(prelude, 3, takenPeriod));
  },
  family: windowFamily,
  entryTypes: ['bigint', 'bigint', 'bigint', 'bigint'],
  entrySource: (first, names) => `SELECT y.ord, y.rule, y.bucket, y.cost, y.quota, y.now_ms,
    CASE WHEN y.now_ms < y.b1 THEN y.b0 WHEN y.now_ms < y.b2 THEN y.b1 ELSE y.b2 END AS a_start,
    CASE WHEN y.now_ms < y.b1 THEN y.b1 WHEN y.now_ms < y.b2 THEN y.b2 ELSE y.b3 END AS a_end,
    0::bigint AS w, false AS slides, false AS anchored, 0::bigint AS tail
  FROM (
    SELECT x.*, ${names.schema}.period_now(n.now_ms, ARRAY[x.b0, x.b1, x.b2, x.b3]) AS now_ms
    FROM unnest($${first}::bigint[], $${first + 1}::text[], $${first + 2}::text[], $${first + 3}::bigint[],
      $${first + 4}::bigint[], $${first + 5}::bigint[], $${first + 6}::bigint[], $${first + 7}::bigint[],
      $${first + 8}::bigint[]) AS x(ord, rule, bucket, cost, quota, b0, b1, b2, b3) CROSS JOIN n
  ) y`,
};
