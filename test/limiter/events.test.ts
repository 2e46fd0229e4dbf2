import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  DecisionEvents,
  MemoryStore,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type DecisionEvent,
} from '../../src/index.js';
import { FailingStore } from '../../src/testing/index.js';

/** A channel and the events it delivered. */
function recorder(options?: ConstructorParameters<typeof DecisionEvents>[0]) {
  const events = new DecisionEvents(options);
  const seen: DecisionEvent[] = [];
  events.subscribe((event) => seen.push(event));
  return { events, seen };
}

describe('decision events', () => {
  it('report every take of a limiter: rule, outcome, store, cost, remaining, retry; no key unless asked', () => {
    const { events, seen } = recorder();
    const limiter = createLimiter({
      name: 'login',
      rule: tokenBucket({ limit: 2, period: '1m' }),
      store: new MemoryStore(),
      clock: manualClock(0),
      events,
    });
    limiter.takeSync('203.0.113.7');
    limiter.takeSync('203.0.113.7', { cost: 1 });
    limiter.takeSync('203.0.113.7');
    limiter.peekSync('203.0.113.7'); // peeks are not decisions on a request
    assert.deepEqual(
      seen.map((e) => [e.rule, e.outcome, e.store, e.cost, e.remaining, e.retryAfterMs, e.keyHash]),
      [
        ['login', 'admitted', 'memory', 1, 1, 0, undefined],
        ['login', 'admitted', 'memory', 1, 0, 0, undefined],
        ['login', 'refused', 'memory', 1, 0, 30_000, undefined],
      ],
    );
    for (const e of seen) assert.ok(e.storeLatencyMs >= 0 && Number.isFinite(e.storeLatencyMs));
    assert.ok(!JSON.stringify(seen).includes('203.0.113.7'));
  });

  it('carry a pseudonym of the key only when the channel has a keyHash, and never the key itself', async () => {
    const hashed = recorder({ keyHash: (key) => `h:${key.length}` });
    const echo = recorder({ keyHash: (key) => key });
    for (const { events } of [hashed, echo]) {
      const limiter = createLimiter({
        name: 'l',
        rule: tokenBucket({ limit: 5, period: '1m' }),
        store: new MemoryStore(),
        events,
      });
      await limiter.take('ann@example.com');
    }
    assert.equal(hashed.seen[0]!.keyHash, 'h:15');
    assert.equal(echo.seen[0]!.keyHash, undefined);
  });

  it('hash the key only for the outcomes named in keyHashOutcomes', () => {
    let hashed = 0;
    const { events, seen } = recorder({
      keyHash: (key) => `h${++hashed}:${key.length}`,
      keyHashOutcomes: ['refused'],
    });
    const limiter = createLimiter({
      name: 'l',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store: new MemoryStore(),
      clock: manualClock(0),
      events,
    });
    limiter.takeSync('abc');
    limiter.takeSync('abc');
    assert.deepEqual(
      seen.map((e) => [e.outcome, e.keyHash]),
      [
        ['admitted', undefined],
        ['refused', 'h1:3'],
      ],
    );
    assert.equal(hashed, 1);
    for (const bad of ['refused', ['nope'], {}])
      assert.throws(
        () => new DecisionEvents({ keyHashOutcomes: bad as never }),
        (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /keyHashOutcomes/.test((e as Error).message),
      );
  });

  it('build nothing while no one listens, and stop when unsubscribed', () => {
    let hashed = 0;
    const events = new DecisionEvents({ keyHash: () => `h${++hashed}` });
    const limiter = createLimiter({
      name: 'l',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store: new MemoryStore(),
      events,
    });
    limiter.takeSync('k');
    assert.equal(hashed, 0);
    const seen: DecisionEvent[] = [];
    const off = events.subscribe((e) => seen.push(e));
    limiter.takeSync('k');
    off();
    limiter.takeSync('k');
    assert.equal(seen.length, 1);
    assert.equal(hashed, 1);
  });

  it('report a cost the rule can never admit as refused, with no store asked', async () => {
    const { events, seen } = recorder();
    const store = new FailingStore();
    const limiter = createLimiter({
      name: 'big',
      rule: tokenBucket({ limit: 2, period: '1m' }),
      store,
      events,
      timeout: '1s',
    });
    const decision = await limiter.take('k', { cost: 3 });
    assert.equal(decision.allowed, false);
    assert.deepEqual(
      seen.map((e) => [e.outcome, e.cost, e.retryAfterMs, e.storeLatencyMs]),
      [['refused', 3, Infinity, 0]],
    );
  });

  it('report store failures by the policy that decided: failed-open, insurance, failed-closed', async () => {
    const { events, seen } = recorder();
    const outcomes: string[] = [];
    for (const failure of ['open', 'insurance', 'closed'] as const) {
      const store = new FailingStore();
      store.mode = 'reject';
      const limiter = createLimiter({
        name: `f-${failure}`,
        rule: tokenBucket({ limit: 2, period: '1m' }),
        store,
        failure,
        events,
        timeout: '1s',
        logger: { warn() {} },
      });
      if (failure === 'closed') {
        await assert.rejects(limiter.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE'));
      } else {
        assert.equal((await limiter.take('k')).allowed, true);
      }
      outcomes.push(...seen.splice(0).map((e) => `${e.rule}:${e.outcome}`));
    }
    assert.deepEqual(outcomes, ['f-open:failed-open', 'f-insurance:insurance', 'f-closed:failed-closed']);
  });

  it('report nothing for the caller`s own errors (a missing key is not a decision)', async () => {
    const { events, seen } = recorder();
    const limiter = createLimiter({
      name: 'l',
      rule: tokenBucket({ limit: 2, period: '1m' }),
      store: new FailingStore(),
      events,
      timeout: '1s',
    });
    await assert.rejects(limiter.take('' as string));
    assert.equal(seen.length, 0);
  });

  it('report each limit of a cascade: all-or-nothing (sync and async) and first-refusal', async () => {
    for (const sync of [true, false]) {
      const { events, seen } = recorder();
      const memory = new MemoryStore();
      const store = sync ? memory : new FailingStore();
      const wide = createLimiter({
        name: 'wide',
        rule: tokenBucket({ limit: 5, period: '1m' }),
        store,
        events,
        timeout: '1s',
      });
      const narrow = createLimiter({
        name: 'narrow',
        rule: tokenBucket({ limit: 1, period: '1m' }),
        store,
        events,
        timeout: '1s',
      });
      const atomic = createCascade([wide, narrow], { mode: 'all-or-nothing' });
      await atomic.take('k');
      await atomic.take('k');
      assert.deepEqual(
        seen.splice(0).map((e) => `${e.rule}:${e.outcome}`),
        // The second take is refused by the narrow limit and charges nothing: the wide limit did
        // not admit it, so only the refusal is reported.
        ['wide:admitted', 'narrow:admitted', 'narrow:refused'],
        sync ? 'sync' : 'async',
      );
      const first = createCascade([narrow, wide]);
      await first.take('j');
      await first.take('j');
      // The second take stops at the narrow limit: the wide one is neither charged nor reported.
      assert.deepEqual(
        seen.map((e) => `${e.rule}:${e.outcome}`),
        ['narrow:admitted', 'wide:admitted', 'narrow:refused'],
      );
    }
  });

  it('keep a decision whole when a listener throws: other listeners still hear it, the error is reported once a minute', () => {
    const reported: unknown[] = [];
    const events = new DecisionEvents({ onListenerError: (e) => reported.push(e) });
    const seen: DecisionEvent[] = [];
    events.subscribe(() => {
      throw new Error('listener bug quoting 203.0.113.7');
    });
    events.subscribe((e) => seen.push(e));
    const limiter = createLimiter({
      name: 'l',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store: new MemoryStore(),
      events,
    });
    assert.equal(limiter.takeSync('k').allowed, true);
    assert.equal(limiter.takeSync('k').allowed, true);
    assert.equal(seen.length, 2);
    assert.equal(reported.length, 1);
  });

  it('refuse bad options with coded errors that never quote a value', () => {
    for (const bad of [{ keyHash: 'secret-value' }, { onListenerError: 42 }, null]) {
      assert.throws(
        () => new DecisionEvents(bad as never),
        (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && !(e as Error).message.includes('secret-value'),
      );
    }
    assert.throws(
      () => new DecisionEvents().subscribe('x' as never),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'),
    );
    assert.throws(
      () =>
        createLimiter({
          name: 'l',
          rule: tokenBucket({ limit: 1, period: '1s' }),
          store: new MemoryStore(),
          events: {} as never,
        }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'),
    );
  });
});
