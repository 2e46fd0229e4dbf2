/**
 * How a limiter treats a store's coded errors: an overloaded store is load, not a failure (never
 * admitted without a decision), and a store whose schema is missing says so by its own code.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { recordingLogger } from './assertions.js';
import { FailingStore } from '../../src/testing/failing-store.js';
import {
  SluiceError,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type FailurePolicy,
} from '../../src/index.js';

function setup(failure: FailurePolicy, error: unknown) {
  const store = new FailingStore();
  const logger = recordingLogger();
  const limiter = createLimiter({
    name: 'api',
    rule: tokenBucket({ limit: 2, period: '1m' }),
    store,
    failure,
    logger,
    clock: manualClock(0),
  });
  store.mode = 'error';
  store.error = error;
  return { store, logger, limiter };
}

const overloaded = () =>
  new SluiceError('SLUICE_STORE_OVERLOADED', 'the redis store has 10000 decisions waiting');
const schemaMissing = () =>
  new SluiceError('SLUICE_STORE_SCHEMA', 'the sluice tables are missing: run store.migrate() once');

describe('an overloaded store is not a failing one', () => {
  for (const failure of ['open', 'closed'] as const) {
    it(`${failure}: SLUICE_STORE_OVERLOADED reaches the caller (503), never admitted, counted as an overload`, async () => {
      const { limiter, logger } = setup(failure, overloaded());
      for (let i = 0; i < 3; i++) {
        await assert.rejects(
          limiter.take('k'),
          (e: unknown) => isSluiceError(e, 'SLUICE_STORE_OVERLOADED') && e.status === 503,
        );
      }
      const cascade = createCascade([limiter], { mode: 'all-or-nothing' });
      await assert.rejects(cascade.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_OVERLOADED'));
      const stats = limiter.stats();
      assert.equal(stats.overloads, 4);
      assert.equal(stats.failOpenAdmits, 0);
      assert.equal(stats.storeFailures, 0, 'load is not counted as a failure');
      assert.equal(logger.lines.length, 1);
      assert.equal(logger.lines[0]!.details.error, 'SLUICE_STORE_OVERLOADED');
    });
  }

  it('insurance: the insurance limiter decides while the store is overloaded', async () => {
    const { limiter } = setup('insurance', overloaded());
    const ds = [await limiter.take('k'), await limiter.take('k'), await limiter.take('k')];
    assert.deepEqual(
      ds.map((d) => [d.allowed, d.source]),
      [
        [true, 'insurance'],
        [true, 'insurance'],
        [false, 'insurance'],
      ],
    );
    assert.equal(limiter.stats().overloads, 3);
    assert.equal(limiter.stats().insuranceDecisions, 3);
  });
});

describe('a store whose schema is missing', () => {
  it('closed: the caller gets SLUICE_STORE_SCHEMA as the top-level code, with the store message that helps', async () => {
    const { limiter, logger } = setup('closed', schemaMissing());
    await assert.rejects(limiter.take('k'), (e: unknown) => {
      assert.ok(isSluiceError(e, 'SLUICE_STORE_SCHEMA'), `got ${String(e)}`);
      assert.equal(e.status, 503);
      assert.match(e.message, /run store\.migrate\(\)/);
      return true;
    });
    assert.equal(limiter.stats().storeFailures, 1);
    assert.equal(logger.lines.length, 1);
    assert.equal(logger.lines[0]!.details.error, 'SLUICE_STORE_SCHEMA');
    assert.match(logger.lines[0]!.message, /run store\.migrate\(\)/);
  });

  it('closed with closedStatus 500 keeps the code and takes the status', async () => {
    const store = new FailingStore();
    const limiter = createLimiter({
      name: 'five',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      closedStatus: 500,
      logger: recordingLogger(),
    });
    store.mode = 'error';
    store.error = schemaMissing();
    await assert.rejects(
      limiter.take('k'),
      (e: unknown) => isSluiceError(e, 'SLUICE_STORE_SCHEMA') && e.status === 500,
    );
  });

  it('open and insurance still apply', async () => {
    const open = setup('open', schemaMissing()).limiter;
    assert.equal((await open.take('k')).source, 'fail-open');
    const insured = setup('insurance', schemaMissing()).limiter;
    assert.equal((await insured.take('k')).source, 'insurance');
  });
});

describe('a reset whose store fails', () => {
  for (const failure of ['open', 'insurance', 'closed'] as const) {
    it(`${failure}: rejects with SLUICE_STORE_UNAVAILABLE carrying the driver's code, never the raw driver error`, async () => {
      const driverError = Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
      const { limiter } = setup(failure, driverError);
      await assert.rejects(limiter.reset('k'), (e: unknown) => {
        assert.ok(isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE'), `got ${String(e)}`);
        assert.match(String(e.cause), /ECONNRESET/);
        return true;
      });
      assert.equal(limiter.stats().storeFailures, 1);
    });
  }
});
