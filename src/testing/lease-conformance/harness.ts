/**
 * What the lease sections share: the context the store suite hands in, and the suite built from
 * it (a fresh store that keeps leases, a concurrency limit on it, a lease that must be granted).
 */
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ManualClock } from '../../core/clock.js';
import type { Duration } from '../../core/duration.js';
import { isSluiceError } from '../../core/errors.js';
import { concurrencyLimit, type ConcurrencyLimiter } from '../../limiter/concurrency.js';
import type { Lease } from '../../limiter/leases.js';
import { isLeaseStore } from '../../stores/contract/lease-store.js';
import type { Store } from '../../stores/contract/store.js';

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

/** What every lease section works with; `clock` is the running test's, replaced by `fresh`. */
export interface LeaseSuite {
  readonly context: LeaseSuiteContext;
  readonly clock: ManualClock;
  /** A fresh store and clock; false (the test skipped, saying so) for a store without leases. */
  fresh(t: TestContext): Promise<boolean>;
  /** A concurrency limit on the fresh store and clock. */
  limit(max: number, leaseTtl?: Duration, name?: string): ConcurrencyLimiter;
  /** Acquires on `key`, asserting that a lease was granted. */
  granted(l: ConcurrencyLimiter, key: string): Promise<Lease>;
}

export const argumentError = (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT');

/**
 * Builds the lease section's state (inside its `describe`).
 *
 * @example
 * const suite = createLeaseSuite(context);
 * grantTests(suite);
 */
export function createLeaseSuite(context: LeaseSuiteContext): LeaseSuite {
  let clock: ManualClock;
  return {
    context,
    get clock() {
      return clock;
    },
    fresh: async (t) => {
      await context.fresh();
      clock = context.clock();
      if (isLeaseStore(context.store())) return true;
      t.skip(`${context.name} keeps no leases`);
      return false;
    },
    limit: (max, leaseTtl = '1m', name = context.nextName()) => {
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
    },
    granted: async (l, key) => {
      const { decision, lease } = await l.acquire(key);
      assert.equal(decision.allowed, true);
      assert.ok(lease !== undefined);
      return lease;
    },
  };
}
