/**
 * Numeric bounds: every number that enters sluice (a rule's limit or burst, a per-call cost or
 * limit) is checked against the one set of bounds, at setup for rules and before any store call
 * for per-call values, so that every store and header style can represent it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { throwsCode } from './assertions.js';
import { FailingStore } from '../../src/testing/failing-store.js';
import {
  MAX_COUNT,
  MAX_TOKEN_RATE,
  MemoryStore,
  calendarQuota,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
} from '../../src/index.js';

const outOfRange = [MAX_COUNT + 1, 2 ** 53, Number.MAX_VALUE];

describe('bounds of rules, checked at setup', () => {
  it('a token bucket limit above MAX_TOKEN_RATE is a configuration error naming the option and the bound', () => {
    assert.equal(tokenBucket({ limit: MAX_TOKEN_RATE, period: '1h' }).limit, MAX_TOKEN_RATE);
    for (const limit of [MAX_TOKEN_RATE + 1, MAX_COUNT, 2 ** 52])
      throwsCode(() => tokenBucket({ limit, period: '1h' }), 'SLUICE_CONFIG', /tokenBucket limit.*1000000/);
  });

  it('a token bucket burst above MAX_COUNT is a configuration error naming the option and the bound', () => {
    assert.equal(tokenBucket({ limit: 1, period: '1s', burst: MAX_COUNT }).burst, MAX_COUNT);
    for (const burst of outOfRange)
      throwsCode(
        () => tokenBucket({ limit: 1, period: '1s', burst }),
        'SLUICE_CONFIG',
        /tokenBucket burst.*1000000000000/,
      );
  });

  it('a calendar quota limit above MAX_COUNT is a configuration error naming the option and the bound', () => {
    assert.equal(calendarQuota({ limit: MAX_COUNT }).limit, MAX_COUNT);
    for (const limit of outOfRange)
      throwsCode(() => calendarQuota({ limit }), 'SLUICE_CONFIG', /calendarQuota limit.*1000000000000/);
  });
});

describe('bounds of per-call values, checked before any store call', () => {
  it('a cost above MAX_COUNT is SLUICE_ARGUMENT on take, on cascades, sync and async, and the store is not asked', async () => {
    const store = new FailingStore();
    const limiter = createLimiter({ name: 'c', rule: calendarQuota({ limit: MAX_COUNT }), store });
    const cascade = createCascade([limiter]);
    const allOrNothing = createCascade([limiter], { mode: 'all-or-nothing' });
    for (const cost of outOfRange) {
      await assert.rejects(limiter.take('k', { cost }), (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'));
      await assert.rejects(cascade.take('k', { cost }), (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'));
      await assert.rejects(allOrNothing.take('k', { cost }), (e: unknown) =>
        isSluiceError(e, 'SLUICE_ARGUMENT'),
      );
    }
    assert.equal(store.calls, 0);
    const memory = createLimiter({
      name: 'm',
      rule: calendarQuota({ limit: MAX_COUNT }),
      store: new MemoryStore(),
      clock: manualClock(0),
    });
    const syncCascade = createCascade([memory], { mode: 'all-or-nothing' });
    for (const cost of outOfRange) {
      throwsCode(() => memory.takeSync('k', { cost }), 'SLUICE_ARGUMENT', /cost/);
      throwsCode(() => syncCascade.takeSync('k', { cost }), 'SLUICE_ARGUMENT', /cost/);
    }
    assert.equal(memory.peekSync('k').remaining, MAX_COUNT, 'nothing was charged');
  });

  it('a per-call limit above MAX_COUNT is SLUICE_ARGUMENT on take and peek, and the store is not asked', async () => {
    const store = new FailingStore();
    const limiter = createLimiter({ name: 'q', rule: calendarQuota({ limit: 10 }), store });
    for (const limit of outOfRange) {
      await assert.rejects(limiter.take('k', { limit }), (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'));
      await assert.rejects(limiter.peek('k', { limit }), (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'));
    }
    assert.equal(store.calls, 0);
    const ok = await limiter.take('k', { limit: MAX_COUNT, cost: MAX_COUNT });
    assert.equal(ok.allowed, true);
    assert.equal(ok.remaining, 0);
  });
});
