/** Leases that expire each on its own, and simultaneous acquisitions that grant exactly the limit. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { LeaseSuite } from './harness.js';

/** Registers the tests of expiry and contention. */
export function expiryTests(suite: LeaseSuite): void {
  const { fresh, limit, granted } = suite;

  it('each lease expires on its own after the lease ttl, not all of a key together', async (t) => {
    if (!(await fresh(t))) return;
    const l = limit(2, '1m');
    await granted(l, 'k');
    suite.clock.advance('30s');
    const later = await granted(l, 'k');
    suite.clock.advance('30s'); // the first has just expired, the second has 30 s left
    await granted(l, 'k');
    const refused = await l.acquire('k');
    assert.deepEqual([refused.decision.allowed, refused.decision.retryAfterMs], [false, 30_000]);
    suite.clock.advance('30s'); // the second expired
    assert.equal(await l.release(later), false, 'it had expired');
    await granted(l, 'k');
    assert.equal((await l.acquire('k')).decision.allowed, false, 'releasing an expired lease freed nothing');
  });

  it('simultaneous acquisitions on one key grant exactly max', async (t) => {
    if (!(await fresh(t))) return;
    const l = limit(10);
    const answers = await Promise.all(Array.from({ length: 200 }, () => l.acquire('hot')));
    const leases = answers.filter((a) => a.lease !== undefined).map((a) => a.lease!);
    assert.equal(leases.length, 10);
    assert.equal(new Set(leases.map((lease) => lease.id)).size, 10, 'distinct ids');
    const released = await Promise.all(leases.map((lease) => l.release(lease)));
    assert.deepEqual(
      released,
      Array.from({ length: 10 }, () => true),
    );
    const again = await Promise.all(Array.from({ length: 50 }, () => l.acquire('hot')));
    assert.equal(again.filter((a) => a.decision.allowed).length, 10);
  });
}
