import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MemoryStore,
  MAX_RAW_KEY_LENGTH,
  createLimiter,
  manualClock,
  tokenBucket,
  calendarQuota,
  isSluiceError,
} from '../../src/index.js';
import { storeConformance } from '../../src/testing/index.js';
import type { TakeEntry } from '../../src/stores/contract/store.js';

storeConformance({ name: 'memory', create: async () => new MemoryStore() });

describe('MemoryStore generations', () => {
  function setup(maxKeysPerGeneration: number, remember = false) {
    const store = new MemoryStore({ maxKeysPerGeneration, rememberForgotten: remember ? ['g'] : [] });
    const clock = manualClock(0);
    const limiter = createLimiter({ name: 'g', rule: tokenBucket({ limit: 2, period: '1h' }), store, clock });
    return { store, limiter };
  }

  for (const remember of [false, true]) {
    // Forgotten, a bucket that left the maps comes back new (full); remembered, as it left.
    const left = remember ? 1 : 2;
    const how = remember ? 'remembered in the summary' : 'forgotten by default';
    it(`when current reaches N keys it becomes previous, and the old previous is dropped whole (${how})`, () => {
      const { store, limiter } = setup(3, remember);
      for (const key of ['a', 'b', 'c']) limiter.takeSync(key);
      assert.equal(store.bucketCount('g'), 3);
      for (const key of ['d', 'e', 'f']) limiter.takeSync(key);
      assert.equal(store.bucketCount('g'), 6);
      // 'g' rotates again: a, b, c leave the maps together.
      limiter.takeSync('g');
      assert.equal(store.bucketCount('g'), 4);
      assert.equal(limiter.peekSync('a').remaining, left);
      assert.equal(limiter.peekSync('d').remaining, 1);
    });

    it(`a key used while in previous moves to current and survives the next rotation (${how})`, () => {
      const { store, limiter } = setup(3, remember);
      for (const key of ['a', 'b', 'c']) limiter.takeSync(key);
      limiter.takeSync('d'); // rotation: a, b, c are previous
      limiter.takeSync('a'); // a moves to current
      limiter.takeSync('e'); // current is d, a, e (full)
      limiter.takeSync('f'); // rotation: b, c dropped; d, a, e previous
      assert.equal(limiter.peekSync('a').remaining, 0, 'a kept both of its takes');
      assert.equal(limiter.peekSync('b').remaining, left, 'b left the maps');
      assert.ok(store.bucketCount('g') <= 6);
    });
  }

  it('never more than 2N buckets per rule, whatever the sequence of keys', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 300 }),
        (n, keys) => {
          const { store, limiter } = setup(n);
          for (const key of keys) {
            limiter.takeSync(`k${key}`);
            if (store.bucketCount('g') > 2 * n) return false;
          }
          return true;
        },
      ),
    );
  });

  it('a flood of 1,000,000 distinct keys keeps at most 2 x 4096 buckets per rule', () => {
    const store = new MemoryStore();
    const clock = manualClock(0);
    // 1,000 new keys a second; one take leaves a bucket short for 200 ms, so about 200 evicted
    // buckets are not full at any time: far below what the summary tells apart.
    const rule = tokenBucket({ limit: 5, period: '1s' });
    const limiter = createLimiter({ name: 'flood', rule, store, clock });
    let admitted = 0;
    for (let i = 0; i < 1_000_000; i++) {
      if (limiter.takeSync(`10.${i >>> 16}.${(i >>> 8) & 255}.${i & 255}`).allowed) admitted++;
      clock.advance(1);
    }
    assert.equal(admitted, 1_000_000);
    assert.ok(store.bucketCount('flood') <= 8192, `holds ${store.bucketCount('flood')}`);
    assert.ok(store.bucketCount('flood') > 4096);
  });

  it('the last key keeps its bucket between takes, and never past a reset or another key', () => {
    const { limiter } = setup(8);
    limiter.takeSync('a');
    limiter.takeSync('a');
    assert.equal(limiter.takeSync('a').allowed, false, 'a is spent');
    limiter.resetSync('a');
    assert.equal(limiter.takeSync('a').remaining, 1, 'a reset reaches the key taken last');
    limiter.takeSync('a');
    // b is new: its first take inserts a fresh bucket, and its second must find that one, not a's.
    assert.equal(limiter.takeSync('b').remaining, 1);
    assert.equal(limiter.takeSync('b').remaining, 0);
  });

  it('decides as a store asked for another key between every take (no kept bucket), whatever the sequence', () => {
    // The reference peeks a key never taken before each call, so it never reuses the last key's
    // bucket; small generations make buckets move, leave and come back from the summary.
    const op = fc.record({
      kind: fc.constantFrom('take', 'take', 'take', 'reset', 'advance', 'all'),
      key: fc.integer({ min: 0, max: 4 }),
      cost: fc.integer({ min: 0, max: 3 }),
      ms: fc.integer({ min: 0, max: 2_000 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(op, { maxLength: 120 }), (n, ops) => {
        const make = () => {
          const clock = manualClock(0);
          const store = new MemoryStore({ maxKeysPerGeneration: n });
          const limiter = createLimiter({
            name: 'm',
            rule: tokenBucket({ limit: 3, period: '1s' }),
            store,
            clock,
          });
          // All-or-nothing takes of two keys insert buckets outside the limiter's own takes.
          const buckets = (limiter as unknown as { buckets: TakeEntry['buckets'] }).buckets;
          const both = (key: number, cost: number) =>
            store.takeAllSync(
              [`k${key}`, `k${key + 1}`].map((k) => ({ buckets, key: k, cost, limit: undefined })),
              clock(),
            );
          return { clock, store, limiter, both };
        };
        const fast = make();
        const reference = make();
        for (const { kind, key, cost, ms } of ops) {
          if (kind === 'advance') {
            fast.clock.advance(ms);
            reference.clock.advance(ms);
            continue;
          }
          reference.limiter.peekSync('probe');
          if (kind === 'reset') {
            fast.limiter.resetSync(`k${key}`);
            reference.limiter.resetSync(`k${key}`);
            continue;
          }
          if (kind === 'all') {
            assert.deepEqual(fast.both(key, cost), reference.both(key, cost));
            continue;
          }
          assert.deepEqual(
            fast.limiter.takeSync(`k${key}`, { cost }),
            reference.limiter.takeSync(`k${key}`, { cost }),
          );
          // A key taken again moves back into the current map alike (and so leaves the maps alike).
          assert.equal(fast.store.bucketCount('m'), reference.store.bucketCount('m'));
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a refused take on a key never seen stores nothing; a peek stores nothing', () => {
    const store = new MemoryStore();
    const limiter = createLimiter({
      name: 'q',
      rule: calendarQuota({ limit: 1 }),
      store,
      clock: manualClock(0),
    });
    limiter.takeSync('x', { cost: 5 });
    limiter.peekSync('y');
    assert.equal(store.bucketCount('q'), 0);
  });

  it('keys longer than the bound are hashed, and never collide with a raw key', () => {
    const store = new MemoryStore();
    const limiter = createLimiter({ name: 'long', rule: tokenBucket({ limit: 1, period: '1h' }), store });
    const long = 'k'.repeat(MAX_RAW_KEY_LENGTH + 1);
    const longer = `${long}!`;
    assert.equal(limiter.takeSync(long).allowed, true);
    assert.equal(limiter.takeSync(longer).allowed, true);
    assert.equal(limiter.takeSync(long).allowed, false);
    const exact = 'k'.repeat(MAX_RAW_KEY_LENGTH);
    assert.equal(limiter.takeSync(exact).allowed, true);
    assert.equal(store.bucketCount('long'), 3);
  });

  it('one name per rule and store: a second limit under the same name is a configuration error', () => {
    const store = new MemoryStore();
    createLimiter({ name: 'dup', rule: tokenBucket({ limit: 1, period: '1h' }), store });
    assert.throws(
      () => createLimiter({ name: 'dup', rule: tokenBucket({ limit: 1, period: '1h' }), store }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /already bound/.test((e as Error).message),
    );
  });

  it('rejects bad summary options with SLUICE_CONFIG naming the option', () => {
    const bad: [string, unknown][] = [
      ['summaryDepth', 0],
      ['summaryDepth', 17],
      ['summaryDepth', 2.5],
      ['summaryDepth', '4'],
      ['summaryWidth', 1000],
      ['summaryWidth', 8],
      ['summaryWidth', 2 ** 25],
      ['summaryWidth', Number.NaN],
      ['summaryWidth', '32768'],
    ];
    for (const [option, value] of bad) {
      assert.throws(
        () => new MemoryStore({ [option]: value } as never),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') &&
          (e as Error).message.startsWith(`MemoryStore ${option} must be`),
        `${option}: ${String(value)}`,
      );
    }
    const store = new MemoryStore({ summaryDepth: 2, summaryWidth: 16 });
    assert.equal(store.summaryDepth, 2);
    assert.equal(store.summaryWidth, 16);
  });

  it('rejects bad options with SLUICE_CONFIG naming the option', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '10'] as unknown[]) {
      assert.throws(
        () => new MemoryStore({ maxKeysPerGeneration: bad as number }),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') && /maxKeysPerGeneration/.test((e as Error).message),
      );
    }
    assert.throws(
      () => new MemoryStore({ maxKeys: 5 } as never),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'),
    );
  });
});
