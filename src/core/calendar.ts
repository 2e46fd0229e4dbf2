import { optionError } from './errors.js';
import { ZoneClock } from './zone-clock.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/**
 * The calendar periods a quota can count per.
 * @example
 * calendarQuota({ limit: 500, per: 'week' });
 */
export type CalendarUnit = 'hour' | 'day' | 'week' | 'month';

/**
 * An ISO weekday: 1 = Monday … 7 = Sunday.
 * @example
 * calendarQuota({ limit: 500, per: 'week', weekStart: 7 }); // weeks from Sunday
 */
export type IsoWeekday = 1 | 2 | 3 | 4 | 5 | 6 | 7;

const units: readonly string[] = ['hour', 'day', 'week', 'month'];

/**
 * Calendar periods (hours, days, weeks or months) of one time zone as instants: where the period
 * holding an instant starts and where it ends, exact in every IANA zone:
 *
 * - an hour starts at local :00 (in Asia/Kolkata that is UTC :30); the hour repeated when clocks
 *   go back is a second hour of its own, and a skipped hour does not exist (where clocks jump by
 *   half an hour, the hour they land in is half an hour long);
 * - a day runs from the first instant of a local date to the first instant of the next one: 23,
 *   24 or 25 hours, and where midnight is skipped it starts at the first instant that exists;
 * - a week starts at the first instant of the local date whose weekday is `weekStart`;
 * - a month starts at the first instant of local day 1.
 *
 * Uses the platform's time-zone database through `Intl.DateTimeFormat`. The last period found is
 * cached, so a decision inside the current period costs two comparisons.
 *
 * @example
 * const weeks = new CalendarPeriods('America/New_York', 'week', 7); // weeks from Sunday
 * weeks.startOf(Date.now()); // the instant the current local week began
 */
export class CalendarPeriods {
  /** The IANA time zone, e.g. `"Europe/Berlin"`, or `"UTC"`. */
  readonly timeZone: string;
  /** What one period is. */
  readonly per: CalendarUnit;
  /** The ISO weekday weeks start on (1 = Monday); 1 unless `per` is `'week'`. */
  readonly weekStart: IsoWeekday;
  private readonly zone: ZoneClock;
  private cachedStart = 0;
  private cachedEnd = -1;

  /**
   * @param timeZone an IANA time zone
   * @default per "day"
   * @default weekStart 1 (Monday); only meaningful with per "week"
   * @throws SluiceError `SLUICE_CONFIG` naming the `calendarQuota` option that is out of range
   */
  constructor(timeZone: string, per: CalendarUnit = 'day', weekStart: IsoWeekday = 1) {
    this.zone = new ZoneClock(timeZone, 'calendarQuota timeZone');
    if (typeof per !== 'string' || !units.includes(per))
      throw optionError('calendarQuota per', '"hour", "day", "week" or "month"');
    if (!Number.isInteger(weekStart) || weekStart < 1 || weekStart > 7)
      throw optionError('calendarQuota weekStart', 'an ISO weekday from 1 (Monday) to 7 (Sunday)');
    this.timeZone = this.zone.timeZone;
    this.per = per;
    this.weekStart = weekStart;
  }

  /** Start (inclusive) of the period holding `now`, in ms since the Unix epoch. */
  startOf(now: number): number {
    if (now >= this.cachedStart && now < this.cachedEnd) return this.cachedStart;
    this.locate(now);
    return this.cachedStart;
  }

  /** End (exclusive) of the period holding `now`: the start of the next period. */
  endOf(now: number): number {
    if (now >= this.cachedStart && now < this.cachedEnd) return this.cachedEnd;
    this.locate(now);
    return this.cachedEnd;
  }

  private locate(now: number): void {
    if (this.per === 'hour') {
      this.cachedStart = this.zone.utc ? Math.floor(now / HOUR_MS) * HOUR_MS : this.startOfHour(now);
      this.cachedEnd = this.zone.utc ? this.cachedStart + HOUR_MS : this.endOfHour(now);
      return;
    }
    // Periods of whole local dates. A local date is written as the UTC instant of its midnight,
    // so that date arithmetic is Date.UTC's (which normalises overflowing days and months).
    const w = this.zone.utc ? undefined : this.zone.wallClock(now);
    const today = w === undefined ? Math.floor(now / DAY_MS) * DAY_MS : Date.UTC(w[0], w[1] - 1, w[2]);
    let first = this.firstDateOf(today);
    let start = this.startOfDate(first);
    let end = this.startOfDate(this.nextDate(first));
    // A date that comes round again after clocks went back across midnight belongs to the period
    // that its instants fall in, not to the one its label names.
    while (now >= end) {
      first = this.nextDate(first);
      start = end;
      end = this.startOfDate(this.nextDate(first));
    }
    this.cachedStart = start;
    this.cachedEnd = end;
  }

