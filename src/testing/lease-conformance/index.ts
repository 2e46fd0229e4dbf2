/**
 * The lease section of the store conformance suite: concurrency limits (`concurrencyLimit`) hold
 * the same on every store with leases. Registered by `storeConformance` inside its own
 * `describe`, with the suite's fresh store and manual clock.
 */
import { describe } from 'node:test';
import { bindingTests } from './binding-tests.js';
import { expiryTests } from './expiry-tests.js';
import { grantTests } from './grant-tests.js';
import { createLeaseSuite, type LeaseSuiteContext } from './harness.js';

export type { LeaseSuiteContext } from './harness.js';

/**
 * Registers the lease tests.
 *
 * @example
 * leaseConformance({ name, skip: false, timeout: undefined, fresh, store: () => store, clock: () => clock, nextName })
 */
export function leaseConformance(context: LeaseSuiteContext): void {
  describe('concurrency leases', { skip: context.skip }, () => {
    const suite = createLeaseSuite(context);
    grantTests(suite);
    expiryTests(suite);
    bindingTests(suite);
  });
}
