/**
 * A receipt from before its key's last reset refunds nothing: the reset already gave the key a
 * new bucket, and giving the old charge back too would admit more than the limit. Limit 5, one
 * reset, all in one instant: at most 10 admitted (5 before the reset, 5 after), where refunding
 * the 5 old receipts would admit 15. The memory store; a refund of a receipt taken after the
 * reset still gives back, and a settlement above the old charge still charges.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  MemoryStore,
  createLimiter,
  manualClock,
  tokenBucket,
  fixedWindow,
  type Rule,
} from '../../src/index.js';

const START = Date.UTC(2026, 0, 15, 12);

for (const [title, rule] of [
  ['token bucket', tokenBucket({ limit: 5, period: '1h' })],
  ['fixed window', fixedWindow({ limit: 5, window: '1h' })],
] as [string, Rule][]) {
  describe(`refunds after a reset, memory store, ${title}`, () => {
    it('limit 5 and one reset in one instant: old receipts refund nothing, so 10 are admitted, not 15', async () => {
      const limiter = createLimiter({ name: 'r', rule, store: new MemoryStore(), clock: manualClock(START) });
      const old = [];
      let admitted = 0;
      for (let i = 0; i < 5; i++) {
        const { decision, receipt } = await limiter.takeWithReceipt('k');
        if (decision.allowed) admitted++;
        old.push(receipt!);
      }
      await limiter.reset('k');
      while ((await limiter.take('k')).allowed) admitted++;
      for (const receipt of old) await limiter.refund(receipt);
      while ((await limiter.take('k')).allowed) admitted++;
      assert.equal(admitted, 10);
    });

    it('a receipt taken after the reset still refunds, and a settlement above an old charge still charges', () => {
      const limiter = createLimiter({ name: 'r', rule, store: new MemoryStore(), clock: manualClock(START) });
      const before = limiter.takeWithReceiptSync('k').receipt!;
      limiter.resetSync('k');
      const after = limiter.takeWithReceiptSync('k').receipt!;
      assert.equal(limiter.peekSync('k').remaining, 4);
      limiter.refundSync(after);
      assert.equal(limiter.peekSync('k').remaining, 5, 'a charge made after the reset is given back');
      limiter.settleSync(before, 3);
      assert.equal(limiter.peekSync('k').remaining, 3, 'the 2 units beyond the old charge are real use');
    });
  });
}
