/**
 * Calendar periods against boundaries found by brute force: every minute of a range around a
 * zone's DST change is formatted with Intl.DateTimeFormat, and a period starts wherever the local
 * wall clock says one does (a new local hour, or the clock going back; the first instant of a new
 * date; a new date that passes a weekStart weekday or a day 1). Offsets change on whole minutes in
 * every zone tested, so minute steps see every boundary.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MemoryStore,
  calendarQuota,
  createLimiter,
  manualClock,
  type CalendarUnit,
  type IsoWeekday,
} from '../../src/index.js';

const MINUTE = 60_000;
const DAY = 86_400_000;

/** The wall clock of `timeZone`, read literally from the formatter. */
function wallReader(timeZone: string): (t: number) => { wall: number; date: number; hour: number } {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
  });
  return (t) => {
    const p: Record<string, number> = {};
    for (const part of format.formatToParts(t)) p[part.type] = Number(part.value);
    const date = Date.UTC(p.year!, p.month! - 1, p.day!);
    return { wall: date + p.hour! * 3_600_000 + p.minute! * MINUTE, date, hour: p.hour! };
  };
}

/** Period starts in [from, to), found minute by minute. */
function bruteBoundaries(
  timeZone: string,
  per: CalendarUnit,
  weekStart: IsoWeekday,
  from: number,
  to: number,
): number[] {
  const read = wallReader(timeZone);
  const out: number[] = [];
  let last = read(from - MINUTE);
  let latestDate = last.date;
  for (let t = from; t < to; t += MINUTE) {
    const now = read(t);
    let starts: boolean;
    if (per === 'hour') {
      starts = now.date !== last.date || now.hour !== last.hour || now.wall < last.wall;
    } else if (now.date <= latestDate) {
      starts = false; // a date seen before (clocks went back across midnight) starts nothing
    } else if (per === 'day') {
      starts = true;
    } else {
      // A new date starts a period when it, or a date skipped on the way to it, opens one.
      starts = false;
      for (let d = latestDate + DAY; d <= now.date; d += DAY) {
        const day = new Date(d);
        const isoWeekday = ((day.getUTCDay() + 6) % 7) + 1;
        if (per === 'week' ? isoWeekday === weekStart : day.getUTCDate() === 1) starts = true;
      }
    }
    if (now.date > latestDate) latestDate = now.date;
    if (starts) out.push(t);
    last = now;
  }
  return out;
}

/** Zones and instants near their clock changes (or, for Kolkata, none: a half-hour offset). */
const cases: readonly [string, number, string][] = [
  ['Europe/Berlin', Date.UTC(2026, 2, 29, 1), 'spring forward 02:00 → 03:00'],
  ['Europe/Berlin', Date.UTC(2026, 9, 25, 1), 'fall back 03:00 → 02:00'],
  ['America/New_York', Date.UTC(2026, 2, 8, 7), 'spring forward'],
  ['America/New_York', Date.UTC(2026, 10, 1, 6), 'fall back'],
  ['Asia/Kolkata', Date.UTC(2026, 5, 15), 'UTC+05:30, hours start at UTC :30'],
  ['Australia/Lord_Howe', Date.UTC(2026, 3, 4, 15), 'fall back by 30 minutes'],
  ['Australia/Lord_Howe', Date.UTC(2026, 9, 3, 15, 30), 'spring forward by 30 minutes'],
  ['America/Santiago', Date.UTC(2026, 8, 6, 4), 'midnight skipped'],
  ['America/Santiago', Date.UTC(2026, 3, 5, 3), 'midnight repeated'],
  ['America/Havana', Date.UTC(2026, 2, 8, 5), 'midnight skipped'],
  ['Pacific/Apia', Date.UTC(2011, 11, 30, 10), '30 December 2011 skipped'],
];

const spans: Record<CalendarUnit, number> = { hour: 2 * DAY, day: 5 * DAY, week: 22 * DAY, month: 45 * DAY };

