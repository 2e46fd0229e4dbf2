/**
 * By default a bucket the memory store forgot is a new bucket: a flood of other keys never makes
 * a fresh key start short, whatever its rate, and memory stays bounded (both generations full, no
 * summary). Remembering forgotten buckets is a choice a rule makes by name (`rememberForgotten`).
 * Exact counts under a manual clock; memory counted in buckets and summary bytes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MemoryStore, SluiceError, createLimiter, manualClock, tokenBucket } from '../../src/index.js';

describe('MemoryStore: a forgotten bucket is a new one by default', () => {
  it('1,000,000 distinct addresses through 5 per hour, twice: every one of the 2,000,000 takes is admitted, in bounded memory', () => {
    const store = new MemoryStore();
    const limiter = createLimiter({
      name: 'flood',
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store,
      clock: manualClock(Date.UTC(2026, 0, 1)),
    });
    const keys = 1_000_000;
    let admitted = 0;
    let largest = 0;
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < keys; i++) {
        if (limiter.takeSync(`203.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`).allowed) admitted++;
        largest = Math.max(largest, store.bucketCount('flood'));
      }
    }
    assert.equal(admitted, 2 * keys);
    assert.equal(largest, 2 * 4096, 'never more than two generations of buckets');
    assert.ok(store.bucketCount('flood') <= 2 * 4096);
    assert.equal(store.summaryBytes('flood'), 0, 'no summary is kept unless the rule asks for one');
  });

  it('a fresh key starts full after any flood of other keys, at any rate', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.array(
          fc.record({
            keys: fc.integer({ min: 0, max: 60 }),
            cost: fc.integer({ min: 1, max: 3 }),
            advanceMs: fc.integer({ min: 0, max: 5_000 }),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        (limit, floods) => {
          const clock = manualClock(0);
          const store = new MemoryStore({ maxKeysPerGeneration: 4 });
          const rule = tokenBucket({ limit, period: '1h', block: { duration: '1h' } });
          const limiter = createLimiter({ name: 'f', rule, store, clock });
          let next = 0;
          for (const flood of floods) {
            clock.advance(flood.advanceMs);
            for (let i = 0; i < flood.keys; i++) {
              const key = `k${next++}`;
              // Each key is spent and refused, so that it leaves the maps as strict as it gets.
              for (let t = 0; t <= limit; t++) limiter.takeSync(key, { cost: flood.cost });
            }
            const fresh = `fresh${next++}`;
            assert.equal(limiter.peekSync(fresh).remaining, limit);
            assert.equal(limiter.takeSync(fresh).allowed, true);
            assert.ok(store.bucketCount('f') <= 8);
          }
          assert.equal(store.summaryBytes('f'), 0);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('a key pushed out of the maps comes back full: the price of bounded memory without a summary', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ maxKeysPerGeneration: 4 });
    const limiter = createLimiter({
      name: 'tb',
      rule: tokenBucket({ limit: 3, period: '1h' }),
      store,
      clock,
    });
    for (let i = 0; i < 3; i++) limiter.takeSync('k');
    assert.equal(limiter.peekSync('k').remaining, 0);
    for (let i = 0; i < 20; i++) limiter.takeSync(`other${i}`);
    assert.equal(limiter.peekSync('k').remaining, 3);
  });
});

describe("MemoryStore rememberForgotten: the summary as a rule's own choice", () => {
  it('only the rules named keep a summary; the others forget', () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ maxKeysPerGeneration: 4, rememberForgotten: ['strict'] });
    assert.deepEqual([...store.rememberForgotten], ['strict']);
    const strict = createLimiter({
      name: 'strict',
      rule: tokenBucket({ limit: 3, period: '1h' }),
      store,
      clock,
    });
    const plain = createLimiter({
      name: 'plain',
      rule: tokenBucket({ limit: 3, period: '1h' }),
      store,
      clock,
    });
    for (const limiter of [strict, plain]) {
      for (let i = 0; i < 3; i++) limiter.takeSync('k');
      for (let i = 0; i < 20; i++) limiter.takeSync(`other${i}`);
    }
    assert.equal(strict.peekSync('k').remaining, 0, 'remembered: never looser than its own state');
    assert.equal(plain.peekSync('k').remaining, 3, 'forgotten: a new bucket');
    assert.ok(store.summaryBytes('strict') > 0);
    assert.equal(store.summaryBytes('plain'), 0);
  });

  it('refuses anything but a list of distinct rule names, naming the option and never the value', () => {
    for (const bad of ['login', [1], ['bad name!'], ['a', 'a'], [''], null, { login: true }]) {
      assert.throws(
        () => new MemoryStore({ rememberForgotten: bad as never }),
        (error: unknown) =>
          error instanceof SluiceError &&
          error.code === 'SLUICE_CONFIG' &&
          error.message.includes('rememberForgotten') &&
          !error.message.includes('bad name!'),
      );
    }
  });
});
