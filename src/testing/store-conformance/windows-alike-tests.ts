/** What the fixed and sliding windows do alike. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fixedWindow } from '../../core/rules/fixed-window.js';
import { slidingWindow } from '../../core/rules/sliding-window.js';
import type { StoreSuite } from './harness.js';

/** Registers the tests both windows pass alike. */
export function windowsAlikeTests(suite: StoreSuite): void {
  const { fresh, limiter, allowedCount, needs } = suite;

  describe('fixed and sliding windows alike', () => {
    for (const [kind, make] of [
      ['fixed-window', fixedWindow],
      ['sliding-window', slidingWindow],
    ] as const) {
      it(`${kind}: 1,000 simultaneous takes on one key admit exactly the limit`, needs([kind]), async () => {
        await fresh();
        const l = limiter(make({ limit: 100, window: '1h' }));
        const ds = await Promise.all(Array.from({ length: 1000 }, () => l.take('hot')));
        assert.equal(allowedCount(ds), 100);
      });
    }
  });
}
