/**
 * The guard's delay mode outside a framework: what it accepts at setup, a request whose client
 * left before it was decided, a store failure while others wait, and the charge-once rule. Every
 * adapter's delay mode is in the HTTP conformance suite.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  MemoryStore,
  createCascade,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  tokenBucket,
} from '../../src/index.js';
import { createGuard } from '../../src/http/index.js';
import { FailingStore } from '../../src/testing/index.js';

const START = Date.UTC(2026, 0, 15, 12);
const configError = (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG');
const facts = { method: 'POST', path: '/' };

function bucket(name: string, limit: number, period: '1m' | '30ms' = '1m') {
  return createLimiter({
    name,
    rule: tokenBucket({ limit, period }),
    store: new MemoryStore(),
    clock: manualClock(START),
  });
}

describe('rateLimit mode "delay"', () => {
  it('is refused at setup without maxWait, with a window, a lockout, a shadow limit or a cascade object; maxWait needs it', () => {
    const key = () => 'k';
    const ok = bucket('ok', 1);
    const window = createLimiter({
      name: 'w',
      rule: fixedWindow({ limit: 1, window: '1m' }),
      store: new MemoryStore(),
    });
    const locked = createLimiter({
      name: 'l',
      rule: tokenBucket({ limit: 1, period: '1m', block: { duration: '1h' } }),
      store: new MemoryStore(),
    });
    const shadow = createLimiter({
      name: 's',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store: new MemoryStore(),
      mode: 'shadow',
    });
    const cascade = createCascade([ok]);
    assert.throws(
      () => createGuard({ limits: ok, key, mode: 'delay' }),
      (e) => isSluiceError(e, 'SLUICE_DURATION'),
    );
    assert.throws(() => createGuard({ limits: ok, key, mode: 'delay', maxWait: '2h' }), configError);
    assert.throws(
      () => createGuard({ limits: ok, key, mode: 'later' as 'delay', maxWait: '1s' }),
      configError,
    );
    assert.throws(() => createGuard({ limits: ok, key, maxWait: '1s' }), configError);
    for (const limits of [window, [ok, locked], shadow, cascade])
      assert.throws(() => createGuard({ limits, key, mode: 'delay', maxWait: '1s' }), configError);
    const guard = createGuard({ limits: ok, key, mode: 'delay', maxWait: '1s' });
    assert.equal(guard.delays, true);
    assert.equal(createGuard({ limits: ok, key }).delays, false);
  });

  it('a client gone before the decision is answered 499 and charges nothing', async () => {
    const limits = bucket('gone', 1);
    const guard = createGuard({ limits, key: () => 'k', mode: 'delay', maxWait: '1s' });
    const outcome = await guard.check({}, { ...facts, signal: AbortSignal.abort() });
    assert.equal(outcome.action === 'respond' && outcome.response.status, 499);
    assert.equal((await limits.peek('k')).remaining, 1);
  });

  it('a limit whose store fails answers 503 and the others give their reservations back', async () => {
    const waiting = bucket('waiting', 1);
    await waiting.take('k');
    const store = new FailingStore();
    const failing = createLimiter({
      name: 'failing',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store,
      logger: { warn: () => {} },
    });
    store.mode = 'reject';
    const guard = createGuard({
      limits: [waiting, failing],
      key: () => 'k',
      mode: 'delay',
      maxWait: '5m',
      onError: () => {},
    });
    const outcome = await guard.check({}, facts);
    assert.equal(outcome.action === 'respond' && outcome.response.status, 503);
    assert.equal(
      (await waiting.peek('k')).retryAfterMs,
      60_000,
      'the reservation a minute away was given back',
    );
  });

  it('a request charged by the limit already is not charged again, and a cost of 0 waits for nothing', async () => {
    const limits = bucket('twice', 2);
    const guard = createGuard({ limits, key: () => 'k', mode: 'delay', maxWait: '1s' });
    const request = {};
    assert.equal((await guard.check(request, facts)).action, 'continue');
    assert.equal((await guard.check(request, facts)).action, 'continue');
    assert.equal((await limits.peek('k')).remaining, 1);
    const free = createGuard({ limits, key: () => 'k', mode: 'delay', maxWait: '1s', cost: 0 });
    assert.equal((await free.check({}, facts)).action, 'continue');
    assert.equal((await limits.peek('k')).remaining, 1);
  });
});
