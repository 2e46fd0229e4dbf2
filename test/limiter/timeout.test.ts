/**
 * One timeout: a limiter's store timeout agrees with the store's own bound. A store set to wait
 * 5 s is not cut at the limiter's 100 ms default, and a limiter cannot set another: a longer one
 * would be cut by the store, a shorter one would answer decisions the store could still charge.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FailingStore } from '../../src/testing/failing-store.js';
import { MemoryStore, createLimiter, isSluiceError, tokenBucket } from '../../src/index.js';

const rule = () => tokenBucket({ limit: 1, period: '1m' });

describe('the limiter timeout and the store timeout', () => {
  it("defaults to the store's own bound when the store has one", () => {
    const store = new FailingStore({ timeoutMs: 5_000 });
    assert.equal(createLimiter({ name: 'a', rule: rule(), store }).timeoutMs, 5_000);
  });

  it('defaults to 100 ms for a store without a bound of its own', () => {
    assert.equal(createLimiter({ name: 'a', rule: rule(), store: new FailingStore() }).timeoutMs, 100);
    assert.equal(createLimiter({ name: 'a', rule: rule(), store: new MemoryStore() }).timeoutMs, 100);
  });

  it("a limiter timeout that differs from the store's own is SLUICE_CONFIG that says to set the store's", () => {
    const store = new FailingStore({ timeoutMs: 5_000 });
    assert.equal(createLimiter({ name: 'eq', rule: rule(), store, timeout: '5s' }).timeoutMs, 5_000);
    for (const timeout of ['6s', '20ms'] as const) {
      assert.throws(
        () => createLimiter({ name: `t${timeout}`, rule: rule(), store, timeout }),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') &&
          /timeout/.test(e.message) &&
          /set the timeout on the store/.test(e.message),
      );
    }
  });

  it("a store without a bound of its own is bounded by the limiter's timer", async () => {
    const store = new FailingStore();
    const tight = createLimiter({
      name: 'tight',
      rule: rule(),
      store,
      timeout: '20ms',
      logger: { warn() {} },
    });
    assert.equal(tight.timeoutMs, 20);
    store.mode = 'hang';
    await assert.rejects(tight.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT'));
  });

  it('a store bound that is not a whole number of ms within timer range is SLUICE_CONFIG', () => {
    for (const timeoutMs of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      assert.throws(
        () => createLimiter({ name: 'x', rule: rule(), store: new FailingStore({ timeoutMs }) }),
        (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'),
      );
    }
  });
});
