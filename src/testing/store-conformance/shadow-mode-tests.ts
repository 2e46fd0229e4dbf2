/** Shadow mode: charged as enforcement would be, never refusing. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { slidingWindow } from '../../core/rules/sliding-window.js';
import { createLimiter } from '../../limiter/limiter.js';
import type { StoreSuite } from './harness.js';

/** Registers the shadow mode tests. */
export function shadowModeTests(suite: StoreSuite): void {
  const { fresh, limiter, needs } = suite;

  describe('shadow mode', () => {
    it(
      'a shadow limit is charged as enforcement would be and never refuses; switching it to enforce keeps its buckets',
      needs(['token-bucket', 'sliding-window']),
      async () => {
        await fresh(Date.UTC(2026, 0, 15, 12, 0, 30));
        for (const rule of [
          () => tokenBucket({ limit: 3, period: '1m' }),
          () => slidingWindow({ limit: 3, window: '1m' }),
        ]) {
          const name = `shadowed${suite.nextId()}`;
          const timeout = suite.target.timeout === undefined ? {} : { timeout: suite.target.timeout };
          const trial = createLimiter({
            name,
            rule: rule(),
            store: suite.store,
            clock: suite.clock,
            mode: 'shadow',
            ...timeout,
          });
          const twin = limiter(rule());
          assert.equal(trial.mode, 'shadow');
          for (const step of [1, 1, 2, 1, 0, 1, 3, 1]) {
            if (step === 0) suite.clock.advance('20s');
            const cost = step === 0 ? 1 : step;
            const [shadowed, enforced] = [await trial.take('k', { cost }), await twin.take('k', { cost })];
            assert.equal(shadowed.allowed, true, 'never refuses');
            assert.equal(shadowed.source, enforced.allowed ? 'store' : 'shadow');
            assert.deepEqual(
              [shadowed.remaining, shadowed.retryAfterMs, shadowed.resetMs],
              [enforced.remaining, enforced.retryAfterMs, enforced.resetMs],
              'what enforcement would have said',
            );
          }
          // The buckets hold what enforcement's would: a peek sees the same state. (Switching the
          // name to enforce binds these very buckets on a store that keeps them after unbind.)
          const [seen, expected] = [await trial.peek('k'), await twin.peek('k')];
          assert.deepEqual(
            [seen.remaining, seen.retryAfterMs, seen.resetMs],
            [expected.remaining, expected.retryAfterMs, expected.resetMs],
          );
          trial.close();
        }
      },
    );
  });
}
