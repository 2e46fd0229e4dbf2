/**
 * Lockouts (a rule's `block` option): its options are checked with coded errors that never
 * repeat a value; the escalation never leaves [duration, max]; and the memory store keeps a block
 * however many other keys arrive (a key flood must not lift a lockout). The behaviour of a block
 * on every store is in the store conformance suite ("lockouts").
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MemoryStore,
  calendarQuota,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  slidingWindow,
  tokenBucket,
} from '../../src/index.js';
import {
  MAX_BLOCK_FACTOR,
  MAX_BLOCK_MS,
  nextBlockMs,
  readBlockOptions,
} from '../../src/core/rules/lockout.js';

/** Asserts SLUICE_CONFIG naming `option`, without the text of `secret` in the message. */
function rejects(make: () => unknown, option: string, secret?: string): void {
  assert.throws(make, (e: unknown) => {
    assert.ok(isSluiceError(e, 'SLUICE_CONFIG'), `SLUICE_CONFIG, got ${String(e)}`);
    assert.ok(e.message.includes(option), `"${e.message}" names ${option}`);
    if (secret !== undefined) assert.ok(!e.message.includes(secret), `"${e.message}" repeats the value`);
    return true;
  });
}

const HOUR = 3_600_000;

describe('block options', () => {
  it('every built-in rule takes one; defaults: factor 1, max = duration, forgetAfter = max', () => {
    const rules = [
      tokenBucket({ limit: 5, period: '1m', block: { duration: '15m' } }),
      fixedWindow({ limit: 5, window: '1m', block: { duration: '15m' } }),
      slidingWindow({ limit: 5, window: '1m', block: { duration: '15m' } }),
      calendarQuota({ limit: 5, block: { duration: '15m' } }),
    ];
    for (const rule of rules)
      assert.deepEqual(rule.block, {
        durationMs: 900_000,
        factor: 1,
        maxMs: 900_000,
        forgetAfterMs: 900_000,
      });
    assert.equal(tokenBucket({ limit: 5, period: '1m' }).block, undefined);
  });

  it('with a factor above 1, max defaults to a day (or the duration when longer) and forgetAfter to max', () => {
    assert.deepEqual(readBlockOptions('r', { duration: '15m', factor: 2 }), {
      durationMs: 900_000,
      factor: 2,
      maxMs: 24 * HOUR,
      forgetAfterMs: 24 * HOUR,
    });
    assert.equal(readBlockOptions('r', { duration: '2d', factor: 1.5 })?.maxMs, 48 * HOUR);
    assert.equal(
      readBlockOptions('r', { duration: '1m', max: '1h', forgetAfter: '7d' })?.forgetAfterMs,
      7 * 24 * HOUR,
    );
  });

  it('bad input is SLUICE_CONFIG naming the option, never the value', () => {
    const make = (block: unknown) => () => tokenBucket({ limit: 5, period: '1m', block: block as never });
    rejects(make('15m'), 'tokenBucket block', '15m');
    rejects(make(null), 'tokenBucket block');
    rejects(make({ duration: '15m', durration: '1m' }), 'tokenBucket block');
    rejects(make({}), 'tokenBucket block duration');
    rejects(make({ duration: 900 }), 'tokenBucket block duration', '900');
    rejects(make({ duration: '15x' }), 'tokenBucket block duration', '15x');
    rejects(make({ duration: '0ms' }), 'tokenBucket block duration', '0ms');
    rejects(make({ duration: '367d' }), 'tokenBucket block duration', '367d');
    for (const factor of [0.5, 0, -2, Number.NaN, Infinity, MAX_BLOCK_FACTOR + 1, '2'])
      rejects(make({ duration: '1m', factor }), 'tokenBucket block factor');
    rejects(make({ duration: '1h', max: '59m' }), 'tokenBucket block max', '59m');
    rejects(make({ duration: '1h', max: '400d' }), 'tokenBucket block max', '400d');
    rejects(make({ duration: '1h', forgetAfter: 60 }), 'tokenBucket block forgetAfter', '60');
    rejects(
      () => fixedWindow({ limit: 5, window: '1m', block: { duration: '1m', factor: 1e9 } }),
      'fixedWindow block factor',
      '1000000000',
    );
    rejects(
      () => calendarQuota({ limit: 5, block: { duration: 'soon' as never } }),
      'calendarQuota block duration',
      'soon',
    );
    // The longest of everything is accepted.
    assert.equal(
      readBlockOptions('r', { duration: '366d', factor: MAX_BLOCK_FACTOR, forgetAfter: '366d' })?.maxMs,
      MAX_BLOCK_MS,
    );
  });
});

