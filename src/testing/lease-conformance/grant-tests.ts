/** Leases granted up to the limit, and released once by the limit that granted them. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { Lease } from '../../limiter/leases.js';
import { argumentError, type LeaseSuite } from './harness.js';

/** Registers the tests of granting and releasing leases. */
export function grantTests(suite: LeaseSuite): void {
  const { fresh, limit, granted } = suite;

  it('grants max leases per key and refuses the next with the 429 fields', async (t) => {
    if (!(await fresh(t))) return;
    const l = limit(3);
    const first = await l.acquire('k');
    assert.equal(first.decision.allowed, true);
    assert.deepEqual(
      [first.decision.name, first.decision.limit, first.decision.capacity, first.decision.remaining],
      [l.name, 3, 3, 2],
    );
    assert.deepEqual([first.lease?.key, first.lease?.rule, first.lease?.at], ['k', l.name, suite.clock()]);
    assert.equal(first.decision.resetMs, 60_000);
    suite.clock.advance('10s');
    await granted(l, 'k');
    const third = await l.acquire('k');
    assert.equal(third.decision.remaining, 0);
    suite.clock.advance('5s');
    const refused = await l.acquire('k');
    assert.equal(refused.lease, undefined);
    assert.deepEqual(
      [refused.decision.allowed, refused.decision.remaining, refused.decision.retryAfterMs],
      [false, 0, 45_000],
      'a slot frees when the earliest lease expires',
    );
    assert.equal(refused.decision.retryAfterSeconds, 45);
    assert.equal(refused.decision.resetMs, 55_000, 'the last lease ends 55 s from now');
    assert.equal((await l.acquire('other')).decision.remaining, 2, 'keys are independent');
    assert.equal((await limit(3).acquire('k')).decision.remaining, 2, 'limits are independent');
  });

  it('a release frees one slot once; a second release is harmless and frees nothing', async (t) => {
    if (!(await fresh(t))) return;
    const l = limit(2);
    const a = await granted(l, 'k');
    await granted(l, 'k');
    assert.equal(await l.release(a), true);
    assert.equal(await l.release(a), false, 'released already');
    await granted(l, 'k');
    assert.equal((await l.acquire('k')).decision.allowed, false, 'one slot came back, not two');
  });

  it('a lease of another limit, a copy or one made by hand is refused and frees nothing', async (t) => {
    if (!(await fresh(t))) return;
    const l = limit(1);
    const other = limit(1);
    const mine = await granted(l, 'k');
    const theirs = await granted(other, 'k');
    await assert.rejects(l.release(theirs), argumentError, "another limit's lease");
    await assert.rejects(l.release({ ...mine }), argumentError, 'a copy');
    await assert.rejects(
      l.release({ rule: l.name, key: 'k', id: mine.id, at: mine.at, expiresAt: mine.expiresAt }),
      argumentError,
      'made by hand',
    );
    await assert.rejects(l.release(undefined as unknown as Lease), argumentError);
    assert.equal((await l.acquire('k')).decision.allowed, false, 'still held');
    assert.equal((await other.acquire('k')).decision.allowed, false, 'still held');
  });
}