describe('calendar periods against brute-force boundaries', () => {
  for (const [zone, change, what] of cases) {
    for (const per of ['hour', 'day', 'week', 'month'] as const) {
      const weekStarts: IsoWeekday[] = per === 'week' ? [1, 5, 7] : [1];
      for (const weekStart of weekStarts) {
        const label = per === 'week' ? `week from ISO day ${weekStart}` : per;
        it(`${zone} (${what}): every ${label} starts and ends where the wall clock says`, () => {
          const from = Math.floor((change - spans[per]) / MINUTE) * MINUTE;
          const to = from + 2 * spans[per];
          const boundaries = bruteBoundaries(zone, per, weekStart, from, to);
          assert.ok(boundaries.length >= 2, 'the range holds whole periods');
          const rule = calendarQuota({
            limit: 1,
            timeZone: zone,
            per,
            ...(per === 'week' ? { weekStart } : {}),
          });
          const periods = rule.periods;
          const check = (t: number, i: number) => {
            assert.equal(periods.startOf(t), boundaries[i], `start of ${new Date(t).toISOString()}`);
            assert.equal(periods.endOf(t), boundaries[i + 1], `end of ${new Date(t).toISOString()}`);
          };
          // Sequentially (the cache at work), to the millisecond at both edges of every minute.
          for (let i = 0; i + 1 < boundaries.length; i++) {
            for (let t = boundaries[i]!; t < boundaries[i + 1]!; t += MINUTE) {
              check(t, i);
              check(t + MINUTE - 1, i);
            }
          }
          // And in random order, so that no answer leans on the previous one.
          fc.assert(
            fc.property(fc.integer({ min: boundaries[0]!, max: boundaries.at(-1)! - 1 }), (t) => {
              const i = boundaries.findLastIndex((b) => b <= t);
              check(t, i);
            }),
            { numRuns: 200 },
          );
          // The hour or day of the change itself has its true length.
          if (per === 'hour' || per === 'day') {
            const i = boundaries.findLastIndex((b) => b <= change);
            assert.equal(
              rule.decide(rule.initialState(change), {
                now: change,
                epoch: 0,
                name: 'q',
                cost: 0,
                limit: undefined,
                commit: false,
              }).windowMs,
              boundaries[i + 1]! - boundaries[i]!,
            );
          }
        });
      }
    }
  }
});

describe('calendar periods: stated cases', () => {
  it('Asia/Kolkata: an hour runs from UTC :30 to UTC :30', () => {
    const hours = calendarQuota({ limit: 1, per: 'hour', timeZone: 'Asia/Kolkata' }).periods;
    const t = Date.UTC(2026, 5, 15, 10, 45);
    assert.equal(hours.startOf(t), Date.UTC(2026, 5, 15, 10, 30));
    assert.equal(hours.endOf(t), Date.UTC(2026, 5, 15, 11, 30));
  });

  it('Europe/Berlin fall back: the repeated 02:00 hour is a second hour with its own quota', () => {
    const rule = calendarQuota({ limit: 1, per: 'hour', timeZone: 'Europe/Berlin' });
    const first = Date.UTC(2026, 9, 25, 0, 30); // 02:30 CEST
    const second = Date.UTC(2026, 9, 25, 1, 30); // 02:30 CET
    assert.equal(rule.periods.startOf(first), Date.UTC(2026, 9, 25, 0));
    assert.equal(rule.periods.startOf(second), Date.UTC(2026, 9, 25, 1));
    const state = rule.initialState(first);
    assert.equal(
      rule.decide(state, { now: first, epoch: 0, name: 'q', cost: 1, limit: undefined, commit: true })
        .allowed,
      true,
    );
    assert.equal(
      rule.decide(state, { now: first + 1, epoch: 0, name: 'q', cost: 1, limit: undefined, commit: true })
        .allowed,
      false,
    );
    assert.equal(
      rule.decide(state, { now: second, epoch: 0, name: 'q', cost: 1, limit: undefined, commit: true })
        .allowed,
      true,
    );
  });

  it('Australia/Lord_Howe: the hour clocks jump into by 30 minutes is 30 minutes long', () => {
    const hours = calendarQuota({ limit: 1, per: 'hour', timeZone: 'Australia/Lord_Howe' }).periods;
    const jump = Date.UTC(2026, 9, 3, 15, 30); // 02:00 +10:30 becomes 02:30 +11
    assert.equal(hours.startOf(jump + 5 * MINUTE), jump);
    assert.equal(hours.endOf(jump), jump + 30 * MINUTE);
    assert.equal(hours.endOf(jump - 1), jump);
  });

  it('Pacific/Apia: the day before the skipped 30 December 2011 ends where 31 December begins', () => {
    const days = calendarQuota({ limit: 1, timeZone: 'Pacific/Apia' }).periods;
    const jump = Date.UTC(2011, 11, 30, 10); // 29 December 24:00 (UTC-10) is 31 December 00:00 (UTC+14)
    assert.equal(days.endOf(jump - 1), jump);
    assert.equal(days.startOf(jump), jump);
    assert.equal(days.endOf(jump), jump + DAY);
  });

  it('UTC weeks start on the chosen weekday, months on day 1', () => {
    const sundays = calendarQuota({ limit: 1, per: 'week', weekStart: 7 }).periods;
    const t = Date.UTC(2026, 0, 15, 12); // a Thursday
    assert.equal(sundays.startOf(t), Date.UTC(2026, 0, 11));
    assert.equal(sundays.endOf(t), Date.UTC(2026, 0, 18));
    const months = calendarQuota({ limit: 1, per: 'month' }).periods;
    assert.equal(months.startOf(Date.UTC(2028, 1, 29, 23)), Date.UTC(2028, 1, 1));
    assert.equal(months.endOf(Date.UTC(2028, 1, 29, 23)), Date.UTC(2028, 2, 1));
  });
});

