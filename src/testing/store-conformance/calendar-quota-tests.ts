/** The calendar quota per day: resets at midnight (UTC or local), per-call limits, clocks that step back or disagree. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_COUNT } from '../../core/bounds.js';
import type { Decision } from '../../core/decision.js';
import { calendarQuota } from '../../core/rules/calendar-quota.js';
import { HOUR, MINUTE, type StoreSuite } from './harness.js';

/** Registers the calendar quota tests. */
export function calendarQuotaTests(suite: StoreSuite): void {
  describe('calendar quota', () => {
    dayTests(suite);
    clockTests(suite);
  });
}

/** Days in UTC and in local time, per-call limits and costs. */
function dayTests(suite: StoreSuite): void {
  const { fresh, limiter, takeMany, allowedCount } = suite;

  it('N per UTC day; the count resets exactly at midnight', async () => {
    await fresh(Date.UTC(2026, 4, 1, 23, 59, 59, 0));
    const l = limiter(calendarQuota({ limit: 10 }));
    const ds = await takeMany(l, 'acct', 11);
    assert.equal(allowedCount(ds), 10);
    assert.equal(ds[9]!.remaining, 0);
    assert.equal(ds[10]!.retryAfterMs, 1000);
    assert.equal(ds[10]!.resetMs, 1000);
    suite.clock.advance(999);
    assert.equal((await l.take('acct')).allowed, false);
    suite.clock.advance(1);
    const next = await l.take('acct');
    assert.equal(next.allowed, true);
    assert.equal(next.remaining, 9);
    assert.equal(next.resetMs, 24 * HOUR);
  });

  it('a per-call limit from data (api_keys.daily_limit) applies to that call', async () => {
    await fresh();
    const l = limiter(calendarQuota({ limit: 10 }));
    const ds: Decision[] = [];
    for (let i = 0; i < 4; i++) ds.push(await l.take('key-a', { limit: 3 }));
    assert.deepEqual(
      ds.map((d) => [d.allowed, d.limit, d.remaining]),
      [
        [true, 3, 2],
        [true, 3, 1],
        [true, 3, 0],
        [false, 3, 0],
      ],
    );
    // A raised limit (the key was upgraded) counts what was used today.
    assert.equal((await l.take('key-a', { limit: 5 })).remaining, 1);
    assert.equal((await l.take('key-b')).remaining, 9);
  });

  it('weighted costs and refusals without debt', async () => {
    await fresh();
    const l = limiter(calendarQuota({ limit: 10 }));
    assert.equal((await l.take('k', { cost: 8 })).remaining, 2);
    const refused = await l.take('k', { cost: 3 });
    assert.equal(refused.allowed, false);
    assert.equal(refused.remaining, 2);
    assert.equal((await l.take('k', { cost: 2 })).allowed, true);
    const never = await l.take('k', { cost: 11 });
    assert.equal(never.retryAfterMs, Infinity);
  });

  it('local days in Europe/Berlin: the count spans UTC midnight and resets at local midnight', async () => {
    // 21:30 UTC on 10 June is 23:30 in Berlin (UTC+2): half an hour to local midnight.
    await fresh(Date.UTC(2026, 5, 10, 21, 30));
    const l = limiter(calendarQuota({ limit: 2, timeZone: 'Europe/Berlin' }));
    assert.equal((await l.take('k')).resetMs, 30 * MINUTE);
    suite.clock.set(Date.UTC(2026, 5, 10, 22, 0)); // local midnight
    assert.equal((await l.take('k')).remaining, 1);
    suite.clock.set(Date.UTC(2026, 5, 11, 0, 30)); // UTC day changed, local day did not
    assert.equal((await l.take('k')).remaining, 0);
    assert.equal((await l.take('k')).allowed, false);
  });

  for (const [zone, date, hours] of [
    ['Europe/Berlin', [2026, 2, 29], 23],
    ['Europe/Berlin', [2026, 9, 25], 25],
    ['America/New_York', [2026, 2, 8], 23],
    ['America/New_York', [2026, 10, 1], 25],
  ] as const) {
    it(`${zone} ${date[0]}-${date[1] + 1}-${date[2]} lasts ${hours} hours (DST)`, async () => {
      const offset = zone === 'Europe/Berlin' ? (date[1] === 2 ? 1 : 2) : date[1] === 2 ? -5 : -4;
      const localMidnight = Date.UTC(date[0], date[1], date[2]) - offset * HOUR;
      await fresh(localMidnight);
      const l = limiter(calendarQuota({ limit: 1, timeZone: zone }));
      const first = await l.take('k');
      assert.equal(first.resetMs, hours * HOUR);
      assert.equal(first.windowMs, hours * HOUR, 'a quota decision carries the length of its day');
      suite.clock.advance(hours * HOUR - 1);
      const last = await l.take('k');
      assert.equal(last.allowed, false);
      assert.equal(last.retryAfterMs, 1);
      suite.clock.advance(1);
      assert.equal((await l.take('k')).allowed, true);
    });
  }
}