  /** The first local date of the period holding the local date `date`. */
  private firstDateOf(date: number): number {
    if (this.per === 'day') return date;
    if (this.per === 'week') {
      // Day 0 of the Unix epoch was a Thursday (ISO weekday 4).
      const weekday = ((((date / DAY_MS + 3) % 7) + 7) % 7) + 1;
      return date - ((weekday - this.weekStart + 7) % 7) * DAY_MS;
    }
    const d = new Date(date);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }

  /** The first local date of the period after the one starting on `first`. */
  private nextDate(first: number): number {
    if (this.per === 'day') return first + DAY_MS;
    if (this.per === 'week') return first + 7 * DAY_MS;
    const d = new Date(first);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }

  /**
   * The first instant of the local date whose midnight is `wallMidnight` (written as UTC). Usually
   * local midnight; where midnight is repeated, the earlier one; where it is skipped, the moment
   * the clocks jump past it; where the whole date is skipped, the first instant of the next one.
   */
  private startOfDate(wallMidnight: number): number {
    if (this.zone.utc) return wallMidnight;
    // At most one offset change lies within a day of any midnight; try the offsets on both sides.
    const offsetBefore = this.zone.offsetAt(wallMidnight - DAY_MS);
    const offsetAfter = this.zone.offsetAt(wallMidnight + DAY_MS);
    const early = wallMidnight - offsetBefore;
    const late = wallMidnight - offsetAfter;
    const earlyValid = this.zone.offsetAt(early) === offsetBefore;
    const lateValid = this.zone.offsetAt(late) === offsetAfter;
    if (earlyValid && lateValid) return early < late ? early : late;
    if (earlyValid) return early;
    if (lateValid) return late;
    // Midnight does not exist: the date begins when the clocks jump forward past it.
    return early;
  }

  /** Start of the local hour holding `now` (the zone is not UTC). */
  private startOfHour(now: number): number {
    const zone = this.zone;
    const offset = zone.offsetAt(now);
    const hour = Math.floor((now + offset) / HOUR_MS) * HOUR_MS;
    const candidate = hour - offset;
    if (zone.offsetAt(candidate) === offset) return candidate;
    // The offset changed after local :00 on today's offset: at `change`, within this hour.
    const change = zone.changeAfter(candidate, now);
    const before = zone.offsetAt(change - 1);
    // Clocks went back: the repeated stretch is an hour of its own.
    if (offset < before) return change;
    // Clocks went forward: if they jumped within one local hour, that hour began before the jump.
    const hourBefore = Math.floor((change - 1 + before) / HOUR_MS) * HOUR_MS;
    return hourBefore === hour ? this.startOfHour(change - 1) : change;
  }

  /** End of the local hour holding `now` (the zone is not UTC). */
  private endOfHour(now: number): number {
    const zone = this.zone;
    const offset = zone.offsetAt(now);
    const hour = Math.floor((now + offset) / HOUR_MS) * HOUR_MS;
    const candidate = hour + HOUR_MS - offset;
    const change = zone.changeAfter(now, candidate - 1);
    if (change === Infinity) return candidate;
    const after = zone.offsetAt(change);
    if (after < offset) return change;
    const hourAfter = Math.floor((change + after) / HOUR_MS) * HOUR_MS;
    return hourAfter === hour ? this.endOfHour(change) : change;
  }
}

/**
 * Calendar days of one time zone: {@link CalendarPeriods} per day, for the shared stores that
 * still send days only.
 * @example
 * new CalendarDays('Europe/Berlin').endOf(Date.now()); // the next local midnight
 */
export class CalendarDays extends CalendarPeriods {
  constructor(timeZone: string) {
    super(timeZone, 'day');
  }
}
