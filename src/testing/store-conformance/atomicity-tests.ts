/** Atomicity: simultaneous takes and cascades admit exactly the capacity. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../core/errors.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { calendarQuota } from '../../core/rules/calendar-quota.js';
import { createCascade } from '../../limiter/cascade.js';
import type { Limiter } from '../../limiter/limiter.js';
import type { StoreSuite } from './harness.js';

/** Registers the atomicity tests. */
export function atomicityTests(suite: StoreSuite): void {
  const { fresh, limiter, allowedCount } = suite;

  describe('atomicity', () => {
    it('1,000 simultaneous takes on one key with burst 100 admit exactly 100', async () => {
      await fresh();
      const l = limiter(tokenBucket({ limit: 100, period: '1h' }));
      const ds = await Promise.all(Array.from({ length: 1000 }, () => l.take('hot')));
      assert.equal(allowedCount(ds), 100);
      const q = limiter(calendarQuota({ limit: 100 }));
      const qs = await Promise.all(Array.from({ length: 1000 }, () => q.take('hot')));
      assert.equal(allowedCount(qs), 100);
    });

    it('an all-or-nothing cascade charges every limit or none', async () => {
      await fresh();
      const a = limiter(tokenBucket({ limit: 5, period: '1h' }));
      const b = limiter(tokenBucket({ limit: 2, period: '1h' }));
      const q = limiter(calendarQuota({ limit: 10 }));
      const cascade = createCascade([a, b, q], { mode: 'all-or-nothing' });
      assert.equal((await cascade.take(['ip', 'ip+nick', 'acct'])).allowed, true);
      assert.equal((await cascade.take(['ip', 'ip+nick', 'acct'])).allowed, true);
      const refused = await cascade.take(['ip', 'ip+nick', 'acct']);
      assert.equal(refused.allowed, false);
      assert.deepEqual(refused.refusedBy, [b.name]);
      assert.equal(refused.decisive.name, b.name);
      assert.equal(refused.decisions.length, 3);
      // Nothing was charged by the refused cascade.
      assert.equal((await a.peek('ip')).remaining, 3);
      assert.equal((await q.peek('acct')).remaining, 8);
      // Concurrent cascades on a shared narrow limit: exactly its capacity gets through, and
      // the wide limit is charged exactly that often.
      const c = limiter(tokenBucket({ limit: 50, period: '1h' }));
      const d = limiter(tokenBucket({ limit: 20, period: '1h' }));
      const both = createCascade([c, d], { mode: 'all-or-nothing' });
      const results = await Promise.all(Array.from({ length: 200 }, () => both.take('k')));
      assert.equal(results.filter((r) => r.allowed).length, 20);
      assert.equal((await c.peek('k')).remaining, 30);
    });

    it('an all-or-nothing take naming one bucket twice is SLUICE_ARGUMENT and charges nothing', async () => {
      await fresh();
      const a = limiter(tokenBucket({ limit: 5, period: '1h' }));
      const b = limiter(calendarQuota({ limit: 5 }));
      const entry = (l: Limiter, key: string) => ({ buckets: l.buckets, key, cost: 1, limit: undefined });
      await assert.rejects(
        suite.store.takeAll([entry(a, 'k'), entry(b, 'k'), entry(a, 'k')], suite.clock()),
        (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'),
      );
      assert.equal((await a.peek('k')).remaining, 5);
      assert.equal((await b.peek('k')).remaining, 5);
      // The same key under two rules, or two keys under one rule, are distinct buckets.
      const ok = await suite.store.takeAll([entry(a, 'k'), entry(b, 'k'), entry(a, 'j')], suite.clock());
      assert.deepEqual(
        ok.map((d) => d.remaining),
        [4, 4, 4],
      );
    });

    it('first-refusal cascade: the first refusal stops the chain, later limits are not charged', async () => {
      await fresh();
      const wide = limiter(tokenBucket({ limit: 2, period: '1h' }));
      const narrow = limiter(tokenBucket({ limit: 5, period: '1h' }));
      const cascade = createCascade([wide, narrow]);
      await cascade.take('k');
      await cascade.take('k');
      const refused = await cascade.take('k');
      assert.equal(refused.allowed, false);
      assert.equal(refused.decisions.length, 1);
      assert.deepEqual(refused.refusedBy, [wide.name]);
      assert.equal((await narrow.peek('k')).remaining, 3);
    });
  });
}
