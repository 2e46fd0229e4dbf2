import { configError } from './errors.js';

const DAY_MS = 86_400_000;

/**
 * Calendar days of one time zone as instants: where a day starts and ends, correct on days of
 * 23 and 25 hours (DST changes) and where midnight itself is skipped or repeated.
 *
 * Uses the platform's time-zone database through `Intl.DateTimeFormat`; the last window found is
 * cached, so a decision inside the current day costs two comparisons.
 */
export class CalendarDays {
  /** The IANA time zone, e.g. `"Europe/Berlin"`, or `"UTC"`. */
  readonly timeZone: string;
  private readonly utc: boolean;
  private readonly format: Intl.DateTimeFormat | undefined;
  private cachedStart = 0;
  private cachedEnd = -1;

  constructor(timeZone: string) {
    if (typeof timeZone !== 'string' || timeZone.length === 0) {
      throw configError(
        'calendarQuota timeZone',
        'an IANA time zone name such as "UTC" or "Europe/Berlin"',
        timeZone,
      );
    }
    let format: Intl.DateTimeFormat;
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      throw configError(
        'calendarQuota timeZone',
        'an IANA time zone name such as "UTC" or "Europe/Berlin"',
        timeZone,
      );
    }
    this.timeZone = format.resolvedOptions().timeZone;
    this.utc = this.timeZone === 'UTC' || this.timeZone === 'Etc/UTC';
    this.format = this.utc ? undefined : format;
  }

  /** Start (inclusive) of the day holding `now`, in ms since the Unix epoch. */
  startOf(now: number): number {
    if (now >= this.cachedStart && now < this.cachedEnd) return this.cachedStart;
    this.locate(now);
    return this.cachedStart;
  }

  /** End (exclusive) of the day holding `now`: the start of the next day. */
  endOf(now: number): number {
    if (now >= this.cachedStart && now < this.cachedEnd) return this.cachedEnd;
    this.locate(now);
    return this.cachedEnd;
  }

  private locate(now: number): void {
    if (this.utc) {
      const start = now - (((now % DAY_MS) + DAY_MS) % DAY_MS);
      this.cachedStart = start;
      this.cachedEnd = start + DAY_MS;
      return;
    }
    const [year, month, day] = this.wallClock(now);
    this.cachedStart = this.startOfLocalDate(year, month, day);
    this.cachedEnd = this.startOfLocalDate(year, month, day + 1);
  }

  /** The local wall clock at instant `t` as [year, month (1-12), day, hour, minute, second]. */
  private wallClock(t: number): [number, number, number, number, number, number] {
    const parts = (this.format as Intl.DateTimeFormat).formatToParts(t);
    const out: [number, number, number, number, number, number] = [0, 0, 0, 0, 0, 0];
    for (const part of parts) {
      switch (part.type) {
        case 'year':
          out[0] = Number(part.value);
          break;
        case 'month':
          out[1] = Number(part.value);
          break;
        case 'day':
          out[2] = Number(part.value);
          break;
        case 'hour':
          out[3] = Number(part.value);
          break;
        case 'minute':
          out[4] = Number(part.value);
          break;
        case 'second':
          out[5] = Number(part.value);
          break;
      }
    }
    return out;
  }

  /** Offset of local time from UTC at instant `t`, in ms (whole seconds). */
  private offsetAt(t: number): number {
    const w = this.wallClock(t);
    const wall = Date.UTC(w[0], w[1] - 1, w[2], w[3], w[4], w[5]);
    return wall - (t - (((t % 1000) + 1000) % 1000));
  }

  /**
   * The first instant whose local date is (year, month, day). Usually local midnight; on a day
   * whose midnight is repeated, the earlier one; on a day whose midnight is skipped, the moment
   * the clocks jump (local 01:00). `day` may overflow the month (Date.UTC normalises it).
   */
  private startOfLocalDate(year: number, month: number, day: number): number {
    const wallMidnight = Date.UTC(year, month - 1, day);
    // At most one offset change lies within a day of any midnight; try the offsets on both sides.
    const offsetBefore = this.offsetAt(wallMidnight - DAY_MS);
    const offsetAfter = this.offsetAt(wallMidnight + DAY_MS);
    const early = wallMidnight - offsetBefore;
    const late = wallMidnight - offsetAfter;
    const earlyValid = this.offsetAt(early) === offsetBefore;
    const lateValid = this.offsetAt(late) === offsetAfter;
    if (earlyValid && lateValid) return early < late ? early : late;
    if (earlyValid) return early;
    if (lateValid) return late;
    // Midnight does not exist: the day begins when the clocks jump forward past it.
    return early;
  }
}
