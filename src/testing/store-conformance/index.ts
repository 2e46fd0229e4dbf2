/**
 * The store conformance suite: every Store passes it with exact numbers, whichever process or
 * server holds the counts. It registers its tests with `node:test` (`describe` / `it`, with
 * `before` and `after` for the target's setup and teardown) and asserts with `node:assert`: run
 * it under `node --test`.
 *
 * A target supplies fresh stores that decide at the `now` they are given (the caller's clock),
 * so that the suite can move time with a manual clock instead of sleeping. A store that
 * normally uses its own clock offers a caller-clock mode for this; its own tests prove the
 * store-clock mode separately.
 *
 * Each section is a module of its own; this one registers them in order, so that the test names
 * and their order stay what a store's CI output has always shown.
 */
import { after, before, describe } from 'node:test';
import { leaseConformance } from '../lease-conformance/index.js';
import { allOrNothingTests } from './all-or-nothing-tests.js';
import { atomicityTests } from './atomicity-tests.js';
import { boundsTests } from './bounds-tests.js';
import { bucketTierTests } from './bucket-tier-tests.js';
import { calendarPeriodTests } from './calendar-period-tests.js';
import { calendarQuotaTests } from './calendar-quota-tests.js';
import { fixedWindowTests } from './fixed-window-tests.js';
import { createStoreSuite, type ConformanceTarget } from './harness.js';
import { keyTests } from './key-tests.js';
import { lockoutTests } from './lockout-tests.js';
import { refundTests } from './refund-tests.js';
import { shadowModeTests } from './shadow-mode-tests.js';
import { slidingWindowTests } from './sliding-window-tests.js';
import { tokenBucketTests } from './token-bucket-tests.js';
import { waitingTests } from './waiting-tests.js';
import { windowsAlikeTests } from './windows-alike-tests.js';

export type { ConformanceTarget } from './harness.js';

/**
 * Registers the store conformance suite for one store, as `node:test` tests inside one
 * `describe` named after the target. Call it at the top level of a test file run by
 * `node --test`.
 *
 * @example
 * import { storeConformance } from 'sluice/testing';
 * storeConformance({ name: 'my store', create: async () => new MyStore() });
 */
export function storeConformance(target: ConformanceTarget): void {
  describe(`store conformance: ${target.name}`, { skip: target.skip ?? false }, () => {
    const suite = createStoreSuite(target);

    before(async () => {
      await target.setup?.();
    });
    after(async () => {
      await target.teardown?.();
    });
    after(() => suite.release());

    tokenBucketTests(suite);
    calendarQuotaTests(suite);
    fixedWindowTests(suite);
    slidingWindowTests(suite);
    windowsAlikeTests(suite);
    calendarPeriodTests(suite);
    allOrNothingTests(suite);
    lockoutTests(suite);
    refundTests(suite);
    bucketTierTests(suite);
    waitingTests(suite);
    shadowModeTests(suite);
    boundsTests(suite);
    keyTests(suite);
    atomicityTests(suite);
    leaseConformance({
      name: target.name,
      skip: suite.unless(target.leases, 'keeps no leases').skip,
      timeout: target.timeout,
      fresh: () => suite.fresh(),
      store: () => suite.store,
      clock: () => suite.clock,
      nextName: () => `r${suite.nextId()}`,
    });
  });
}
