/**
 * The store breaker: a timeout while the store keeps answering is load (never admitted by
 * `failure: 'open'`); the failure policy stands in only once the breaker says the store is
 * failing. The breaker's state machine is driven by a manual clock and asserted exactly. The
 * store is a deliberate test double that fails on command (stores are tested against real
 * servers elsewhere): the subject is the limiter's breaker.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { recordingLogger } from './assertions.js';
import { FailingStore } from '../../src/testing/failing-store.js';
import { Breaker, readBreakerOptions } from '../../src/limiter/breaker.js';
import { createGuard } from '../../src/http/guard.js';
import {
  DecisionEvents,
  SluiceError,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type StoreHealthEvent,
} from '../../src/index.js';

const rule = () => tokenBucket({ limit: 2, period: '1m' });
const timeout = () =>
  new SluiceError('SLUICE_STORE_TIMEOUT', 'Redis (RedisStore timeout) did not answer within 100 ms');

describe('the breaker state machine', () => {
  const settings = readBreakerOptions('test', { failures: 3, window: '1s', probeInterval: '200ms' });

  it('opens at the failure that makes the streak long enough once it spans the window, not before', () => {
    const clock = manualClock(1_000);
    const changes: [string, number][] = [];
    const breaker = new Breaker(settings, clock, (state, at) => changes.push([state, at]));
    assert.equal(breaker.failed(), false);
    clock.advance(400);
    assert.equal(breaker.failed(), false);
    clock.advance(599);
    // Three failures, but 999 ms since the first: no open yet.
    assert.equal(breaker.failed(), false);
    clock.advance(1);
    assert.equal(breaker.failed(), true);
    assert.deepEqual(changes, [['open', 2_000]]);
    assert.deepEqual(breaker.health(), {
      breaker: 'open',
      since: 2_000,
      consecutiveFailures: 4,
      openings: 1,
    });
  });

  it('a call made before it opened is not one the policy may answer: only calls made while open are', () => {
    const clock = manualClock(1_000);
    const breaker = new Breaker(settings, clock);
    breaker.failed(1_000);
    clock.advance(500);
    breaker.failed(1_500);
    clock.advance(500);
    assert.equal(breaker.failed(2_000), true);
    // Calls of the burst or stall that opened it, made before, time out later: load.
    assert.equal(breaker.madeWhileOpen(1_999), false);
    assert.equal(breaker.madeWhileOpen(2_000), true);
    breaker.succeeded();
    assert.equal(breaker.madeWhileOpen(2_500), false, 'closed: no call is answered by the policy');
  });

  it('many failures within the window never open it, and a success clears the streak', () => {
    const clock = manualClock(0);
    const breaker = new Breaker(settings, clock);
    for (let i = 0; i < 10_000; i++) assert.equal(breaker.failed(), false);
    clock.advance(999);
    assert.equal(breaker.failed(), false);
    breaker.succeeded();
    assert.equal(breaker.health().consecutiveFailures, 0);
    // The streak starts again at the next failure: the window counts from there.
    clock.advance(5_000);
    assert.equal(breaker.failed(), false);
    assert.equal(breaker.failed(), false);
    clock.advance(999);
    assert.equal(breaker.failed(), false);
    clock.advance(1);
    assert.equal(breaker.failed(), true);
  });

  it('a burst made at one instant never opens it, however long its failures take to handle', () => {
    const clock = manualClock(0);
    const breaker = new Breaker(settings, clock);
    // 50,000 calls made at 0, their timeouts handled while the clock runs on for ten seconds.
    for (let i = 0; i < 50_000; i++) {
      if (i % 5_000 === 0) clock.advance('1s');
      assert.equal(breaker.failed(0), false);
    }
    // A call made a window later that fails too: the streak now spans the window.
    assert.equal(breaker.failed(1_000), true);
  });

  it('a store that keeps replying, however late, restarts the streak: it is busy, not failing', () => {
    const clock = manualClock(0);
    let replies = 0;
    const breaker = new Breaker(settings, clock, undefined, () => replies);
    for (let i = 0; i < 10; i++) {
      assert.equal(breaker.failed(), false);
      clock.advance('1s');
      // A reply read since (to a call already answered with its timeout).
      replies++;
    }
    // No reply any more: three failures over a second open it.
    assert.equal(breaker.failed(), false);
    clock.advance('1s');
    assert.equal(breaker.failed(), false);
    assert.equal(breaker.failed(), true);
  });

  it('while open, lets one probe through per interval, and closes on a success', () => {
    const clock = manualClock(0);
    const changes: [string, number][] = [];
    const breaker = new Breaker(settings, clock, (state, at) => changes.push([state, at]));
    breaker.failed();
    clock.advance(1_000);
    breaker.failed();
    assert.equal(breaker.failed(), true);
    assert.equal(breaker.probe(), false, 'no probe before the interval');
    clock.advance(199);
    assert.equal(breaker.probe(), false);
    clock.advance(1);
    assert.equal(breaker.probe(), true, 'the probe of this interval');
    assert.equal(breaker.probe(), false, 'one per interval');
    assert.equal(breaker.failed(), true, 'a failed probe keeps it open');
    clock.advance(200);
    assert.equal(breaker.probe(), true);
    breaker.succeeded();
    assert.equal(breaker.isOpen, false);
    assert.deepEqual(changes, [
      ['open', 1_000],
      ['closed', 1_400],
    ]);
    assert.deepEqual(breaker.health(), {
      breaker: 'closed',
      since: 1_400,
      consecutiveFailures: 0,
      openings: 1,
    });
  });

  it('options: defaults in one object; a wrong type or unknown key is SLUICE_CONFIG naming the option', () => {
    assert.deepEqual(readBreakerOptions('limiter "a"', undefined), {
      failures: 5,
      windowMs: 5_000,
      probeIntervalMs: 200,
    });
    for (const failures of [0, 1.5, '5', -1, Number.NaN]) {
      assert.throws(
        () => readBreakerOptions('limiter "a"', { failures }),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') &&
          e.message.includes('breaker.failures') &&
          e.message.includes('a whole number from 1'),
      );
    }
    assert.throws(
      () => readBreakerOptions('limiter "a"', { window: 'soon' }),
      (e: unknown) => isSluiceError(e, 'SLUICE_DURATION') && e.message.includes('breaker.window'),
    );
    assert.throws(
      () => readBreakerOptions('limiter "a"', { probeInterval: 10 }),
      (e: unknown) => isSluiceError(e, 'SLUICE_DURATION') && e.message.includes('breaker.probeInterval'),
    );
    assert.throws(
      () => readBreakerOptions('limiter "a"', { failure: 3 }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && e.message.includes('"failure"'),
    );
    assert.throws(
      () =>
        createLimiter({
          name: 'a',
          rule: rule(),
          store: new FailingStore(),
          breaker: { failures: 'x' as never },
        }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && e.message.includes('limiter "a" breaker.failures'),
    );
  });
});

describe('overload versus failure in a limiter', () => {
  const open = (store: FailingStore, clock = manualClock(0), events?: DecisionEvents) =>
    createLimiter({
      name: 'comfort',
      rule: rule(),
      store,
      clock,
      failure: 'open',
      logger: recordingLogger(),
      breaker: { failures: 3, window: '1s', probeInterval: '200ms' },
      ...(events === undefined ? {} : { events }),
    });

  it('open: a timeout while the breaker is closed is never admitted (SLUICE_STORE_OVERLOADED, 503)', async () => {
    const store = new FailingStore();
    const limiter = open(store);
    store.mode = 'error';
    store.error = timeout();
    for (let i = 0; i < 50; i++) {
      await assert.rejects(
        limiter.take('k'),
        (e: unknown) => isSluiceError(e, 'SLUICE_STORE_OVERLOADED') && e.status === 503,
      );
    }
    const stats = limiter.stats();
    assert.equal(stats.failOpenAdmits, 0);
    assert.equal(stats.overloadTimeouts, 50);
    assert.equal(stats.timeouts, 50);
    assert.equal(stats.breaker, 'closed');
  });

  it('open: a connection error is a failure at once, admitted as before', async () => {
    const store = new FailingStore();
    const limiter = open(store);
    store.mode = 'reject';
    const decision = await limiter.take('k');
    assert.deepEqual([decision.allowed, decision.source], [true, 'fail-open']);
    assert.equal(limiter.storeHealth().consecutiveFailures, 1);
  });

  it('open: once timeouts span the window with no reply the breaker opens, the policy admits, probes ask the store, a success closes it', async () => {
    const store = new FailingStore();
    const clock = manualClock(0);
    const events = new DecisionEvents();
    const changes: StoreHealthEvent[] = [];
    events.subscribeHealth((event) => changes.push(event));
    const limiter = open(store, clock, events);
    store.mode = 'error';
    store.error = timeout();
    await assert.rejects(limiter.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_OVERLOADED'));
    await assert.rejects(limiter.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_OVERLOADED'));
    clock.advance('1s');
    // The third timeout in a row, a second after the first, with no reply between: failing.
    const opened = await limiter.take('k');
    assert.deepEqual([opened.allowed, opened.source], [true, 'fail-open']);
    assert.deepEqual(changes, [{ rule: 'comfort', store: 'flaky', breaker: 'open', at: 1_000 }]);
    // While open the store is not asked: the policy answers.
    const calls = store.calls;
    for (let i = 0; i < 10; i++) assert.equal((await limiter.take('k')).source, 'fail-open');
    assert.equal(store.calls, calls);
    assert.equal(limiter.stats().shortCircuited, 10);
    // The probe goes to the store; it still times out: still open, admitted by the policy.
    clock.advance('200ms');
    assert.equal((await limiter.take('k')).source, 'fail-open');
    assert.equal(store.calls, calls + 1);
    // The store recovers: the next probe's reply closes the breaker.
    store.mode = 'ok';
    assert.equal((await limiter.take('k')).source, 'fail-open', 'not the probe of this interval');
    clock.advance('200ms');
    const probe = await limiter.take('k');
    assert.deepEqual([probe.allowed, probe.source], [true, 'store']);
    assert.equal((await limiter.take('k')).source, 'store');
    assert.deepEqual(
      changes.map((c) => [c.breaker, c.at]),
      [
        ['open', 1_000],
        ['closed', 1_400],
      ],
    );
    const stats = limiter.stats();
    assert.equal(stats.breaker, 'closed');
    assert.equal(stats.breakerOpenings, 1);
    assert.equal(stats.failOpenAdmits, 13);
    assert.equal(stats.overloadTimeouts, 2);
  });

  it('a reply between timeouts keeps the breaker closed however long they go on', async () => {
    const store = new FailingStore();
    const clock = manualClock(0);
    const limiter = open(store, clock);
    for (let round = 0; round < 5; round++) {
      store.mode = 'error';
      store.error = timeout();
      // Two timeouts 600 ms apart, then a reply: ten timeouts over six seconds, never three in a row.
      for (let i = 0; i < 2; i++) {
        await assert.rejects(limiter.take(`k${i}`), (e: unknown) =>
          isSluiceError(e, 'SLUICE_STORE_OVERLOADED'),
        );
        clock.advance('600ms');
      }
      store.mode = 'ok';
      assert.equal((await limiter.take('ok')).source, 'store');
    }
    assert.equal(limiter.stats().breakerOpenings, 0);
    assert.equal(limiter.stats().failOpenAdmits, 0);
  });

  it('insurance answers an overload timeout; closed throws the timeout as before', async () => {
    const store = new FailingStore();
    const insured = createLimiter({
      name: 'ins',
      rule: rule(),
      store,
      clock: manualClock(0),
      failure: 'insurance',
      logger: recordingLogger(),
    });
    const closed = createLimiter({ name: 'closed', rule: rule(), store, logger: recordingLogger() });
    store.mode = 'error';
    store.error = timeout();
    const decisions = [await insured.take('k'), await insured.take('k'), await insured.take('k')];
    assert.deepEqual(
      decisions.map((d) => [d.allowed, d.source]),
      [
        [true, 'insurance'],
        [true, 'insurance'],
        [false, 'insurance'],
      ],
    );
    await assert.rejects(
      closed.take('k'),
      (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT') && e.status === 503,
    );
  });

  it('a limit in shadow mode still never refuses: an overload timeout or a store overload is admitted', async () => {
    const store = new FailingStore();
    const shadow = createLimiter({
      name: 's',
      rule: rule(),
      store,
      mode: 'shadow',
      logger: recordingLogger(),
    });
    store.mode = 'error';
    store.error = timeout();
    const decision = await shadow.take('k');
    assert.deepEqual([decision.allowed, decision.source], [true, 'fail-open']);
    // Nor does a store's own overload (a full queue, a call that waited out its time in it).
    store.error = new SluiceError('SLUICE_STORE_OVERLOADED', 'the redis store has 10000 decisions waiting');
    const loaded = await shadow.take('k');
    assert.deepEqual([loaded.allowed, loaded.source], [true, 'fail-open']);
    assert.equal(shadow.stats().overloads, 1);
  });

  it('an all-or-nothing cascade classifies as its limits do, and its replies close their breakers', async () => {
    const store = new FailingStore();
    const clock = manualClock(0);
    const limiter = open(store, clock);
    const cascade = createCascade([limiter], { mode: 'all-or-nothing' });
    store.mode = 'error';
    store.error = timeout();
    await assert.rejects(cascade.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_OVERLOADED'));
    assert.equal(limiter.storeHealth().consecutiveFailures, 1);
    store.mode = 'ok';
    await cascade.take('k');
    assert.equal(limiter.storeHealth().consecutiveFailures, 0);
  });

  it('through a guard, an overload timeout under open is a 503 with Retry-After: 1, not a pass', async () => {
    const store = new FailingStore();
    const guard = createGuard<unknown>({ limits: open(store), key: () => 'k', onError: () => {} });
    store.mode = 'error';
    store.error = timeout();
    const outcome = await guard.check({}, { method: 'POST', path: '/api/x' });
    assert.equal(outcome.action, 'respond');
    if (outcome.action === 'respond') {
      assert.equal(outcome.response.status, 503);
      assert.equal(outcome.response.headers['Retry-After'], '1');
    }
  });
});