describe('calendar quota decisions over brute-force periods', () => {
  for (const [zone, change, per, weekStart] of [
    ['Europe/Berlin', Date.UTC(2026, 9, 25, 1), 'hour', 1],
    ['Australia/Lord_Howe', Date.UTC(2026, 9, 3, 15, 30), 'hour', 1],
    ['America/New_York', Date.UTC(2026, 2, 8, 7), 'week', 7],
    ['Pacific/Apia', Date.UTC(2011, 11, 30, 10), 'day', 1],
    ['America/Santiago', Date.UTC(2026, 8, 6, 4), 'month', 1],
  ] as const) {
    it(`${zone} per ${per}: counts agree with a map from brute-force period to count`, () => {
      const from = Math.floor((change - spans[per]) / MINUTE) * MINUTE;
      const boundaries = bruteBoundaries(zone, per, weekStart, from, from + 2 * spans[per]);
      const first = boundaries[0]!;
      const last = boundaries.at(-1)!;
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 6 }),
          fc.array(
            fc.record({
              at: fc.integer({ min: first, max: last - 1 }),
              cost: fc.integer({ min: 0, max: 3 }),
              perCall: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
            }),
            { minLength: 1, maxLength: 40 },
          ),
          (limit, takes) => {
            takes.sort((a, b) => a.at - b.at);
            const clock = manualClock(first);
            const rule = calendarQuota({
              limit,
              per,
              timeZone: zone,
              ...(per === 'week' ? { weekStart } : {}),
            });
            const limiter = createLimiter({ name: 'q', rule, store: new MemoryStore(), clock });
            const counts = new Map<number, number>();
            for (const { at, cost, perCall } of takes) {
              clock.set(at);
              const i = boundaries.findLastIndex((b) => b <= at);
              const quota = perCall ?? limit;
              const asked = cost === 0 ? 1 : cost;
              const used = counts.get(i) ?? 0;
              const allowed = asked <= quota && used + asked <= quota;
              if (allowed && cost > 0) counts.set(i, used + cost);
              const d = limiter.takeSync('k', perCall === undefined ? { cost } : { cost, limit: perCall });
              assert.equal(d.allowed, allowed);
              assert.equal(d.resetMs, boundaries[i + 1]! - at);
              assert.equal(d.windowMs, boundaries[i + 1]! - boundaries[i]!);
            }
          },
        ),
        { numRuns: 100 },
      );
    });
  }
});
