/** A limit name bound once per store, and a concurrency limit after rate limits. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../core/errors.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { acquireAfter } from '../../limiter/lease-cascade.js';
import { createLimiter } from '../../limiter/limiter.js';
import type { Lease } from '../../limiter/leases.js';
import type { LeaseSuite } from './harness.js';

/** Registers the tests of names and of leases after rate limits. */
export function bindingTests(suite: LeaseSuite): void {
  const { fresh, limit } = suite;

  it('a name is bound once in a store, whether a rule or a concurrency limit holds it', async (t) => {
    if (!(await fresh(t))) return;
    const name = suite.context.nextName();
    limit(1, '1m', name);
    assert.throws(
      () =>
        createLimiter({ name, rule: tokenBucket({ limit: 1, period: '1m' }), store: suite.context.store() }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'),
    );
    assert.throws(
      () => limit(1, '1m', name),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'),
    );
    const closed = limit(1);
    closed.close();
    await assert.rejects(closed.acquire('k'), (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'));
    await assert.rejects(closed.release({} as Lease), (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'));
  });

  it('after rate limits: a refused lease refunds the rate takes; a refused rate asks for no lease', async (t) => {
    if (!(await fresh(t))) return;
    const l = limit(1);
    const perMinute = createLimiter({
      name: suite.context.nextName(),
      rule: tokenBucket({ limit: 3, period: '1m' }),
      store: suite.context.store(),
      clock: suite.clock,
      ...(suite.context.timeout === undefined ? {} : { timeout: suite.context.timeout }),
    });
    const first = await acquireAfter(l, 'k', [{ limiter: perMinute, key: 'k' }]);
    assert.deepEqual(
      [first.allowed, first.decisions.map((d) => d.name), first.receipts.length],
      [true, [perMinute.name, l.name], 1],
    );
    const refused = await acquireAfter(l, 'k', [{ limiter: perMinute, key: 'k' }]);
    assert.deepEqual([refused.allowed, refused.lease, refused.receipts], [false, undefined, []]);
    assert.equal(refused.decisions[1]?.allowed, false);
    assert.equal((await perMinute.peek('k')).remaining, 2, 'the refused request was refunded');
    await l.release(first.lease!);
    await acquireAfter(l, 'j', [{ limiter: perMinute, key: 'j', options: { cost: 3 } }]);
    const overRate = await acquireAfter(l, 'k2', [{ limiter: perMinute, key: 'j' }]);
    assert.deepEqual([overRate.allowed, overRate.decisions.length], [false, 1], 'no lease was asked');
    assert.equal((await l.acquire('k2')).decision.remaining, 0, 'k2 held no lease before');
  });
}
