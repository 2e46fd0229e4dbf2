/**
 * One timeout: a limiter's store timeout agrees with the store's own bound. A store set to wait
 * 5 s is not cut at the limiter's 100 ms default; a limiter may tighten the bound, not loosen it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FailingStore } from '../support/failing-store.js';
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

  it("a shorter limiter timeout tightens that limiter only, and is enforced by the limiter's own timer", async () => {
    const store = new FailingStore({ timeoutMs: 5_000 });
    const tight = createLimiter({
      name: 'tight',
      rule: rule(),
      store,
      timeout: '20ms',
      logger: { warn() {} },
    });
    const loose = createLimiter({ name: 'loose', rule: rule(), store });
    assert.equal(tight.timeoutMs, 20);
    assert.equal(loose.timeoutMs, 5_000);
    store.mode = 'hang';
    await assert.rejects(tight.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT'));
  });

  it("an equal limiter timeout is accepted; a longer one is SLUICE_CONFIG that says to set the store's timeout", () => {
    const store = new FailingStore({ timeoutMs: 5_000 });
    assert.equal(createLimiter({ name: 'eq', rule: rule(), store, timeout: '5s' }).timeoutMs, 5_000);
    assert.throws(
      () => createLimiter({ name: 'long', rule: rule(), store, timeout: '6s' }),
      (e: unknown) =>
        isSluiceError(e, 'SLUICE_CONFIG') &&
        /timeout/.test(e.message) &&
        /set the store's timeout/.test(e.message),
    );
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
