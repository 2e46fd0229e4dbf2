/** All-or-nothing takes across every rule kind at once. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fixedWindow } from '../../core/rules/fixed-window.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { calendarQuota } from '../../core/rules/calendar-quota.js';
import { slidingWindow } from '../../core/rules/sliding-window.js';
import { createCascade } from '../../limiter/cascade.js';
import { allKinds, exampleRules, type StoreSuite } from './harness.js';

/** Registers the all-or-nothing tests. */
export function allOrNothingTests(suite: StoreSuite): void {
  const { fresh, limiter, needs } = suite;

  describe('all-or-nothing across every rule', () => {
    it(
      'one refusal charges nothing anywhere: token bucket, fixed and sliding windows, quotas per hour, week and month',
      needs(allKinds, ['hour', 'week', 'month']),
      async () => {
        await fresh(Date.UTC(2026, 0, 15, 12, 0, 30));
        const bucket = limiter(tokenBucket({ limit: 5, period: '1h' }));
        const fixed = limiter(fixedWindow({ limit: 3, window: '1m' }));
        const sliding = limiter(slidingWindow({ limit: 4, window: '1m' }));
        const hourly = limiter(calendarQuota({ limit: 10, per: 'hour', timeZone: 'Europe/Berlin' }));
        const weekly = limiter(calendarQuota({ limit: 10, per: 'week' }));
        const monthly = limiter(calendarQuota({ limit: 10, per: 'month', timeZone: 'Asia/Kolkata' }));
        const all = [bucket, fixed, sliding, hourly, weekly, monthly];
        // A typical rule of every registered kind rides along: each admits the five takes below,
        // and none may be charged for the refused one.
        const examples = exampleRules().map((rule) => limiter(rule));
        const remaining = async () =>
          (await Promise.all(examples.map((l) => l.peek('k')))).map((d) => d.remaining);
        const cascade = createCascade([...all, ...examples], { mode: 'all-or-nothing' });
        for (let i = 0; i < 3; i++) assert.equal((await cascade.take('k')).allowed, true);
        const before = await remaining();
        const refused = await cascade.take('k');
        assert.equal(refused.allowed, false);
        assert.deepEqual(refused.refusedBy, [fixed.name]);
        assert.deepEqual(await remaining(), before, 'the refusal charged no rule of any kind');
        const left = await Promise.all(all.map((l) => l.peek('k')));
        assert.deepEqual(
          left.map((d) => d.remaining),
          [2, 0, 1, 7, 7, 7],
        );
        // The next minute the fixed window is fresh and the sliding one's 3 still weigh 3: one
        // more take fits everywhere, the one after is refused by the sliding window alone.
        suite.clock.advance('30s');
        assert.equal((await cascade.take('k')).allowed, true);
        assert.deepEqual((await cascade.take('k')).refusedBy, [sliding.name]);
        assert.deepEqual(
          (await Promise.all(all.map((l) => l.peek('k')))).map((d) => d.remaining),
          [1, 2, 0, 6, 6, 6],
        );
      },
    );

    it('a refused take reports every other limit as it holds, charged nothing: its peek', async () => {
      await fresh(Date.UTC(2026, 0, 15, 12, 0, 30));
      const wide = limiter(tokenBucket({ limit: 1000, period: '1h' }));
      const narrow = limiter(fixedWindow({ limit: 2, window: '1m' }));
      const daily = limiter(calendarQuota({ limit: 50, per: 'day' }));
      const cascade = createCascade([wide, narrow, daily], { mode: 'all-or-nothing' });
      for (let i = 0; i < 2; i++) assert.equal((await cascade.take('k')).allowed, true);
      const refused = await cascade.take('k', { cost: 1 });
      assert.deepEqual(refused.refusedBy, [narrow.name]);
      const shown = refused.decisions.map((d) => [d.name, d.allowed, d.cost, d.remaining]);
      // The wide bucket holds 998 and the quota 48: a decision that said 997 and 47, admitted,
      // would describe a charge that never happened.
      assert.deepEqual(shown, [
        [wide.name, true, 0, 998],
        [narrow.name, false, 1, 0],
        [daily.name, true, 0, 48],
      ]);
      const peeks = await Promise.all([wide.peek('k'), daily.peek('k')]);
      assert.deepEqual(
        [refused.decisions[0], refused.decisions[2]].map((d) => [d!.remaining, d!.resetMs]),
        peeks.map((d) => [d.remaining, d.resetMs]),
      );
      assert.equal(refused.decisive.name, narrow.name);
    });
  });
}
