/** The fixed window: counts per aligned window, penalties, resets and bounds. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_COUNT } from '../../core/bounds.js';
import { fixedWindow } from '../../core/rules/fixed-window.js';
import { MINUTE, type StoreSuite } from './harness.js';

/** Registers the fixed window tests. */
export function fixedWindowTests(suite: StoreSuite): void {
  const { fresh, limiter, takeMany, allowedCount, needs } = suite;

  describe('fixed window', () => {
    const fixed = ['fixed-window'];
    // 12:00:30 UTC: half-way through an aligned minute.
    const halfway = Date.UTC(2026, 0, 15, 12, 0, 30);

    it(
      'admits exactly `limit` per aligned window; the next window starts from zero',
      needs(fixed),
      async () => {
        await fresh(halfway);
        const l = limiter(fixedWindow({ limit: 5, window: '1m' }));
        const ds = await takeMany(l, 'k', 6);
        assert.deepEqual(
          ds.map((d) => [d.allowed, d.remaining]),
          [
            [true, 4],
            [true, 3],
            [true, 2],
            [true, 1],
            [true, 0],
            [false, 0],
          ],
        );
        const refused = ds[5]!;
        assert.equal(refused.retryAfterMs, 30_000);
        assert.equal(refused.resetMs, 30_000);
        assert.equal(refused.windowMs, MINUTE);
        assert.equal(refused.limit, 5);
        suite.clock.advance(29_999);
        assert.equal((await l.take('k')).allowed, false);
        suite.clock.advance(1);
        const next = await l.take('k');
        assert.deepEqual([next.allowed, next.remaining, next.resetMs], [true, 4, MINUTE]);
      },
    );

    it(
      'weighted costs, a per-call limit, a cost beyond the limit refused for good',
      needs(fixed),
      async () => {
        await fresh(halfway);
        const l = limiter(fixedWindow({ limit: 5, window: '1m' }));
        assert.equal((await l.take('k', { cost: 3 })).remaining, 2);
        const refused = await l.take('k', { cost: 3 });
        assert.deepEqual([refused.allowed, refused.remaining, refused.retryAfterMs], [false, 2, 30_000]);
        const raised = await l.take('k', { cost: 3, limit: 8 });
        assert.deepEqual([raised.allowed, raised.limit, raised.remaining], [true, 8, 2]);
        const never = await l.take('other', { cost: 3, limit: 2 });
        assert.deepEqual([never.allowed, never.retryAfterMs], [false, Infinity]);
        assert.equal((await l.peek('other')).remaining, 5, 'nothing was charged');
      },
    );

    it('refusals charge nothing by default; with penalty they count', needs(fixed), async () => {
      await fresh(halfway);
      const plain = limiter(fixedWindow({ limit: 3, window: '1m' }));
      const strict = limiter(fixedWindow({ limit: 3, window: '1m', penalty: true }));
      for (const l of [plain, strict]) {
        assert.equal(allowedCount(await takeMany(l, 'k', 5)), 3);
        // A raised per-call limit shows what was counted: 3 without penalty, 5 with it.
      }
      assert.equal((await plain.take('k', { limit: 6 })).remaining, 2);
      assert.equal((await strict.take('k', { limit: 6 })).remaining, 0);
      suite.clock.advance('30s');
      assert.equal((await strict.take('k')).remaining, 2, 'a new window forgets the penalty');
    });

    it('reset(key) empties that key only', needs(fixed), async () => {
      await fresh(halfway);
      const l = limiter(fixedWindow({ limit: 3, window: '1m' }));
      await takeMany(l, 'a', 3);
      await takeMany(l, 'b', 3);
      await l.reset('a');
      assert.equal((await l.peek('a')).remaining, 3);
      assert.equal((await l.peek('b')).remaining, 0);
    });

    it(
      'a clock stepped back counts against the stored window, which never moves back',
      needs(fixed),
      async () => {
        const minute = Date.UTC(2026, 0, 15, 12, 1);
        await fresh(minute + 500);
        const l = limiter(fixedWindow({ limit: 5, window: '1m' }));
        assert.equal(allowedCount(await takeMany(l, 'k', 3)), 3);
        suite.clock.set(minute - 500);
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
        suite.clock.set(minute + MINUTE);
        assert.equal(allowedCount(await takeMany(l, 'k', 6)), 5);
      },
    );

    it('a limit and costs of MAX_COUNT are counted exactly, with penalty too', needs(fixed), async () => {
      await fresh(halfway);
      const l = limiter(fixedWindow({ limit: MAX_COUNT, window: '1h', penalty: true }));
      assert.equal((await l.take('k', { cost: MAX_COUNT })).remaining, 0);
      for (let i = 0; i < 3; i++) assert.equal((await l.take('k', { cost: MAX_COUNT })).allowed, false);
      const peek = await l.peek('k');
      assert.deepEqual([peek.allowed, peek.remaining], [false, 0]);
      const other = await l.take('j', { cost: MAX_COUNT - 1 });
      assert.equal(other.remaining, 1);
    });
  });
}
