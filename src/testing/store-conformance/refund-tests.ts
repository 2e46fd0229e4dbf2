/** Refunds and settlements (`RuleBuckets.adjust`): what a receipt gives back, and what it cannot. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../core/errors.js';
import { fixedWindow } from '../../core/rules/fixed-window.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { calendarQuota } from '../../core/rules/calendar-quota.js';
import { slidingWindow } from '../../core/rules/sliding-window.js';
import type { Limiter } from '../../limiter/limiter.js';
import type { SkipOption, StoreSuite } from './harness.js';

/** Takes with a receipt, asserting that the take was admitted. */
const open = (l: Limiter, key: string, cost = 1) =>
  l.takeWithReceipt(key, { cost }).then(({ decision, receipt }) => {
    assert.equal(decision.allowed, true);
    assert.ok(receipt !== undefined);
    return receipt;
  });
const argumentError = (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT');

/** Registers the refund and settlement tests. */
export function refundTests(suite: StoreSuite): void {
  describe('refunds and settlements', () => {
    const refunds = suite.unless(suite.target.refunds, 'does not settle takes');
    receiptTests(suite, refunds);
    settlementTests(suite, refunds);
  });
}

/** Refunds on every rule kind, and receipts that settle once. */
function receiptTests(suite: StoreSuite, refunds: SkipOption): void {
  const { fresh, limiter, needs } = suite;

  it(
    'token bucket: a refund gives the cost back, never past full; a receipt settles once, on its own limiter',
    needs(['token-bucket']),
    async () => {
      if (refunds.skip !== false) return;
      await fresh();
      const l = limiter(tokenBucket({ limit: 5, period: '1m' }));
      const three = await open(l, 'k', 3);
      assert.deepEqual([three.cost, three.key, three.rule, three.at], [3, 'k', l.name, suite.clock()]);
      await l.refund(three);
      assert.equal((await l.peek('k')).remaining, 5);
      await assert.rejects(l.refund(three), argumentError, 'a receipt settles once');
      const all = await open(l, 'k', 5);
      suite.clock.advance('36s'); // three tokens back
      await l.refund(all);
      assert.equal((await l.peek('k')).remaining, 5, 'full, not 8');
      const other = limiter(tokenBucket({ limit: 5, period: '1m' }));
      const theirs = await open(other, 'k');
      await assert.rejects(l.refund(theirs), argumentError, "another limiter's receipt");
      await assert.rejects(l.refund({ ...theirs }), argumentError, 'a copy is not the receipt');
      await assert.rejects(
        other.refund({
          rule: other.name,
          key: 'k',
          cost: 1,
          at: suite.clock(),
          until: suite.clock(),
          limit: undefined,
          generation: undefined,
        }),
        argumentError,
      );
      assert.equal((await other.peek('k')).remaining, 4, 'nothing was given back');
      const refused = await l.takeWithReceipt('k', { cost: 6 });
      assert.deepEqual([refused.decision.allowed, refused.receipt], [false, undefined]);
      assert.equal((await l.takeWithReceipt('k', { cost: 0 })).receipt, undefined, 'a peek has none');
    },
  );

  it(
    "a refund of a take made before its key's last reset gives nothing back; one made after it does",
    needs(['token-bucket', 'fixed-window']),
    async () => {
      if (refunds.skip !== false) return;
      await fresh(Date.UTC(2026, 0, 15, 12, 0, 0));
      for (const rule of [tokenBucket({ limit: 5, period: '1h' }), fixedWindow({ limit: 5, window: '1h' })]) {
        const l = limiter(rule);
        // Limit 5 and one reset in one instant: 10 admitted, not 15.
        const old = [];
        for (let i = 0; i < 5; i++) old.push(await open(l, 'k'));
        await l.reset('k');
        let admitted = 0;
        for (let i = 0; i < 10 && (await l.take('k')).allowed; i++) admitted++;
        for (const receipt of old) await l.refund(receipt);
        for (let i = 0; i < 10 && (await l.take('k')).allowed; i++) admitted++;
        assert.equal(admitted, 5, `${rule.kind}: the old receipts gave nothing back`);
        // A take a millisecond after a reset refunds (in the same millisecond a store may
        // count it as before the reset: the safe side).
        await l.reset('k');
        suite.clock.advance(1);
        await l.refund(await open(l, 'k'));
        assert.equal((await l.peek('k')).remaining, 5, `${rule.kind}: a take after the reset refunds`);
      }
    },
  );
}

/** Settlements, receipts older than the window, and refunds that leave a lockout alone. */
function settlementTests(suite: StoreSuite, refunds: SkipOption): void {
  const { fresh, limiter, needs } = suite;

  it(
    'settle: less than the estimate gives the rest back, more charges it whatever is left',
    needs(['fixed-window']),
    async () => {
      if (refunds.skip !== false) return;
      await fresh(Date.UTC(2026, 0, 15, 12, 0, 0));
      const l = limiter(fixedWindow({ limit: 100, window: '1h' }));
      await l.settle(await open(l, 'k', 10), 4);
      assert.equal((await l.peek('k')).remaining, 96);
      await l.settle(await open(l, 'k', 10), 25);
      assert.equal((await l.peek('k')).remaining, 71);
      await l.settle(await open(l, 'k', 70), 150);
      const over = await l.take('k');
      assert.deepEqual([over.allowed, over.remaining, over.retryAfterMs], [false, 0, 3_600_000]);
      const same = await open(l, 'j', 5);
      await l.settle(same, 5);
      await assert.rejects(l.settle(same, 1), argumentError, 'settled already');
      await assert.rejects(l.settle(await open(l, 'j'), -1), argumentError, 'a negative cost');
    },
  );

  it(
    "windows: a refund counts only while the take's window does; a sliding window takes it off the previous count",
    needs(['fixed-window', 'sliding-window', 'calendar-quota']),
    async () => {
      if (refunds.skip !== false) return;
      await fresh(Date.UTC(2026, 0, 15, 12, 0, 59));
      const fixed = limiter(fixedWindow({ limit: 5, window: '1m' }));
      const sliding = limiter(slidingWindow({ limit: 10, window: '1m' }));
      const daily = limiter(calendarQuota({ limit: 5 }));
      const late = await open(fixed, 'k', 2);
      const slid = await open(sliding, 'k', 6);
      const today = await open(daily, 'k', 3);
      suite.clock.advance('1s'); // 12:01:00: a new minute, the same day
      await open(fixed, 'k', 1);
      await fixed.refund(late);
      assert.equal((await fixed.peek('k')).remaining, 4, 'the minute of the take is over');
      await open(sliding, 'k', 1); // the state rolls: the 6 are the previous count now
      assert.equal((await sliding.peek('k')).remaining, 3, '10 − 1 − 6 weighed in full');
      await sliding.refund(slid);
      assert.equal((await sliding.peek('k')).remaining, 9);
      await daily.refund(today);
      assert.equal((await daily.peek('k')).remaining, 5);
    },
  );

  it('a refund does not lift a lockout', needs(['token-bucket']), async () => {
    if (refunds.skip !== false || suite.target.lockouts === false) return;
    await fresh();
    const l = limiter(tokenBucket({ limit: 2, period: '1m', block: { duration: '1h' } }));
    const first = await open(l, 'k');
    await open(l, 'k');
    assert.equal((await l.take('k')).retryAfterMs, 3_600_000);
    await l.refund(first);
    const still = await l.peek('k');
    assert.deepEqual([still.allowed, still.retryAfterMs], [false, 3_600_000]);
  });
}
