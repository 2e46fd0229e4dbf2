/** Keys, resets and independence: any string is a key, and buckets never share counts. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { calendarQuota } from '../../core/rules/calendar-quota.js';
import type { StoreSuite } from './harness.js';

/** Registers the key, reset and independence tests. */
export function keyTests(suite: StoreSuite): void {
  const { fresh, limiter, takeMany } = suite;

  describe('keys, resets and independence', () => {
    it('reset(key) gives a full bucket to that key only', async () => {
      await fresh();
      const l = limiter(tokenBucket({ limit: 3, period: '1h' }));
      await takeMany(l, 'a', 3);
      await takeMany(l, 'b', 3);
      await l.reset('a');
      assert.equal((await l.peek('a')).remaining, 3);
      assert.equal((await l.peek('b')).remaining, 0);
      const q = limiter(calendarQuota({ limit: 2 }));
      await takeMany(q, 'a', 2);
      await q.reset('a');
      assert.equal((await q.take('a')).remaining, 1);
      await l.reset('never-seen');
    });

    it('two limits keep their own counters even when keys are equal', async () => {
      await fresh();
      const wide = limiter(tokenBucket({ limit: 3, period: '1h' }));
      const narrow = limiter(tokenBucket({ limit: 3, period: '1h' }));
      await takeMany(wide, 'same', 3);
      assert.equal((await narrow.take('same')).remaining, 2);
      assert.equal((await wide.take('same')).allowed, false);
    });

    it('any string is a safe key: prototype names, unicode, separators, 1 MB', async () => {
      await fresh();
      const l = limiter(tokenBucket({ limit: 1, period: '1h' }));
      const big = 'x'.repeat(1 << 20);
      const keys = [
        '__proto__',
        'constructor',
        'hasOwnProperty',
        '🦀 ümlaut',
        'a:b',
        'a',
        'a:',
        ':a',
        big,
        `${big}y`,
        ' ',
      ];
      for (const key of keys)
        assert.equal((await l.take(key)).allowed, true, `first take of ${key.slice(0, 20)}`);
      for (const key of keys)
        assert.equal((await l.take(key)).allowed, false, `second take of ${key.slice(0, 20)}`);
    });
  });
}