describe('escalation', () => {
  const policy = fc
    .record({
      duration: fc.integer({ min: 1, max: 10_000_000 }),
      extra: fc.integer({ min: 0, max: 1_000_000_000 }),
      factor: fc.oneof(fc.constant(1), fc.double({ min: 1, max: MAX_BLOCK_FACTOR, noNaN: true })),
      forget: fc.integer({ min: 1, max: MAX_BLOCK_MS }),
    })
    .map(({ duration, extra, factor, forget }) => ({
      durationMs: duration,
      factor,
      maxMs: Math.min(duration + extra, MAX_BLOCK_MS),
      forgetAfterMs: forget,
    }));

  it('a block lasts from duration to max, never shrinks while remembered, and starts over once forgotten', () => {
    fc.assert(
      fc.property(
        policy,
        fc.array(fc.integer({ min: 0, max: 2 * MAX_BLOCK_MS }), { maxLength: 30 }),
        (p, gaps) => {
          const state = { value: 0, window: 0, previous: 0, blockedUntil: 0, blockMs: 0 };
          let now = 1_000;
          for (const gap of gaps) {
            const remembered = state.blockMs > 0 && now < state.blockedUntil + p.forgetAfterMs;
            const length = nextBlockMs(p, state, now);
            assert.ok(Number.isSafeInteger(length) && length >= p.durationMs && length <= p.maxMs);
            if (remembered)
              assert.ok(length >= state.blockMs, 'never shorter than the last while remembered');
            else assert.equal(length, p.durationMs, 'forgotten: back to duration');
            state.blockedUntil = now + length;
            state.blockMs = length;
            now = state.blockedUntil + gap;
          }
        },
      ),
    );
  });
});

describe('memory store, a rule that remembers forgotten buckets: a key flood does not lift a lockout', () => {
  for (const [title, rule] of [
    [
      'token bucket',
      () => tokenBucket({ limit: 3, period: '1s', block: { duration: '1h', factor: 2, max: '1d' } }),
    ],
    [
      'fixed window',
      () => fixedWindow({ limit: 3, window: '1s', block: { duration: '1h', factor: 2, max: '1d' } }),
    ],
  ] as const) {
    it(`${title}: blocked, then 3 rotations of other keys: still blocked to the millisecond, and it escalates after`, () => {
      const clock = manualClock(Date.UTC(2026, 0, 1));
      const store = new MemoryStore({
        maxKeysPerGeneration: 64,
        summaryWidth: 1024,
        rememberForgotten: ['login'],
      });
      const login = createLimiter({ name: 'login', rule: rule(), store, clock });
      for (let i = 0; i < 3; i++) assert.equal(login.takeSync('target').allowed, true);
      assert.equal(login.takeSync('target').retryAfterMs, HOUR);
      // The bucket refills within a second; only the block keeps the key out.
      clock.advance('1m');
      for (let i = 0; i < 3 * 64 * 3; i++) login.takeSync(`junk-${i}`);
      assert.ok(store.bucketCount('login') <= 128);
      const blocked = login.takeSync('target');
      assert.deepEqual([blocked.allowed, blocked.retryAfterMs], [false, HOUR - 60_000]);
      for (let i = 0; i < 3 * 64 * 3; i++) login.takeSync(`more-junk-${i}`);
      clock.advance(HOUR - 60_000);
      for (let i = 0; i < 3; i++) assert.equal(login.takeSync('target').allowed, true);
      assert.equal(login.takeSync('target').retryAfterMs, 2 * HOUR, 'the escalation was remembered too');
      login.unblockSync('target');
      assert.equal(login.takeSync('target').allowed, true, 'unblock lifts it, evicted or not');
    });
  }

  it('a rule without block allocates no lockout cells', () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = new MemoryStore({
      maxKeysPerGeneration: 16,
      summaryDepth: 1,
      summaryWidth: 16,
      rememberForgotten: ['plain', 'blocking'],
    });
    const plain = createLimiter({
      name: 'plain',
      rule: tokenBucket({ limit: 1, period: '1h' }),
      store,
      clock,
    });
    for (let i = 0; i < 100; i++) plain.takeSync(`k${i}`);
    assert.equal(store.summaryBytes('plain'), 16 * 8, 'counts only');
    const blocking = createLimiter({
      name: 'blocking',
      rule: tokenBucket({ limit: 1, period: '1h', block: { duration: '1h' } }),
      store,
      clock,
    });
    for (let i = 0; i < 100; i++) {
      blocking.takeSync(`k${i}`);
      blocking.takeSync(`k${i}`);
    }
    assert.equal(store.summaryBytes('blocking'), 3 * 16 * 8, 'counts, block ends and block lengths');
  });
});
