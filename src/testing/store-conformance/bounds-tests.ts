/** The largest counts and rates a rule allows, counted exactly. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_COUNT, MAX_TOKEN_RATE } from '../../core/bounds.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { calendarQuota } from '../../core/rules/calendar-quota.js';
import type { StoreSuite } from './harness.js';

/** Registers the bounds tests. */
export function boundsTests(suite: StoreSuite): void {
  const { fresh, limiter } = suite;

  describe('bounds', () => {
    it('a cost of MAX_COUNT beyond the rule is refused for good, not an error', async () => {
      await fresh();
      const tb = limiter(tokenBucket({ limit: 5, period: '1h' }));
      const q = limiter(calendarQuota({ limit: 5 }));
      for (const l of [tb, q]) {
        const d = await l.take('k', { cost: MAX_COUNT });
        assert.equal(d.allowed, false);
        assert.equal(d.retryAfterMs, Infinity);
        assert.equal((await l.peek('k')).remaining, 5, 'nothing was charged');
      }
    });

    it('a token bucket at MAX_TOKEN_RATE with a burst of MAX_COUNT is exact', async () => {
      await fresh();
      const l = limiter(tokenBucket({ limit: MAX_TOKEN_RATE, period: '1s', burst: MAX_COUNT }));
      const all = await l.take('k', { cost: MAX_COUNT });
      assert.equal(all.allowed, true);
      assert.equal(all.remaining, 0);
      const refused = await l.take('k');
      assert.equal(refused.allowed, false);
      assert.equal(refused.retryAfterMs, 1);
      suite.clock.advance(1); // one millisecond refills 1,000 tokens
      assert.equal((await l.take('k', { cost: 1000 })).allowed, true);
      assert.equal((await l.take('k')).allowed, false);
    });
  });
}