/** Clocks that step back or disagree across midnight, and the largest counts. */
function clockTests(suite: StoreSuite): void {
  const { fresh, limiter, takeMany, allowedCount } = suite;

  it('a clock stepped back across midnight counts against the stored day: 5 a day admits exactly 5', async () => {
    const midnight = Date.UTC(2026, 4, 2);
    await fresh(midnight + 500);
    const l = limiter(calendarQuota({ limit: 5 }));
    assert.equal(allowedCount(await takeMany(l, 'acct', 3)), 3);
    suite.clock.set(midnight - 500); // the clock steps back one second, into the day before
    const behind = await takeMany(l, 'acct', 5);
    assert.deepEqual(
      behind.map((d) => [d.allowed, d.remaining]),
      [
        [true, 1],
        [true, 0],
        [false, 0],
        [false, 0],
        [false, 0],
      ],
    );
    // Measured from now to the end of the stored day, which is 24 hours long.
    assert.equal(behind[0]!.resetMs, 24 * HOUR + 500);
    assert.equal(behind[0]!.windowMs, 24 * HOUR);
    assert.equal(behind[2]!.retryAfterMs, 24 * HOUR + 500);
    const peek = await l.peek('acct');
    assert.equal(peek.allowed, false);
    assert.equal(peek.remaining, 0);
    suite.clock.set(midnight + 1000); // forward again: still the same day, still spent
    assert.equal(allowedCount(await takeMany(l, 'acct', 5)), 0);
    suite.clock.set(midnight + 24 * HOUR); // the next day starts fresh
    assert.equal(allowedCount(await takeMany(l, 'acct', 6)), 5);
  });

  it('two nodes whose clocks are 1 s apart across midnight share one day: 5 a day admits exactly 5', async () => {
    const midnight = Date.UTC(2026, 4, 2);
    await fresh(midnight);
    // Two nodes on one bucket look to the store like one limit whose clock readings alternate
    // between theirs: node A reads 00:00:00.250, node B (1 s behind) 23:59:59.250.
    let reading = 0;
    const nodes = () => reading;
    const l = limiter(calendarQuota({ limit: 5 }), undefined, nodes);
    const ds: Decision[] = [];
    for (let i = 0; i < 10; i++) {
      reading = i % 2 === 0 ? midnight + 250 : midnight - 750;
      ds.push(await l.take('acct'));
    }
    assert.equal(allowedCount(ds), 5);
    assert.deepEqual(
      ds.slice(0, 5).map((d) => d.remaining),
      [4, 3, 2, 1, 0],
    );
    reading = midnight + 2000;
    assert.equal((await l.take('acct')).allowed, false);
    reading = midnight - 2000;
    assert.equal((await l.take('acct')).allowed, false);
  });

  it('bounds: a limit and a cost of MAX_COUNT are counted exactly', async () => {
    await fresh();
    const q = limiter(calendarQuota({ limit: MAX_COUNT }));
    const all = await q.take('k', { cost: MAX_COUNT });
    assert.equal(all.allowed, true);
    assert.equal(all.remaining, 0);
    assert.equal((await q.take('k')).allowed, false);
    const perCall = await q.take('other', { cost: MAX_COUNT - 1, limit: MAX_COUNT });
    assert.equal(perCall.remaining, 1);
  });
}
