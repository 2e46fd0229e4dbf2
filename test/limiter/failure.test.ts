/**
 * Failure policies: what a limit does when its store fails or times out. The store here is a deliberate test double that fails on command: the
 * subject under test is the limiter's policy, not a store (stores are tested against real servers).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { recordingLogger } from './assertions.js';
import { FailingStore } from '../../src/testing/failing-store.js';
import { createCascade, createLimiter, isSluiceError, manualClock, tokenBucket } from '../../src/index.js';

const rule = () => tokenBucket({ limit: 2, period: '1m' });

describe('failure policies', () => {
  it('closed (default): a failing store is a 503 error, never a 429 and never an admission', async () => {
    const store = new FailingStore();
    const logger = recordingLogger();
    const limiter = createLimiter({ name: 'closed', rule: rule(), store, logger });
    store.mode = 'reject';
    await assert.rejects(
      limiter.take('k'),
      (e: unknown) => isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE') && e.status === 503,
    );
    store.mode = 'throw';
    await assert.rejects(limiter.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE'));
    assert.equal(limiter.stats().storeFailures, 2);
    const five = createLimiter({ name: 'closed500', rule: rule(), store, closedStatus: 500, logger });
    await assert.rejects(
      five.take('k'),
      (e: unknown) => isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE') && e.status === 500,
    );
  });

  it('a hung store times out after the rule timeout with SLUICE_STORE_TIMEOUT', async () => {
    const store = new FailingStore();
    const limiter = createLimiter({
      name: 'hung',
      rule: rule(),
      store,
      timeout: '20ms',
      logger: recordingLogger(),
    });
    store.mode = 'hang';
    await assert.rejects(
      limiter.take('k'),
      (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT') && e.status === 503,
    );
    await assert.rejects(limiter.reset('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT'));
    // A reset is a store call too: its timeout is counted like a take's.
    assert.equal(limiter.stats().timeouts, 2);
  });

  it('open: admits on failure, counts it, and logs at most once a minute without the key', async () => {
    const store = new FailingStore();
    const clock = manualClock(0);
    const logger = recordingLogger();
    const limiter = createLimiter({ name: 'comfort', rule: rule(), store, clock, failure: 'open', logger });
    store.mode = 'reject';
    const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.take('203.0.113.9|alice')));
    assert.ok(decisions.every((d) => d.allowed && d.source === 'fail-open'));
    assert.equal(limiter.stats().failOpenAdmits, 10);
    assert.equal(logger.lines.length, 1);
    clock.advance('59s');
    await limiter.take('203.0.113.9|alice');
    assert.equal(logger.lines.length, 1);
    clock.advance('1s');
    await limiter.take('203.0.113.9|alice');
    assert.equal(logger.lines.length, 2);
    assert.equal(logger.lines[1]!.details.failures, 11, 'every failure since the last line is counted');
    for (const line of logger.lines) assert.doesNotMatch(JSON.stringify(line), /alice|203\.0\.113/);
    store.mode = 'ok';
    // Twelve failures over a minute opened the breaker: the store is asked again at its next probe.
    assert.equal(limiter.storeHealth().breaker, 'open');
    clock.advance('200ms');
    assert.equal((await limiter.take('k')).source, 'store');
    assert.equal(limiter.storeHealth().breaker, 'closed');
  });

  it('insurance: a memory limiter with the same rule decides while the store fails; the store takes over again', async () => {
    const store = new FailingStore();
    const clock = manualClock(0);
    const limiter = createLimiter({
      name: 'ins',
      rule: rule(),
      store,
      clock,
      failure: 'insurance',
      logger: recordingLogger(),
    });
    store.mode = 'driver-error';
    const during = [await limiter.take('k'), await limiter.take('k'), await limiter.take('k')];
    assert.deepEqual(
      during.map((d) => [d.allowed, d.source]),
      [
        [true, 'insurance'],
        [true, 'insurance'],
        [false, 'insurance'],
      ],
    );
    assert.equal(during[2]!.retryAfterMs, 30_000);
    assert.equal(limiter.stats().insuranceDecisions, 3);
    store.mode = 'ok';
    const after = await limiter.take('k');
    assert.equal(after.source, 'store');
    assert.equal(after.remaining, 1);
  });

  it("the caller's own errors are never masked by a failure policy", async () => {
    const store = new FailingStore();
    const limiter = createLimiter({
      name: 'own',
      rule: rule(),
      store,
      failure: 'open',
      logger: recordingLogger(),
    });
    store.mode = 'reject';
    await assert.rejects(limiter.take(''), (e: unknown) => isSluiceError(e, 'SLUICE_KEY_MISSING'));
    await assert.rejects(limiter.take('k', { cost: -1 }), (e: unknown) =>
      isSluiceError(e, 'SLUICE_ARGUMENT'),
    );
    assert.equal(store.calls, 0);
  });

  it("all-or-nothing cascades apply each limit's policy when the store fails", async () => {
    const store = new FailingStore();
    const logger = recordingLogger();
    const open = createLimiter({ name: 'a', rule: rule(), store, failure: 'open', logger });
    const insured = createLimiter({
      name: 'b',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      failure: 'insurance',
      logger,
    });
    const closed = createLimiter({ name: 'c', rule: rule(), store, logger });
    const lenient = createCascade([open, insured], { mode: 'all-or-nothing' });
    const strict = createCascade([open, closed], { mode: 'all-or-nothing' });
    assert.equal((await lenient.take('k')).allowed, true);
    store.mode = 'reject';
    const first = await lenient.take('k');
    assert.equal(first.allowed, true);
    assert.deepEqual(
      first.decisions.map((d) => d.source),
      ['fail-open', 'insurance'],
    );
    const second = await lenient.take('k');
    assert.equal(second.allowed, false);
    assert.deepEqual(second.refusedBy, ['b']);
    await assert.rejects(strict.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE'));
  });

  it('rejects unknown policies, statuses, timeouts and loggers', () => {
    const store = new FailingStore();
    const bad: Record<string, unknown>[] = [
      { failure: 'pass' },
      { closedStatus: 429 },
      { timeout: '0ms' },
      { timeout: 'soon' },
      { logger: {} },
    ];
    bad.forEach((extra, i) => {
      assert.throws(
        () => createLimiter({ name: `bad${i}`, rule: rule(), store, ...extra }),
        (e: unknown) => isSluiceError(e) && (e.code === 'SLUICE_CONFIG' || e.code === 'SLUICE_DURATION'),
      );
    });
  });
});
