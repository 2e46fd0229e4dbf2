/**
 * The HTTP adapter conformance suite: every adapter runs these scenarios and must answer with the
 * exact statuses, header values and JSON bodies written here, so that all adapters answer alike.
 * It registers its tests with `node:test` (`describe` / `it`) and asserts with `node:assert`: run
 * it under `node --test`.
 *
 * An adapter supplies a harness that builds one app from an {@link AppSpec}: the routes
 * `POST /api/things`, `GET /api/things`, `POST /api/messages`, `GET /health`, `GET /health/live`
 * (handlers read the body, then answer 200 with `{"ok":true}`; HEAD is answered like GET) and
 * `POST /api/login`, whose handler takes from a limiter itself and answers with the adapter's
 * `sendRateLimited` / `sendError`. An adapter that finishes `countOnly` requests also serves
 * `POST /api/outcome` (see {@link AppSpec.outcome}). Time is a manual clock: nothing sleeps to
 * refill.
 *
 * Each section is a module of its own; this one registers them in order, so that the test names
 * and their order stay what an adapter's CI output has always shown.
 */
import { describe } from 'node:test';
import { accessTests } from './access-tests.js';
import { cascadeTests } from './cascade-tests.js';
import { clientAddressTests } from './client-address-tests.js';
import { countOnlyTests } from './count-only-tests.js';
import { delayTests } from './delay-tests.js';
import { handlerTests } from './handler-tests.js';
import { createHttpSuite, type HttpHarness } from './harness.js';
import { headerStyleTests } from './header-style-tests.js';
import { keyTests } from './key-tests.js';
import { noThrowTests } from './no-throw-tests.js';
import { onErrorTests } from './on-error-tests.js';
import { privacyTests } from './privacy-tests.js';
import { quickFormTests } from './quick-form-tests.js';
import { refusalTests } from './refusal-tests.js';
import { routeTests } from './route-tests.js';
import { storeFailureTests } from './store-failure-tests.js';

export type { AppSpec, HttpHarness, HttpReply, LimitedRoute, RunningApp } from './harness.js';

/**
 * Registers the HTTP conformance suite for one adapter, as `node:test` tests inside one
 * `describe` named after the harness. Call it at the top level of a test file run by
 * `node --test`.
 *
 * @example
 * import { httpConformance } from 'sluice/testing';
 * httpConformance({ name: 'my-framework', header: readHeader, start: startApp });
 */
export function httpConformance(harness: HttpHarness): void {
  describe(`http conformance: ${harness.name}`, () => {
    const suite = createHttpSuite(harness);
    refusalTests(suite);
    headerStyleTests(suite);
    cascadeTests(suite);
    keyTests(suite);
    storeFailureTests(suite);
    handlerTests(suite);
    noThrowTests(suite);
    routeTests(suite);
    onErrorTests(suite);
    accessTests(suite);
    clientAddressTests(suite);
    countOnlyTests(suite);
    delayTests(suite);
    privacyTests(suite);
    quickFormTests(suite);
  });
}
