/**
 * A cost that a rule can never admit is refused by the pure algorithm, before any store call:
 * waiting cannot help, a shared store need not count it, and no limit of a cascade is charged.
 * And the caller's own errors are never taken for store failures, whatever the policy.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FailingStore } from '../../src/testing/failing-store.js';
import {
  MemoryStore,
  SluiceError,
  calendarQuota,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type SluiceErrorCode,
} from '../../src/index.js';

const silent = { warn: () => {} };

describe('costs beyond the rule are refused before any store call', () => {
  it('token bucket: a cost above the burst is refused for good without asking the store', async () => {
    const store = new FailingStore();
    const clock = manualClock(0);
    const limiter = createLimiter({
      name: 'tb',
      rule: tokenBucket({ limit: 10, period: '10s', burst: 5 }),
      store,
      clock,
    });
    const d = await limiter.take('k', { cost: 6 });
    assert.equal(d.allowed, false);
    assert.equal(d.retryAfterMs, Infinity);
    assert.equal(d.capacity, 5);
    assert.equal(d.cost, 6);
    assert.equal(d.source, 'store');
    assert.equal(store.calls, 0);
    assert.equal((await limiter.take('k', { cost: 5 })).allowed, true);
    assert.equal(store.calls, 1);
  });

  it('calendar quota: a cost above the rule limit or the per-call limit is refused for good without asking the store', async () => {
    const store = new FailingStore();
    const limiter = createLimiter({
      name: 'q',
      rule: calendarQuota({ limit: 10 }),
      store,
      clock: manualClock(0),
    });
    const overRule = await limiter.take('k', { cost: 11 });
    assert.equal(overRule.allowed, false);
    assert.equal(overRule.retryAfterMs, Infinity);
    const overCall = await limiter.take('k', { cost: 4, limit: 3 });
    assert.equal(overCall.allowed, false);
    assert.equal(overCall.limit, 3);
    assert.equal(overCall.retryAfterMs, Infinity);
    assert.equal(store.calls, 0);
  });

  it('even a failing store is not asked, so the refusal does not depend on the failure policy', async () => {
    const store = new FailingStore();
    store.mode = 'reject';
    const limiter = createLimiter({
      name: 'o',
      rule: tokenBucket({ limit: 1, period: '1s' }),
      store,
      failure: 'open',
      logger: silent,
    });
    const d = await limiter.take('k', { cost: 2 });
    assert.equal(d.allowed, false);
    assert.equal(limiter.stats().failOpenAdmits, 0);
    assert.equal(store.calls, 0);
  });

  it('a refusal before the store never reports more remaining than the bucket holds (0, on every path and store)', async () => {
    // Burst 3, the bucket holding 1, a take of 4: the store is not asked, so what the bucket
    // holds is unknown; a client must never read more than it holds (it used to read 3).
    const clock = manualClock(0);
    const rule = tokenBucket({ limit: 3, period: '1h' });
    const memory = createLimiter({ name: 'm', rule, store: new MemoryStore(), clock });
    const shared = new FailingStore();
    const other = createLimiter({ name: 's', rule, store: shared, clock });
    assert.equal(memory.takeSync('k', { cost: 2 }).remaining, 1);
    const refusals = [
      memory.takeSync('k', { cost: 4 }),
      await memory.take('k', { cost: 4 }),
      memory.takeWithReceiptSync('k', { cost: 4 }).decision,
      (await memory.takeWithReceipt('k', { cost: 4 })).decision,
      (await memory.takeOrWait('k', { cost: 4, maxWait: '1m' })).decision,
      await other.take('k', { cost: 4 }),
      (await createCascade([memory, other]).take('k', { cost: 4 })).decisive,
      memory.takeSync('k', { cost: 2, limit: 3, period: '1h', burst: 1 }),
    ];
    for (const refused of refusals) {
      assert.equal(refused.allowed, false);
      assert.equal(refused.retryAfterMs, Infinity);
      assert.equal(refused.remaining, 0, 'never more than the 1 the bucket holds');
    }
    assert.equal(shared.calls, 0);
    assert.equal(memory.peekSync('k').remaining, 1, 'nothing charged');
  });

  for (const mode of ['first-refusal', 'all-or-nothing'] as const) {
    it(`${mode} cascade: a cost beyond one limit is refused without any store call, and no limit is charged`, async () => {
      const store = new FailingStore();
      const clock = manualClock(0);
      const wide = createLimiter({
        name: 'wide',
        rule: tokenBucket({ limit: 10, period: '1m' }),
        store,
        clock,
      });
      const narrow = createLimiter({
        name: 'narrow',
        rule: tokenBucket({ limit: 3, period: '1m' }),
        store,
        clock,
      });
      const cascade = createCascade([wide, narrow], { mode });
      const d = await cascade.take('k', { cost: 4 });
      assert.equal(d.allowed, false);
      assert.deepEqual(d.refusedBy, ['narrow']);
      assert.equal(d.decisive.retryAfterMs, Infinity);
      assert.equal(store.calls, 0);
      assert.equal((await wide.peek('k')).remaining, 10, 'the wide limit was not charged');
    });
  }
});

describe("the caller's errors are not store failures", () => {
  const callerCodes: SluiceErrorCode[] = [
    'SLUICE_ARGUMENT',
    'SLUICE_KEY_INVALID',
    'SLUICE_KEY_MISSING',
    'SLUICE_CONFIG',
    'SLUICE_CLOCK',
  ];
  for (const policy of ['open', 'insurance', 'closed'] as const) {
    it(`${policy}: a store rejecting with a caller's error code propagates it, uncounted and not admitted`, async () => {
      const store = new FailingStore();
      const limiter = createLimiter({
        name: 'p',
        rule: tokenBucket({ limit: 5, period: '1m' }),
        store,
        failure: policy,
        logger: silent,
      });
      const cascade = createCascade([limiter], { mode: 'all-or-nothing' });
      store.mode = 'error';
      for (const code of callerCodes) {
        store.error = new SluiceError(code, 'input the store cannot take');
        await assert.rejects(limiter.take('k'), (e: unknown) => isSluiceError(e, code));
        await assert.rejects(cascade.take('k'), (e: unknown) => isSluiceError(e, code));
      }
      assert.deepEqual(limiter.stats(), {
        storeFailures: 0,
        timeouts: 0,
        failOpenAdmits: 0,
        insuranceDecisions: 0,
        overloads: 0,
        overloadTimeouts: 0,
        breaker: 'closed',
        breakerOpenings: 0,
        shortCircuited: 0,
      });
    });
  }
});
