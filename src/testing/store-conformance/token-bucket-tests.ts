/** The token bucket: burst, exact refill, weighted costs, penalties and peeks. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { HOUR, MINUTE, type StoreSuite } from './harness.js';

/** Registers the token bucket tests. */
export function tokenBucketTests(suite: StoreSuite): void {
  describe('token bucket', () => {
    refillTests(suite);
    refusalTests(suite);
  });
}

/** Burst, refill and weighted costs. */
function refillTests(suite: StoreSuite): void {
  const { fresh, limiter, takeMany, allowedCount } = suite;

  it('a full bucket admits exactly `burst` at once, burst defaults to the limit (5 per hour -> 5)', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 5, period: '1h' }));
    const ds = await takeMany(l, 'ip-1', 6);
    assert.deepEqual(
      ds.map((d) => d.allowed),
      [true, true, true, true, true, false],
    );
    assert.deepEqual(
      ds.map((d) => d.remaining),
      [4, 3, 2, 1, 0, 0],
    );
    // Each admitted take pushes "full again" out by one interval (12 minutes).
    assert.deepEqual(
      ds.slice(0, 5).map((d) => d.resetMs),
      [12, 24, 36, 48, 60].map((m) => m * MINUTE),
    );
    const refused = ds[5]!;
    assert.equal(refused.retryAfterMs, 12 * MINUTE);
    assert.equal(refused.retryAfterSeconds, 720);
    assert.equal(refused.limit, 5);
    assert.equal(refused.capacity, 5);
    assert.equal(refused.name, l.name);
    assert.equal(refused.windowMs, HOUR, "a decision carries its window: makeDecision's 9th argument");
    assert.equal(refused.source, 'store');
  });

  it('an explicit burst caps what is taken at once; then the refill rate governs (30/min, burst 10)', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 30, period: '1m', burst: 10 }));
    assert.equal(allowedCount(await takeMany(l, 'u', 15)), 10);
    const refused = await l.take('u');
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, 2000);
    suite.clock.advance(1999);
    assert.equal((await l.take('u')).allowed, false);
    suite.clock.advance(1);
    assert.equal((await l.take('u')).allowed, true);
    assert.equal((await l.take('u')).allowed, false);
    // One minute refills 30 tokens, but the bucket holds at most 10.
    suite.clock.advance('1m');
    assert.equal(allowedCount(await takeMany(l, 'u', 12)), 10);
  });

  it('an idle bucket fills up to burst, never more', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 10, period: '10m' }));
    suite.clock.advance('1d');
    const ds = await takeMany(l, 'k', 12);
    assert.equal(allowedCount(ds), 10);
    assert.equal(ds[0]!.remaining, 9);
    suite.clock.advance('100d');
    assert.equal((await l.peek('k')).remaining, 10);
    assert.equal((await l.peek('k')).resetMs, 0);
  });

  it('refill is exact for periods that do not divide by the limit (7 per hour)', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 7, period: '1h' }));
    assert.equal(allowedCount(await takeMany(l, 'k', 8)), 7);
    // One token every 3,600,000 / 7 = 514,285.714… ms: not yet at 514,285, admitted at 514,286.
    const refused = await l.take('k');
    assert.equal(refused.retryAfterMs, 514_286);
    suite.clock.advance(514_285);
    assert.equal((await l.take('k')).allowed, false);
    suite.clock.advance(1);
    assert.equal((await l.take('k')).allowed, true);
    // Seven intervals make exactly one hour: after it the bucket is full again.
    suite.clock.set(Date.UTC(2026, 0, 15, 12) + HOUR + 514_286);
    const peek = await l.peek('k');
    assert.equal(peek.remaining, 7);
  });

  it('weighted costs take several tokens at once', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 10, period: '10s' }));
    const first = await l.take('k', { cost: 3 });
    assert.equal(first.allowed, true);
    assert.equal(first.remaining, 7);
    assert.equal(first.cost, 3);
    assert.equal((await l.take('k', { cost: 7 })).remaining, 0);
    const refused = await l.take('k', { cost: 4 });
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, 4000);
    suite.clock.advance(4000);
    assert.equal((await l.take('k', { cost: 4 })).allowed, true);
  });

  it('a cost larger than burst is refused for good, and charges nothing', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 10, period: '10s', burst: 5 }));
    const d = await l.take('k', { cost: 6 });
    assert.equal(d.allowed, false);
    assert.equal(d.retryAfterMs, Infinity);
    // The bucket is not read: nothing is reported remaining, never more than it may hold.
    assert.equal(d.remaining, 0);
    assert.equal((await l.peek('k')).remaining, 5);
  });
}

/** What refusals, penalties and peeks charge, and how a refusal rounds its wait. */
function refusalTests(suite: StoreSuite): void {
  const { fresh, limiter, takeMany, allowedCount } = suite;

  it('refusals consume nothing: hammering an empty bucket does not delay the next token', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 10, period: '10m' }));
    await takeMany(l, 'k', 10);
    const refusals = await takeMany(l, 'k', 100);
    assert.equal(allowedCount(refusals), 0);
    assert.ok(refusals.every((d) => d.retryAfterMs === MINUTE));
    suite.clock.advance('1m');
    assert.equal((await l.take('k')).allowed, true);
  });

  it('a rule with penalty charges refusals, capped at one extra refill', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 10, period: '10m', penalty: true }));
    await takeMany(l, 'k', 10);
    const refused = await l.take('k');
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, MINUTE);
    // The refused take was charged: the next one waits two intervals.
    assert.equal((await l.take('k')).retryAfterMs, 2 * MINUTE);
    await takeMany(l, 'k', 50);
    // Debt never exceeds one extra full refill: at most 10 minutes beyond empty.
    const capped = await l.take('k');
    assert.equal(capped.retryAfterMs, 10 * MINUTE + MINUTE);
    suite.clock.advance('11m');
    assert.equal((await l.take('k')).allowed, true);
  });

  it('a peek (cost 0) reports what a take of 1 would get and charges nothing', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 2, period: '1m' }));
    const p0 = await l.peek('k');
    assert.equal(p0.allowed, true);
    assert.equal(p0.remaining, 2);
    assert.equal(p0.cost, 0);
    assert.equal((await l.take('k', { cost: 0 })).remaining, 2);
    await takeMany(l, 'k', 2);
    const p1 = await l.peek('k');
    assert.equal(p1.allowed, false);
    assert.equal(p1.remaining, 0);
    assert.equal(p1.retryAfterMs, 30_000);
    assert.equal(p1.resetMs, MINUTE);
    suite.clock.advance('30s');
    assert.equal((await l.take('k')).allowed, true);
  });

  it('retryAfterSeconds rounds up and is at least 1', async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 1, period: '1500ms' }));
    await l.take('k');
    const d = await l.take('k');
    assert.equal(d.retryAfterMs, 1500);
    assert.equal(d.retryAfterSeconds, 2);
    suite.clock.advance(1499);
    const soon = await l.take('k');
    assert.equal(soon.retryAfterMs, 1);
    assert.equal(soon.retryAfterSeconds, 1);
  });
}
