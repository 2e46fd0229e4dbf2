import { optionError } from './errors.js';

/** A local wall-clock reading: [year, month (1-12), day, hour, minute, second]. */
export type WallClock = [number, number, number, number, number, number];

/**
 * Reads the wall clock of one IANA time zone at any instant, from the platform's time-zone
 * database through `Intl.DateTimeFormat`. Formatting is the slow part (a microsecond or so), so
 * callers cache what they derive from it.
 */
export class ZoneClock {
  /** The zone's canonical name as the platform resolves it, e.g. `"Europe/Berlin"` or `"UTC"`. */
  readonly timeZone: string;
  /** True for UTC, whose calendar is plain arithmetic. */
  readonly utc: boolean;
  private readonly format: Intl.DateTimeFormat;

  /** @param option the option's name, for the error message */
  constructor(timeZone: unknown, option: string) {
    const expected = 'an IANA time zone name such as "UTC" or "Europe/Berlin"';
    if (typeof timeZone !== 'string' || timeZone.length === 0) throw optionError(option, expected);
    try {
      this.format = new Intl.DateTimeFormat('en-US', {
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
      throw optionError(option, expected);
    }
    this.timeZone = this.format.resolvedOptions().timeZone;
    this.utc = this.timeZone === 'UTC' || this.timeZone === 'Etc/UTC';
  }

  /** The local wall clock at instant `t`. */
  wallClock(t: number): WallClock {
    const out: WallClock = [0, 0, 0, 0, 0, 0];
    for (const part of this.format.formatToParts(t)) {
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

  /** Offset of local time from UTC at instant `t`, in ms (whole seconds): local = t + offset. */
  offsetAt(t: number): number {
    if (this.utc) return 0;
    const w = this.wallClock(t);
    const wall = Date.UTC(w[0], w[1] - 1, w[2], w[3], w[4], w[5]);
    return wall - (t - (((t % 1000) + 1000) % 1000));
  }

  /**
   * The first instant in `(from, to]` at which the offset differs from the offset at `from`,
   * assuming at most one change in between (the zone database never has two within hours);
   * `Infinity` when there is none. A binary search over milliseconds: called only near a change.
   */
  changeAfter(from: number, to: number): number {
    const before = this.offsetAt(from);
    if (to <= from || this.offsetAt(to) === before) return Infinity;
    let low = from;
    let high = to;
    while (high - low > 1) {
      const mid = low + Math.floor((high - low) / 2);
      if (this.offsetAt(mid) === before) low = mid;
      else high = mid;
    }
    return high;
  }
}
