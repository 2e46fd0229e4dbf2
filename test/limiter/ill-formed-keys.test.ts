/**
 * Keys with a lone surrogate are not well-formed UTF-16: a store encoding keys as UTF-8 would map
 * every lone surrogate to the same replacement character, so "a\uD800" and "a\uDC00" would share
 * one bucket. They are rejected with SLUICE_KEY_INVALID on every path, before any store.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FailingStore } from '../../src/testing/failing-store.js';
import {
  MemoryStore,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
} from '../../src/index.js';

const illFormed = ['a\uD800', 'a\uDC00', '\uD83D', 'x\uDE00y', '\uDFFF\uD800'];
const invalid = (e: unknown) => isSluiceError(e, 'SLUICE_KEY_INVALID') && e.status === 400;

describe('ill-formed UTF-16 keys', () => {
  it('are rejected on take, peek, reset and both cascade modes without a store call', async () => {
    const store = new FailingStore();
    const limiter = createLimiter({ name: 'k', rule: tokenBucket({ limit: 1, period: '1m' }), store });
    const other = createLimiter({ name: 'k2', rule: tokenBucket({ limit: 1, period: '1m' }), store });
    const cascades = [
      createCascade([limiter, other]),
      createCascade([limiter, other], { mode: 'all-or-nothing' }),
    ];
    for (const key of illFormed) {
      await assert.rejects(limiter.take(key), invalid);
      await assert.rejects(limiter.peek(key), invalid);
      await assert.rejects(limiter.reset(key), invalid);
      for (const cascade of cascades) {
        await assert.rejects(cascade.take(key), invalid);
        await assert.rejects(cascade.take(['fine', key]), invalid);
      }
    }
    assert.equal(store.calls, 0);
  });

  it('are rejected on the memory store, sync and async, and charge nothing', async () => {
    const limiter = createLimiter({
      name: 'm',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store: new MemoryStore(),
      clock: manualClock(0),
    });
    const cascade = createCascade([limiter], { mode: 'all-or-nothing' });
    for (const key of illFormed) {
      assert.throws(() => limiter.takeSync(key), invalid);
      assert.throws(() => limiter.peekSync(key), invalid);
      assert.throws(() => limiter.resetSync(key), invalid);
      assert.throws(() => cascade.takeSync(key), invalid);
      await assert.rejects(limiter.take(key), invalid);
    }
    // Well-formed keys with surrogate pairs are fine, and distinct.
    assert.equal(limiter.takeSync('a\uD83D\uDE00').allowed, true);
    assert.equal(limiter.takeSync('a\uD83D\uDE01').allowed, true);
  });

  it('the message says what is wrong and never repeats the key', () => {
    const limiter = createLimiter({
      name: 'p',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store: new MemoryStore(),
    });
    assert.throws(
      () => limiter.takeSync('alice@example.com\uD800'),
      (e: unknown) =>
        invalid(e) && /surrogate/.test((e as Error).message) && !/alice/.test((e as Error).message),
    );
  });
});
