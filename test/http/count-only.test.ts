/**
 * The guard's `countOnly`: which responses keep their charge, what is never refunded, and what
 * happens when a refund fails. The adapters' side (finishing when the response closes) is in the
 * HTTP conformance suite.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createGuard, needsFinishing, needsSettling, type GuardOutcome } from '../../src/http/guard.js';
import {
  MemoryStore,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type Limiter,
} from '../../src/index.js';
import { FailingStore } from '../../src/testing/index.js';

const facts = { method: 'POST', path: '/api/x' };
const clock = manualClock(Date.UTC(2026, 0, 1));

function limiterOf(
  name: string,
  limit: number,
  store: MemoryStore | FailingStore = new MemoryStore(),
): Limiter {
  return createLimiter({
    name,
    rule: tokenBucket({ limit, period: '1h' }),
    store,
    clock,
    logger: { warn: () => {} },
  });
}

/** Lets pending promise callbacks (an asynchronous refund and its failure) run. */
const drained = () => new Promise((resolve) => setImmediate(resolve));

describe('countOnly options', () => {
  it('a value other than "failed" or "succeeded" is SLUICE_CONFIG naming the option and the type, not the value', () => {
    const limits = limiterOf('opts', 1);
    for (const bad of ['failures', 'FAILED', true, 400]) {
      assert.throws(
        () => createGuard<object>({ limits, key: () => 'k', countOnly: bad as 'failed' }),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') &&
          /rateLimit countOnly must be "failed" or "succeeded"; received a (string|boolean|number)$/.test(
            (e as Error).message,
          ) &&
          !(e as Error).message.includes(String(bad)),
      );
    }
  });

  it('is refused with a cascade object (it gives no receipts) and with two limits of one name', () => {
    const wide = limiterOf('wide', 5);
    const narrow = limiterOf('narrow', 5);
    assert.throws(
      () =>
        createGuard<object>({ limits: createCascade([wide, narrow]), key: () => 'k', countOnly: 'failed' }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /rateLimit countOnly/.test((e as Error).message),
    );
    const twin = limiterOf('wide', 5);
    assert.throws(
      () => createGuard<object>({ limits: [wide, twin], key: () => 'k', countOnly: 'succeeded' }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /distinct names/.test((e as Error).message),
    );
  });
});

describe('countOnly finishing', () => {
  it('"failed" keeps the charge of statuses from 400 and of a connection closed early; "succeeded" of statuses below 400', async () => {
    const cases: ['failed' | 'succeeded', number | undefined, boolean][] = [
      ['failed', 200, false],
      ['failed', 399, false],
      ['failed', 400, true],
      ['failed', 503, true],
      ['failed', undefined, true],
      ['succeeded', 200, true],
      ['succeeded', 399, true],
      ['succeeded', 400, false],
      ['succeeded', undefined, false],
    ];
    for (const [countOnly, status, counts] of cases) {
      const limits = limiterOf('api', 3);
      const guard = createGuard<object>({ limits, key: () => 'k', countOnly });
      const outcome = await guard.check({}, facts);
      assert.equal(outcome.receipts.length, 1);
      guard.finish(outcome, status);
      assert.equal((await limits.peek('k')).remaining, counts ? 2 : 3, `${countOnly} ${status}`);
    }
  });

  it('without countOnly no receipt is issued and finishing does nothing', async () => {
    const limits = limiterOf('api', 3);
    const guard = createGuard<object>({ limits, key: () => 'k' });
    const outcome = await guard.check({}, facts);
    assert.deepEqual(outcome.receipts, []);
    guard.finish(outcome, 200);
    assert.equal((await limits.peek('k')).remaining, 2);
  });

  it('a refused request carries no receipt: the limits before the refusing one keep their charge', async () => {
    const wide = limiterOf('wide', 5);
    const narrow = limiterOf('narrow', 1);
    const guard = createGuard<object>({ limits: [wide, narrow], key: () => 'k', countOnly: 'failed' });
    guard.finish(await guard.check({}, facts), 401);
    const refused = await guard.check({}, facts);
    assert.equal(refused.action, 'respond');
    assert.deepEqual(refused.receipts, []);
    guard.finish(refused, 429);
    assert.equal((await wide.peek('k')).remaining, 3, 'the refused request charged the wide limit too');
    assert.equal((await narrow.peek('k')).remaining, 0);
  });

  it('a request that passes the same limit twice holds one receipt: the second pass charged nothing', async () => {
    const limits = limiterOf('api', 5);
    const first = createGuard<object>({ limits, key: () => 'k', countOnly: 'failed' });
    const second = createGuard<object>({ limits, key: () => 'k', countOnly: 'failed' });
    const request = {};
    const outcomes = [await first.check(request, facts), await second.check(request, facts)];
    assert.deepEqual(
      outcomes.map((o) => o.receipts.length),
      [1, 0],
    );
    assert.equal((await limits.peek('k')).remaining, 4);
  });

  it('a receipt the application settled itself is left alone, and reported as nothing', async () => {
    const reports: unknown[] = [];
    const limits = limiterOf('api', 5);
    const guard = createGuard<object>({
      limits,
      key: () => 'k',
      countOnly: 'failed',
      onError: (error) => void reports.push(error),
    });
    const outcome = await guard.check({}, facts);
    await limits.settle(outcome.receipts[0]!, 3);
    guard.finish(outcome, 200);
    await drained();
    assert.deepEqual(reports, []);
    assert.equal((await limits.peek('k')).remaining, 2, 'the application settled at 3');
  });

  it('a refund the store fails is reported through onError at most once a minute, and never throws', async () => {
    const store = new FailingStore();
    const limits = limiterOf('api', 5, store);
    const reports: [unknown, unknown][] = [];
    const guard = createGuard<object>({
      limits,
      key: () => 'k',
      countOnly: 'failed',
      onError: (error, details) => void reports.push([error, details]),
    });
    const outcomes: GuardOutcome[] = [];
    for (let i = 0; i < 3; i++) outcomes.push(await guard.check({}, facts));
    store.mode = 'reject';
    for (const outcome of outcomes.slice(0, 2)) assert.doesNotThrow(() => guard.finish(outcome, 200));
    await drained();
    assert.equal(reports.length, 1, 'two failed refunds, one report');
    assert.deepEqual(reports[0]![1], { failures: 1 });
    assert.ok(isSluiceError(reports[0]![0], 'SLUICE_STORE_UNAVAILABLE'));
    assert.doesNotMatch(String((reports[0]![0] as Error).message), /"k"|\bk\b/, 'no key in the report');
    clock.advance(60_000);
    guard.finish(outcomes[2]!, 200);
    await drained();
    assert.equal(reports.length, 2);
    assert.deepEqual(reports[1]![1], { failures: 2 });
    store.mode = 'ok';
    assert.equal((await limits.peek('k')).remaining, 2, 'nothing was refunded');
  });

  it('the deprecated settle and needsSettling are finish and needsFinishing under their old names', async () => {
    const limits = limiterOf('api', 3);
    const guard = createGuard<object>({ limits, key: () => 'k', countOnly: 'failed' });
    assert.equal(guard.settle, guard.finish);
    assert.equal(needsSettling, needsFinishing);
    const outcome = await guard.check({}, facts);
    assert.equal(needsSettling(outcome), true);
    guard.settle(outcome, 500);
    assert.equal((await limits.peek('k')).remaining, 2, 'the failed response kept its charge');
  });
});
