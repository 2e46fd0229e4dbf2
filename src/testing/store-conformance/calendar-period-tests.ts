/** Calendar quotas per hour, week and month, in time zones whose hours and months are not UTC's. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { calendarQuota } from '../../core/rules/calendar-quota.js';
import { HOUR, MINUTE, DAY, type StoreSuite } from './harness.js';

/** Registers the calendar period tests. */
export function calendarPeriodTests(suite: StoreSuite): void {
  const { fresh, limiter, takeMany, allowedCount, needs } = suite;

  describe('calendar quota per hour, week and month', () => {
    const quota = ['calendar-quota'];

    it('Asia/Kolkata hours run from UTC :30 to UTC :30', needs(quota, ['hour']), async () => {
      await fresh(Date.UTC(2026, 0, 15, 10, 29)); // 15:59 IST
      const l = limiter(calendarQuota({ limit: 2, per: 'hour', timeZone: 'Asia/Kolkata' }));
      const ds = await takeMany(l, 'k', 3);
      assert.deepEqual(
        ds.map((d) => [d.allowed, d.resetMs, d.windowMs]),
        [
          [true, MINUTE, HOUR],
          [true, MINUTE, HOUR],
          [false, MINUTE, HOUR],
        ],
      );
      assert.equal(ds[2]!.retryAfterMs, MINUTE);
      suite.clock.advance('1m');
      assert.equal((await l.take('k')).remaining, 1);
    });

    it(
      'Europe/Berlin: the hour repeated when clocks go back has a quota of its own',
      needs(quota, ['hour']),
      async () => {
        await fresh(Date.UTC(2026, 9, 25, 0, 30)); // 02:30 CEST
        const l = limiter(calendarQuota({ limit: 1, per: 'hour', timeZone: 'Europe/Berlin' }));
        assert.equal((await l.take('k')).allowed, true);
        const refused = await l.take('k');
        assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 30 * MINUTE]);
        suite.clock.set(Date.UTC(2026, 9, 25, 1, 30)); // 02:30 CET, an hour later
        assert.equal((await l.take('k')).allowed, true);
      },
    );

    it(
      'weeks from Sunday in America/New_York; a DST week is an hour short',
      needs(quota, ['week']),
      async () => {
        // Saturday 17 January 2026, 23:59 in New York (UTC-5).
        await fresh(Date.UTC(2026, 0, 18, 4, 59));
        const l = limiter(
          calendarQuota({ limit: 3, per: 'week', weekStart: 7, timeZone: 'America/New_York' }),
        );
        const ds = await takeMany(l, 'k', 4);
        assert.equal(allowedCount(ds), 3);
        assert.deepEqual([ds[3]!.retryAfterMs, ds[3]!.windowMs], [MINUTE, 7 * DAY]);
        suite.clock.advance('1m');
        assert.equal((await l.take('k')).remaining, 2);
        suite.clock.set(Date.UTC(2026, 2, 9, 12)); // the week of Sunday 8 March, when clocks go forward
        assert.equal((await l.take('k')).windowMs, 7 * DAY - HOUR);
      },
    );

    it('months from local day 1, 28 to 31 days long', needs(quota, ['month']), async () => {
      await fresh(Date.UTC(2026, 0, 31, 23, 59, 59, 999));
      const l = limiter(calendarQuota({ limit: 2, per: 'month' }));
      const jan = await l.take('k', { cost: 2 });
      assert.deepEqual([jan.remaining, jan.resetMs, jan.windowMs], [0, 1, 31 * DAY]);
      assert.equal((await l.take('k')).retryAfterMs, 1);
      suite.clock.advance(1);
      const feb = await l.take('k');
      assert.deepEqual([feb.allowed, feb.remaining, feb.windowMs], [true, 1, 28 * DAY]);
    });

    it('a clock stepped back counts against the stored hour', needs(quota, ['hour']), async () => {
      const hour = Date.UTC(2026, 0, 15, 13);
      await fresh(hour + 500);
      const l = limiter(calendarQuota({ limit: 3, per: 'hour' }));
      await takeMany(l, 'k', 2);
      suite.clock.set(hour - 500);
      const behind = await takeMany(l, 'k', 2);
      assert.deepEqual(
        behind.map((d) => [d.allowed, d.resetMs]),
        [
          [true, HOUR + 500],
          [false, HOUR + 500],
        ],
      );
    });
  });
}
