/** The sliding window: the previous window weighted in, costs, resets and bounds. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_COUNT } from '../../core/bounds.js';
import { slidingWindow } from '../../core/rules/sliding-window.js';
import { MINUTE, type StoreSuite } from './harness.js';

/** Registers the sliding window tests. */
export function slidingWindowTests(suite: StoreSuite): void {
  const { fresh, limiter, takeMany, allowedCount, needs } = suite;

  describe('sliding window', () => {
    const sliding = ['sliding-window'];
    // 12:00:00 UTC: the start of an aligned minute.
    const aligned = Date.UTC(2026, 0, 15, 12);

    it(
      'the previous window weighs by the time left of it: exact counts and waits',
      needs(sliding),
      async () => {
        await fresh(aligned);
        const l = limiter(slidingWindow({ limit: 10, window: '1m' }));
        const ds = await takeMany(l, 'k', 11);
        assert.equal(allowedCount(ds), 10);
        assert.deepEqual(
          ds.slice(8).map((d) => [d.remaining, d.resetMs, d.windowMs]),
          [
            [1, MINUTE, MINUTE],
            [0, MINUTE, MINUTE],
            [0, MINUTE, MINUTE],
          ],
        );
        // Ten in the previous window weigh ceil(10 × (60 − e) / 60): at most 9 once e >= 6 s.
        assert.equal(ds[10]!.retryAfterMs, 66_000);
        suite.clock.advance(65_999);
        assert.equal((await l.take('k')).allowed, false);
        suite.clock.advance(1);
        const first = await l.take('k');
        assert.deepEqual([first.allowed, first.remaining], [true, 0]);
        suite.clock.set(aligned + 90_000); // half-way: 10 weigh 5, plus the 1 just taken
        assert.equal((await l.peek('k')).remaining, 4);
        assert.equal((await l.take('k', { cost: 4 })).allowed, true);
        assert.equal((await l.take('k')).allowed, false);
        suite.clock.set(aligned + 3 * MINUTE); // two windows on, nothing weighs
        assert.equal((await l.peek('k')).remaining, 10);
      },
    );

    it('weighted costs and a per-call limit', needs(sliding), async () => {
      await fresh(aligned);
      const l = limiter(slidingWindow({ limit: 10, window: '1m' }));
      assert.equal((await l.take('k', { cost: 4 })).remaining, 6);
      const refused = await l.take('k', { cost: 2, limit: 5 });
      assert.deepEqual([refused.allowed, refused.limit, refused.remaining], [false, 5, 1]);
      // Next window: the 4 weigh ceil(4 × (60 − e) / 60) <= 3 from e = 15 s.
      assert.equal(refused.retryAfterMs, 75_000);
      const never = await l.take('k', { cost: 6, limit: 5 });
      assert.deepEqual([never.allowed, never.retryAfterMs], [false, Infinity]);
      assert.equal((await l.take('k', { cost: 6 })).remaining, 0);
    });

    it(
      'refusals charge nothing by default; with penalty they weigh on the next window',
      needs(sliding),
      async () => {
        await fresh(aligned);
        const plain = limiter(slidingWindow({ limit: 2, window: '1m' }));
        const strict = limiter(slidingWindow({ limit: 2, window: '1m', penalty: true }));
        for (const l of [plain, strict]) assert.equal(allowedCount(await takeMany(l, 'k', 3)), 2);
        suite.clock.set(aligned + 90_000); // half-way through the next window: 2 weigh 1, 3 weigh 2
        assert.equal((await plain.take('k')).allowed, true);
        assert.equal((await strict.take('k')).allowed, false);
        // Three quarters: the 3 weigh 1, and the refusal just charged counts 1 in this window.
        suite.clock.set(aligned + 105_000);
        assert.equal((await strict.take('k')).allowed, false);
        suite.clock.set(aligned + 3 * MINUTE);
        assert.equal((await strict.take('k')).allowed, true);
      },
    );

    it('reset(key) empties that key only, both windows', needs(sliding), async () => {
      await fresh(aligned);
      const l = limiter(slidingWindow({ limit: 3, window: '1m' }));
      await takeMany(l, 'a', 3);
      await takeMany(l, 'b', 3);
      suite.clock.advance('1m');
      await l.reset('a');
      assert.equal((await l.peek('a')).remaining, 3);
      assert.equal((await l.peek('b')).remaining, 0);
    });

    it(
      'a clock stepped back counts against the stored window with the previous one in full',
      needs(sliding),
      async () => {
        await fresh(aligned + 500);
        const l = limiter(slidingWindow({ limit: 5, window: '1m' }));
        assert.equal(allowedCount(await takeMany(l, 'k', 3)), 3);
        suite.clock.set(aligned - 500);
        const behind = await takeMany(l, 'k', 3);
        assert.deepEqual(
          behind.map((d) => [d.allowed, d.remaining]),
          [
            [true, 1],
            [true, 0],
            [false, 0],
          ],
        );
        assert.equal(behind[0]!.resetMs, MINUTE + 500);
        suite.clock.set(aligned + MINUTE); // the next window: all 5 weigh in full
        assert.equal((await l.take('k')).allowed, false);
        suite.clock.set(aligned + 2 * MINUTE);
        assert.equal(allowedCount(await takeMany(l, 'k', 6)), 5);
      },
    );

    it('a limit and costs of MAX_COUNT are counted exactly, with penalty too', needs(sliding), async () => {
      await fresh(aligned);
      const l = limiter(slidingWindow({ limit: MAX_COUNT, window: '1m', penalty: true }));
      assert.equal((await l.take('k', { cost: MAX_COUNT })).remaining, 0);
      for (let i = 0; i < 3; i++) assert.equal((await l.take('k', { cost: MAX_COUNT })).allowed, false);
      suite.clock.set(aligned + 90_000); // the saturated count weighs 2 × MAX_COUNT / 2
      assert.equal((await l.peek('k')).remaining, 0);
      const q = limiter(slidingWindow({ limit: MAX_COUNT, window: '1m' }));
      await q.take('k', { cost: MAX_COUNT });
      suite.clock.set(aligned + 150_000);
      assert.equal((await q.peek('k')).remaining, MAX_COUNT / 2);
    });
  });
}
