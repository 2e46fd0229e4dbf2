/**
 * The lease section of the store conformance suite: concurrency limits (`concurrencyLimit`) hold
 * the same on every store with leases. Registered by `storeConformance` inside its own
 * `describe`, with the suite's fresh store and manual clock.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ManualClock } from '../core/clock.js';
import type { Duration } from '../core/duration.js';
import { isSluiceError } from '../core/errors.js';
import { tokenBucket } from '../core/rules/token-bucket.js';
import { concurrencyLimit, type ConcurrencyLimiter } from '../limiter/concurrency.js';
import { acquireAfter } from '../limiter/lease-cascade.js';
import { createLimiter } from '../limiter/limiter.js';
import type { Lease } from '../limiter/leases.js';
import { isLeaseStore } from '../stores/contract/lease-store.js';
import type { Store } from '../stores/contract/store.js';

/** What the lease section needs from the suite around it. */
export interface LeaseSuiteContext {
  readonly name: string;
  /** A reason to skip the section, or false. */
  readonly skip: string | false;
  readonly timeout: Duration | undefined;
  /** Makes a fresh store and clock; the section reads them through `store()` and `clock()`. */
  fresh(): Promise<void>;
  store(): Store;
  clock(): ManualClock;
  /** A limit name no other test used. */
  nextName(): string;
}

/**
 * Registers the lease tests.
 *
 * @example
 * leaseConformance({ name, skip: false, timeout: undefined, fresh, store: () => store, clock: () => clock, nextName })
 */
export function leaseConformance(context: LeaseSuiteContext): void {
  const argumentError = (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT');

  describe('concurrency leases', { skip: context.skip }, () => {
    let clock: ManualClock;
    /** A fresh store and clock; false (the test skipped, saying so) for a store without leases. */
    async function fresh(t: TestContext): Promise<boolean> {
      await context.fresh();
      clock = context.clock();
      if (isLeaseStore(context.store())) return true;
      t.skip(`${context.name} keeps no leases`);
      return false;
    }
    function limit(max: number, leaseTtl: Duration = '1m', name = context.nextName()): ConcurrencyLimiter {
      const store = context.store();
      if (!isLeaseStore(store)) throw new Error(`${context.name} keeps no leases`);
      return concurrencyLimit({
        name,
        max,
        leaseTtl,
        store,
        clock,
        ...(context.timeout === undefined ? {} : { timeout: context.timeout }),
      });
    }
    async function granted(l: ConcurrencyLimiter, key: string): Promise<Lease> {
      const { decision, lease } = await l.acquire(key);
      assert.equal(decision.allowed, true);
      assert.ok(lease !== undefined);
      return lease;
    }

    it('grants max leases per key and refuses the next with the 429 fields', async (t) => {
      if (!(await fresh(t))) return;
      const l = limit(3);
      const first = await l.acquire('k');
      assert.equal(first.decision.allowed, true);
      assert.deepEqual(
        [first.decision.name, first.decision.limit, first.decision.capacity, first.decision.remaining],
        [l.name, 3, 3, 2],
      );
      assert.deepEqual([first.lease?.key, first.lease?.rule, first.lease?.at], ['k', l.name, clock()]);
      assert.equal(first.decision.resetMs, 60_000);
      clock.advance('10s');
      await granted(l, 'k');
      const third = await l.acquire('k');
      assert.equal(third.decision.remaining, 0);
      clock.advance('5s');
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

    it('each lease expires on its own after the lease ttl, not all of a key together', async (t) => {
      if (!(await fresh(t))) return;
      const l = limit(2, '1m');
      await granted(l, 'k');
      clock.advance('30s');
      const later = await granted(l, 'k');
      clock.advance('30s'); // the first has just expired, the second has 30 s left
      await granted(l, 'k');
      const refused = await l.acquire('k');
      assert.deepEqual([refused.decision.allowed, refused.decision.retryAfterMs], [false, 30_000]);
      clock.advance('30s'); // the second expired
      assert.equal(await l.release(later), false, 'it had expired');
      await granted(l, 'k');
      assert.equal(
        (await l.acquire('k')).decision.allowed,
        false,
        'releasing an expired lease freed nothing',
      );
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

    it('a name is bound once in a store, whether a rule or a concurrency limit holds it', async (t) => {
      if (!(await fresh(t))) return;
      const name = context.nextName();
      limit(1, '1m', name);
      assert.throws(
        () => createLimiter({ name, rule: tokenBucket({ limit: 1, period: '1m' }), store: context.store() }),
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
        name: context.nextName(),
        rule: tokenBucket({ limit: 3, period: '1m' }),
        store: context.store(),
        clock,
        ...(context.timeout === undefined ? {} : { timeout: context.timeout }),
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
  });
}
