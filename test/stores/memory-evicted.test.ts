/**
 * A rule that remembers its forgotten buckets (`rememberForgotten`) has no reset hole: a bucket
 * that leaves the maps while not full comes back at least as strict as it left (the
 * evicted-bucket summary), so a flood of throwaway keys cannot be used to refill one's own
 * bucket. Exact counts under a manual clock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  MemoryStore,
  anchoredWindow,
  calendarQuota,
  compositeKey,
  createLimiter,
  fixedWindow,
  ipKey,
  manualClock,
  slidingWindow,
  tokenBucket,
  type MemoryStoreOptions,
  type Rule,
} from '../../src/index.js';
import fc from 'fast-check';
import { EvictedSummary } from '../../src/stores/memory/evicted-summary.js';

/** A store whose every rule used here remembers its forgotten buckets. */
function rememberingStore(options: MemoryStoreOptions): MemoryStore {
  const rememberForgotten = ['login', 'api', 'reports', 'tb', 'r', 's', 'fw', 'sw', 'aw', 'l'];
  return new MemoryStore({ ...options, rememberForgotten });
}

describe('MemoryStore: evicted buckets stay strict', () => {
  it('junk-nick attack: one IP rotating 8,200 throwaway nicks gets exactly what one honest bucket gives at the target nick', () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = rememberingStore({});
    const login = createLimiter({
      name: 'login',
      rule: tokenBucket({ limit: 10, period: '10m' }),
      store,
      clock,
    });
    const ip = ipKey('198.51.100.7');
    const target = compositeKey([ip, 'alice']);
    let guesses = 0;
    for (let minute = 0; minute < 30; minute++) {
      // Guess until refused (bounded: a bucket holds at most 10).
      for (let attempt = 0; attempt < 20 && login.takeSync(target).allowed; attempt++) guesses++;
      // Then push the target out of both generations with throwaway nicks.
      for (let i = 0; i < 8_200; i++) login.takeSync(compositeKey([ip, `junk${minute}-${i}`]));
      assert.ok(store.bucketCount('login') <= 2 * 4096);
      clock.advance(60_000);
    }
    // A full bucket (10) at once, then one token per minute for the 29 minutes that followed.
    assert.equal(guesses, 10 + 29);
  });

  it('round robin over 5,000 users at 60 per minute: every user is refused exactly as often as its own bucket says', () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = rememberingStore({});
    const api = createLimiter({ name: 'api', rule: tokenBucket({ limit: 60, period: '1m' }), store, clock });
    const users = 5_000;
    let refused = 0;
    // 62 rounds at one instant: each user's bucket admits 60 and refuses the last 2.
    for (let round = 0; round < 62; round++)
      for (let user = 0; user < users; user++) if (!api.takeSync(`user:${user}`).allowed) refused++;
    assert.equal(refused, users * 2);
    // A minute later every bucket is full again, and no more than full.
    clock.advance(60_000);
    let admitted = 0;
    for (let round = 0; round < 61; round++)
      for (let user = 0; user < users; user++) if (api.takeSync(`user:${user}`).allowed) admitted++;
    assert.equal(admitted, users * 60);
  });

  it('a calendar quota that left the maps keeps its count for the rest of its day, and a new day starts fresh', () => {
    const clock = manualClock(Date.UTC(2026, 0, 1, 9));
    const store = rememberingStore({ maxKeysPerGeneration: 16 });
    const reports = createLimiter({ name: 'reports', rule: calendarQuota({ limit: 3 }), store, clock });
    for (let i = 0; i < 3; i++) assert.equal(reports.takeSync('acct').allowed, true);
    for (let i = 0; i < 40; i++) reports.takeSync(`other${i}`);
    assert.equal(reports.takeSync('acct').allowed, false, 'evicted, but its day is spent');
    clock.advance('15h'); // 00:00 UTC the next day
    assert.equal(reports.takeSync('acct').allowed, true);
    assert.equal(reports.peekSync('acct').remaining, 2);
  });

  it('a token bucket that left the maps refills at its rate, never faster', () => {
    const clock = manualClock(0);
    const store = rememberingStore({ maxKeysPerGeneration: 4 });
    const limit = createLimiter({ name: 'tb', rule: tokenBucket({ limit: 5, period: '5m' }), store, clock });
    for (let i = 0; i < 5; i++) limit.takeSync('k');
    for (let i = 0; i < 20; i++) limit.takeSync(`other${i}`);
    assert.equal(store.bucketCount('tb') <= 8, true);
    assert.equal(limit.peekSync('k').remaining, 0);
    clock.advance('2m');
    assert.equal(limit.peekSync('k').remaining, 2);
    clock.advance('3m');
    assert.equal(limit.peekSync('k').remaining, 5);
  });

  it('a reset key is full even when the summary still remembers it', () => {
    const clock = manualClock(0);
    const store = rememberingStore({ maxKeysPerGeneration: 4 });
    const limit = createLimiter({ name: 'r', rule: tokenBucket({ limit: 3, period: '1h' }), store, clock });
    for (let i = 0; i < 3; i++) limit.takeSync('k');
    for (let i = 0; i < 20; i++) limit.takeSync(`other${i}`);
    assert.equal(limit.peekSync('k').remaining, 0);
    limit.resetSync('k');
    assert.equal(limit.peekSync('k').remaining, 3);
    assert.equal(limit.takeSync('k').remaining, 2);
    // Evicted again: it comes back no fuller than it left. (The summary cannot forget one key, so
    // until the state before the reset refills, the key may come back as strict as that state.)
    for (let i = 20; i < 40; i++) limit.takeSync(`other${i}`);
    assert.ok(limit.peekSync('k').remaining <= 2);
  });

  it('a rule that never forgets a bucket that is not full holds no summary', () => {
    const clock = manualClock(0);
    const store = rememberingStore({ maxKeysPerGeneration: 4 });
    const limit = createLimiter({ name: 's', rule: tokenBucket({ limit: 1, period: '1s' }), store, clock });
    for (let i = 0; i < 100; i++) {
      limit.takeSync(`k${i}`);
      clock.advance(1_000); // every bucket is full again before it leaves the maps
    }
    assert.equal(store.summaryBytes('s'), 0);
    for (let i = 0; i < 20; i++) limit.takeSync(`burst${i}`);
    assert.equal(store.summaryBytes('s'), 4 * 16384 * 8);
  });

  it('a fixed window that left the maps keeps its count until its window ends', () => {
    const clock = manualClock(Date.UTC(2026, 0, 1, 9));
    const store = rememberingStore({ maxKeysPerGeneration: 16 });
    const api = createLimiter({ name: 'fw', rule: fixedWindow({ limit: 3, window: '1m' }), store, clock });
    for (let i = 0; i < 3; i++) assert.equal(api.takeSync('acct').allowed, true);
    for (let i = 0; i < 40; i++) api.takeSync(`other${i}`);
    assert.equal(api.takeSync('acct').allowed, false, 'evicted, but its window is spent');
    clock.advance('1m');
    assert.equal(api.peekSync('acct').remaining, 3);
  });

  it('a sliding window that left the maps keeps both counts: the previous one weighs as it did', () => {
    const start = Date.UTC(2026, 0, 1, 9);
    const clock = manualClock(start);
    const store = rememberingStore({ maxKeysPerGeneration: 16 });
    const api = createLimiter({ name: 'sw', rule: slidingWindow({ limit: 10, window: '1m' }), store, clock });
    for (let i = 0; i < 10; i++) assert.equal(api.takeSync('acct').allowed, true);
    // Half-way through the next window; the flood is charged there, so the summary moves on one
    // window after folding 'acct' (whose count becomes the previous one).
    clock.set(start + 90_000);
    for (let i = 0; i < 40; i++) api.takeSync(`other${i}`);
    assert.equal(store.bucketCount('sw') <= 32, true);
    assert.equal(api.peekSync('acct').remaining, 5, 'ten in the previous window weigh five half-way');
    assert.equal(api.takeSync('acct', { cost: 5 }).allowed, true);
    assert.equal(api.takeSync('acct').allowed, false);
    // Both counts survive a second eviction: 10 before, 5 now.
    for (let i = 40; i < 80; i++) api.takeSync(`other${i}`);
    clock.set(start + 105_000); // three quarters in: 10 × 1/4 weighs 3 (rounded up), plus 5
    assert.equal(api.peekSync('acct').remaining, 2);
    // A window later, the 5 weigh as the previous count; two windows later nothing is left.
    clock.set(start + 150_000);
    for (let i = 80; i < 120; i++) api.takeSync(`other${i}`);
    assert.equal(api.peekSync('acct').remaining, 7);
    clock.set(start + 240_000);
    assert.equal(api.peekSync('acct').remaining, 10);
  });

  it("an anchored window that left the maps keeps its count until its own window ends, whatever other keys' windows", () => {
    const start = Date.UTC(2026, 0, 1, 9);
    const clock = manualClock(start);
    const store = rememberingStore({ maxKeysPerGeneration: 16 });
    const api = createLimiter({ name: 'aw', rule: anchoredWindow({ limit: 3, window: '1m' }), store, clock });
    for (let i = 0; i < 3; i++) assert.equal(api.takeSync('acct').allowed, true);
    // Other keys start their windows later, and push 'acct' out of the maps.
    clock.advance('10s');
    for (let i = 0; i < 40; i++) api.takeSync(`other${i}`);
    assert.equal(api.takeSync('acct').allowed, false, 'evicted, but its window is spent');
    clock.advance('20s');
    for (let i = 40; i < 80; i++) api.takeSync(`other${i}`);
    assert.equal(api.takeSync('acct').allowed, false, 'evicted again, its window still spent');
    // The summary may hold a key a little longer than its own window, never shorter; once every
    // window folded has ended, the key is new again.
    clock.set(start + 200_000);
    assert.equal(api.peekSync('acct').remaining, 3);
  });

  for (const [title, make] of [
    ['fixed window', (limit: number) => fixedWindow({ limit, window: '10s' })],
    ['sliding window', (limit: number) => slidingWindow({ limit, window: '10s' })],
    ['anchored window', (limit: number) => anchoredWindow({ limit, window: '10s' })],
  ] as const) {
    it(`${title}: a key that comes back from the summary is never looser than one never evicted`, () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 8 }),
          fc.array(
            fc.record({
              advanceMs: fc.integer({ min: 0, max: 12_000 }),
              cost: fc.integer({ min: 0, max: 4 }),
              flood: fc.integer({ min: 0, max: 40 }),
            }),
            { minLength: 1, maxLength: 40 },
          ),
          (limit, steps) => {
            const clock = manualClock(Date.UTC(2026, 0, 1));
            const rule: Rule = make(limit);
            const small = createLimiter({
              name: 'l',
              rule,
              store: rememberingStore({ maxKeysPerGeneration: 4, summaryWidth: 16 }),
              clock,
            });
            const exact = createLimiter({ name: 'l', rule, store: new MemoryStore(), clock });
            let junk = 0;
            for (const { advanceMs, cost, flood } of steps) {
              clock.advance(advanceMs);
              for (let i = 0; i < flood; i++) small.takeSync(`junk${junk++}`, { cost: 1 + (i % 3) });
              const strict = small.takeSync('k', { cost });
              const truth = exact.takeSync('k', { cost });
              if (strict.allowed) assert.equal(truth.allowed, true);
              // Once the evicted key is refused where the exact one is not, their histories part.
              if (strict.allowed !== truth.allowed) return;
              assert.ok(strict.remaining <= truth.remaining);
              // An anchored window that came back from the summary runs on a window of its own
              // (its count kept, its end no earlier than its own): from then on the two keys'
              // windows start at different times, and neither history bounds the other.
              if (rule.kind === 'anchored-window' && strict.resetMs !== truth.resetMs) return;
            }
          },
        ),
        { numRuns: 300 },
      );
    });
  }
});

describe("EvictedSummary: windows that start at each key's own time", () => {
  const state = (value: number, window: number) => ({
    value,
    window,
    previous: 0,
    blockedUntil: 0,
    blockMs: 0,
  });
  const read = (summary: EvictedSummary, first: number) => {
    const target = state(0, 0);
    return summary.estimate(first, 1, 0, target) ? target : undefined;
  };

  it("a later window of another key keeps an earlier key's count, running until the latest start plus a window", () => {
    const summary = new EvictedSummary(2, 16, 0, 60_000);
    summary.fold(1, 1, state(5, 1_000), 0);
    summary.fold(2, 1, state(2, 30_000), 0);
    // The next generation of windows moves the first one's counts aside, still read.
    summary.fold(3, 1, state(1, 70_000), 0);
    assert.deepEqual(read(summary, 1), state(5, 70_000));
    assert.deepEqual(read(summary, 2), state(2, 70_000));
    // Two generations on, every window of the first has ended before the folded one started.
    summary.fold(4, 1, state(1, 150_000), 0);
    assert.equal(read(summary, 1), undefined);
    assert.deepEqual(read(summary, 3), state(1, 150_000));
  });
});
