/**
 * A guard with a concurrency limit, without a framework: where it may stand among the limits,
 * what a failing lease store answers (and that the rate takes before it are refunded), and the
 * legacy header style, which has no way to describe requests in flight.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createGuard } from '../../src/http/index.js';
import { FailingStore } from '../../src/testing/failing-store.js';
import {
  MemoryStore,
  concurrencyLimit,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
} from '../../src/index.js';

const facts = { method: 'POST', path: '/exports' };
const silent = { warn() {} };

describe('guard with a concurrency limit', () => {
  it('the concurrency limit stands last, once', () => {
    const store = new MemoryStore();
    const rate = createLimiter({ name: 'rate', rule: tokenBucket({ limit: 5, period: '1m' }), store });
    const inFlight = concurrencyLimit({ name: 'in-flight', max: 1, leaseTtl: '1m', store });
    assert.throws(
      () => createGuard({ limits: [inFlight, rate], key: () => 'k' }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /limits/.test((e as Error).message),
    );
    assert.doesNotThrow(() => createGuard({ limits: [rate, inFlight], key: () => 'k' }));
    assert.doesNotThrow(() => createGuard({ limits: inFlight, key: () => 'k' }));
    assert.throws(
      () => createGuard({ limits: [rate, inFlight], key: () => 'k', mode: 'delay', maxWait: '1s' }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /mode/.test((e as Error).message),
    );
  });

  it('a lease store that fails answers 503, and the rate take before it is refunded', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const rate = createLimiter({
      name: 'rate',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store: new MemoryStore(),
      clock,
    });
    const leases = new FailingStore();
    const inFlight = concurrencyLimit({
      name: 'in-flight',
      max: 1,
      leaseTtl: '1m',
      store: leases,
      clock,
      logger: silent,
    });
    const guard = createGuard({ limits: [rate, inFlight], key: () => 'k', onError: () => {} });
    leases.mode = 'reject';
    const outcome = await guard.check({}, facts);
    assert.equal(outcome.action, 'respond');
    assert.equal(outcome.action === 'respond' && outcome.response.status, 503);
    assert.equal(rate.peekSync('k').remaining, 5);
  });

  it('legacy headers describe the rate limits only; a refused lease still sends Retry-After', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = new MemoryStore();
    const rate = createLimiter({ name: 'rate', rule: tokenBucket({ limit: 5, period: '1m' }), store, clock });
    const inFlight = concurrencyLimit({ name: 'in-flight', max: 1, leaseTtl: '1m', store, clock });
    const guard = createGuard({ limits: [rate, inFlight], key: () => 'k', headers: 'legacy' });
    const admitted = await guard.check({}, facts);
    assert.equal(admitted.action, 'continue');
    assert.equal(admitted.action === 'continue' && admitted.headers['X-RateLimit-Remaining'], '4');
    const refused = await guard.check({}, facts);
    assert.equal(refused.action, 'respond');
    if (refused.action !== 'respond') return;
    assert.equal(refused.response.status, 429);
    assert.equal(refused.response.headers['Retry-After'], '60');
    assert.equal(refused.response.headers['X-RateLimit-Limit'], '5', 'the rate limit, not the slots');
    guard.finish(admitted, 200);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await guard.check({}, facts)).action, 'continue', 'finished: the lease was released');
  });
});
