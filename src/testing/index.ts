/**
 * `sluice/testing`: the conformance suites sluice runs against its own stores and adapters, for
 * stores and adapters written elsewhere (and a store that fails on command, for testing what a
 * limit does then). The suites register `node:test` tests and assert with `node:assert`: run them
 * under `node --test`.
 * This entry is for tests only; nothing else in sluice imports `node:test`.
 *
 * @example
 * import { httpConformance } from 'sluice/testing';
 * httpConformance({ name: 'koa', header: readHeader, start: startKoaApp });
 *
 * @module sluice/testing
 */
export {
  httpConformance,
  type AppSpec,
  type HttpHarness,
  type HttpReply,
  type LimitedRoute,
  type RunningApp,
} from './http-conformance/index.js';
export { storeConformance, type ConformanceTarget } from './store-conformance/index.js';
export { abandonRequest, leavingRequest, nodeHeader, portApp, socketApp } from './socket-app.js';
export { FailingStore, type FailMode } from './failing-store.js';
