/**
 * The memory store's bound has no reset hole: a bucket that leaves the maps while not full comes
 * back at least as strict as it left (the evicted-bucket summary), so a flood of throwaway keys
 * cannot be used to refill one's own bucket. Exact counts under a manual clock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  MemoryStore,
  calendarQuota,
  compositeKey,
  createLimiter,
  ipKey,
  manualClock,
  tokenBucket,
} from '../../src/index.js';

describe('MemoryStore: evicted buckets stay strict', () => {
  it('junk-nick attack: one IP rotating 8,200 throwaway nicks gets exactly what one honest bucket gives at the target nick', () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = new MemoryStore();
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
    const store = new MemoryStore();
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
    const store = new MemoryStore({ maxKeysPerGeneration: 16 });
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
    const store = new MemoryStore({ maxKeysPerGeneration: 4 });
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
    const store = new MemoryStore({ maxKeysPerGeneration: 4 });
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
    const store = new MemoryStore({ maxKeysPerGeneration: 4 });
    const limit = createLimiter({ name: 's', rule: tokenBucket({ limit: 1, period: '1s' }), store, clock });
    for (let i = 0; i < 100; i++) {
      limit.takeSync(`k${i}`);
      clock.advance(1_000); // every bucket is full again before it leaves the maps
    }
    assert.equal(store.summaryBytes('s'), 0);
    for (let i = 0; i < 20; i++) limit.takeSync(`burst${i}`);
    assert.equal(store.summaryBytes('s'), 4 * 16384 * 8);
  });
});
