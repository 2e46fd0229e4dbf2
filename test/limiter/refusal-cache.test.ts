/**
 * The local cache of refusals: a refused key is answered without a round trip until the store's
 * retry instant, for takes the store would certainly refuse, and only for those. The store is a
 * real MemoryStore behind a wrapper that counts the takes reaching it (see counting-store.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  DecisionEvents,
  MemoryStore,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  slidingWindow,
  tokenBucket,
  type DecisionEvent,
  type LimiterOptions,
  type Rule,
} from '../../src/index.js';
import { FailingStore } from '../../src/testing/index.js';
import { RefusalCache } from '../../src/limiter/refusal-cache.js';
import { CountingStore } from './counting-store.js';

const HOUR = 3_600_000;

function cached(options: Omit<LimiterOptions, 'name' | 'store'> & { name?: string }) {
  const store = new CountingStore(new MemoryStore());
  const clock = manualClock(0);
  const limiter = createLimiter({
    name: 'api',
    clock,
    refusalCache: true,
    ...options,
    store,
  });
  return { store, clock, limiter };
}

describe('refusal cache', () => {
  it('a flood on a refused key makes one store call until the retry instant; takes after it ask again', async () => {
    const { store, clock, limiter } = cached({ rule: tokenBucket({ limit: 1, period: '1h' }) });
    assert.equal((await limiter.take('k')).allowed, true);
    const first = await limiter.take('k');
    assert.equal(first.allowed, false);
    assert.equal(first.retryAfterMs, HOUR);
    assert.equal(store.takes, 2);
    for (let i = 0; i < 1000; i++) assert.equal((await limiter.take('k')).allowed, false);
    const together = await Promise.all(Array.from({ length: 256 }, () => limiter.take('k')));
    assert.ok(together.every((d) => !d.allowed));
    assert.equal(store.takes, 2, 'every refusal after the first was answered locally');

    clock.advance(HOUR - 2); // the last ms the cache answers (it stops 1 ms early)
    assert.equal((await limiter.take('k')).retryAfterMs, 2);
    assert.equal(store.takes, 2);
    clock.advance(1);
    const asked = await limiter.take('k');
    assert.equal(store.takes, 3, 'the store is asked again from 1 ms before its instant');
    assert.equal(asked.allowed, false);
    clock.advance(1);
    assert.equal((await limiter.take('k')).allowed, true, 'at the instant the store admits');
    assert.equal(store.takes, 4);
  });

  it('admissions always ask the store, and other keys are untouched', async () => {
    const { store, limiter } = cached({ rule: tokenBucket({ limit: 3, period: '1h' }) });
    for (let i = 0; i < 3; i++) assert.equal((await limiter.take('a')).allowed, true);
    assert.equal((await limiter.take('a')).allowed, false);
    assert.equal((await limiter.take('b')).allowed, true);
    assert.equal(store.takes, 5);
  });

  it('a smaller cost is not answered locally; an equal or larger one is, up to the capacity', async () => {
    const { store, limiter } = cached({ rule: tokenBucket({ limit: 5, period: '1h' }) });
    await limiter.take('k', { cost: 4 });
    const refused = await limiter.take('k', { cost: 3 });
    assert.equal(refused.allowed, false);
    assert.equal(store.takes, 2);
    for (const cost of [3, 4, 5]) {
      const d = await limiter.take('k', { cost });
      assert.equal(d.allowed, false);
      assert.equal(d.cost, cost);
    }
    assert.equal(store.takes, 2, 'costs of 3 to 5 are refused locally');
    assert.equal((await limiter.take('k', { cost: 6 })).retryAfterMs, Infinity, 'beyond the burst: for good');
    assert.equal(store.takes, 2);
    assert.equal((await limiter.take('k', { cost: 1 })).allowed, true, 'one token is left: the store admits');
    assert.equal(store.takes, 3);
  });

  it('a different per-call limit asks the store', async () => {
    const { store, limiter } = cached({ rule: fixedWindow({ limit: 10, window: '1h' }) });
    await limiter.take('k', { limit: 2 });
    await limiter.take('k', { limit: 2 });
    assert.equal((await limiter.take('k', { limit: 2 })).allowed, false);
    assert.equal(store.takes, 3);
    assert.equal((await limiter.take('k', { limit: 2 })).allowed, false);
    assert.equal(store.takes, 3, 'the same limit: answered locally');
    assert.equal((await limiter.take('k', { limit: 5 })).allowed, true);
    assert.equal((await limiter.take('k')).allowed, true, "the rule's own limit");
    assert.equal(store.takes, 5);
    assert.equal((await limiter.take('k', { limit: 2 })).allowed, false);
    assert.equal(store.takes, 5, 'admissions under other limits left the refusal in place');
  });

  it('a local refusal is a full decision: remaining 0, retry counted down, the reset of the refusal', async () => {
    const { clock, limiter } = cached({ rule: fixedWindow({ limit: 2, window: '1h' }) });
    clock.set(10 * HOUR + 600_000);
    await limiter.take('k', { cost: 2 });
    const fromStore = await limiter.take('k');
    clock.advance(1000);
    const local = await limiter.take('k');
    assert.deepEqual(local, {
      ...fromStore,
      remaining: 0,
      retryAfterMs: fromStore.retryAfterMs - 1000,
      retryAfterSeconds: Math.ceil((fromStore.retryAfterMs - 1000) / 1000),
      resetMs: fromStore.resetMs - 1000,
    });
    assert.equal(local.source, 'store');
    assert.equal(local.name, 'api');
  });

  it("a sliding window's local refusal past its window's end reports the next window's end", async () => {
    const { store, clock, limiter } = cached({ rule: slidingWindow({ limit: 2, window: '1m' }) });
    clock.set(60_000);
    await limiter.take('k', { cost: 2 });
    // Two counted now weigh 1 halfway through the next window: a take of 1 fits from then.
    const refused = await limiter.take('k');
    assert.equal(refused.allowed, false);
    assert.equal(refused.resetMs, 60_000);
    assert.equal(refused.retryAfterMs, 90_000, 'the retry lies in the next window');
    clock.set(60_000 + refused.resetMs + 5);
    const local = await limiter.take('k');
    assert.equal(store.takes, 2);
    assert.equal(local.resetMs, 60_000 - 5);
    assert.equal(local.retryAfterMs, refused.retryAfterMs - refused.resetMs - 5);
  });

  it('reset drops the key from the cache', async () => {
    const { store, limiter } = cached({ rule: tokenBucket({ limit: 1, period: '1h' }) });
    await limiter.take('k');
    await limiter.take('k');
    await limiter.reset('k');
    assert.equal((await limiter.take('k')).allowed, true);
    assert.equal(store.takes, 3);
  });

  it('a refusal whose store call overlapped a reset is not remembered', async () => {
    const { store, limiter } = cached({ rule: tokenBucket({ limit: 1, period: '1h' }) });
    await limiter.take('k');
    store.hold();
    const before = limiter.take('k'); // refused by the store, its answer held back
    await limiter.reset('k');
    store.release();
    assert.equal((await before).allowed, false);
    assert.equal((await limiter.take('k')).allowed, true, 'the bucket was reset: the store admits');
    assert.equal(store.takes, 3);
  });

  it("a failure policy's refusals are not remembered; remembered ones hold while the store is down", async () => {
    const store = new FailingStore();
    const clock = manualClock(0);
    const limiter = createLimiter({
      name: 'api',
      rule: tokenBucket({ limit: 1, period: '1h' }),
      store,
      clock,
      failure: 'insurance',
      refusalCache: true,
      logger: { warn() {} },
    });
    store.mode = 'reject';
    await limiter.take('a');
    const insured = await limiter.take('a');
    assert.equal(insured.source, 'insurance');
    assert.equal(insured.allowed, false);
    store.mode = 'ok';
    assert.equal((await limiter.take('a')).allowed, true, 'the store decides again');
    assert.equal(store.calls, 3);

    assert.equal((await limiter.take('a')).allowed, false);
    store.mode = 'reject';
    const local = await limiter.take('a');
    assert.equal(local.source, 'store');
    assert.equal(store.calls, 4, 'answered locally: the failing store was not asked');
  });

  it('reports a local refusal as refused, with store latency 0', async () => {
    const events = new DecisionEvents();
    const seen: DecisionEvent[] = [];
    events.subscribe((e) => seen.push(e));
    const { limiter } = cached({ rule: tokenBucket({ limit: 1, period: '1h' }), events });
    await limiter.take('k');
    await limiter.take('k');
    await limiter.take('k', { cost: 1 });
    assert.deepEqual(
      seen.map((e) => [e.outcome, e.remaining, e.retryAfterMs]),
      [
        ['admitted', 0, 0],
        ['refused', 0, HOUR],
        ['refused', 0, HOUR],
      ],
    );
    assert.equal(seen[2]!.storeLatencyMs, 0);
  });

  it('peeks neither use nor fill the cache', async () => {
    const { store, limiter } = cached({ rule: tokenBucket({ limit: 1, period: '1h' }) });
    await limiter.take('k');
    assert.equal((await limiter.peek('k')).allowed, false);
    assert.equal((await limiter.take('k')).allowed, false);
    assert.equal((await limiter.peek('k')).allowed, false);
    assert.equal(store.takes, 4);
  });

  it('a clock set back before a refusal was learnt asks the store', async () => {
    const { store, clock, limiter } = cached({ rule: fixedWindow({ limit: 1, window: '1h' }) });
    clock.set(HOUR);
    await limiter.take('k');
    await limiter.take('k');
    clock.set(HOUR - 1);
    await limiter.take('k');
    assert.equal(store.takes, 3, 'the cache cannot tell how long the refusal has held');
  });

  it('a closed limiter forgets its refusals and rejects', async () => {
    const { limiter } = cached({ rule: tokenBucket({ limit: 1, period: '1h' }) });
    await limiter.take('k');
    await limiter.take('k');
    limiter.close();
    await assert.rejects(limiter.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'));
  });

  it('refuses penalty rules and malformed options, naming the option and never the value', () => {
    const store = new FailingStore();
    const make =
      (refusalCache: unknown, rule: Rule = tokenBucket({ limit: 1, period: '1h' })) =>
      () =>
        createLimiter({ name: 'api', rule, store, refusalCache: refusalCache as never });
    for (const rule of [
      tokenBucket({ limit: 1, period: '1h', penalty: true }),
      fixedWindow({ limit: 1, window: '1h', penalty: true }),
    ]) {
      assert.throws(
        make(true, rule),
        (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /refusalCache.*penalty/.test(e.message),
      );
    }
    for (const bad of [
      'yes',
      1,
      null,
      [],
      { maxKeys: 0 },
      { maxKeys: 2.5 },
      { maxKeys: 1e8 },
      { maxkeys: 5 },
    ]) {
      assert.throws(
        make(bad),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') &&
          e.message.includes('refusalCache') &&
          !e.message.includes('2.5') &&
          !e.message.includes('yes'),
      );
    }
    assert.equal(make(false)().name, 'api');
    store.unbind('api');
    assert.equal(make({ maxKeys: 5 })().name, 'api');
  });

  it('does nothing on the memory store, whose answers are local already', () => {
    const store = new MemoryStore();
    const limiter = createLimiter({
      name: 'api',
      rule: tokenBucket({ limit: 1, period: '1h' }),
      store,
      clock: manualClock(0),
      refusalCache: true,
    });
    assert.equal(limiter.takeSync('k').allowed, true);
    assert.equal(limiter.takeSync('k').allowed, false);
    limiter.resetSync('k');
    assert.equal(limiter.takeSync('k').allowed, true);
  });
});

describe('refusal cache memory', () => {
  const refusal = createLimiter({
    name: 'shape',
    rule: tokenBucket({ limit: 1, period: '1h' }),
    store: new MemoryStore(),
    clock: manualClock(0),
  });
  refusal.takeSync('x');
  const refused = refusal.takeSync('x');

  it('holds at most 2 × maxKeys refusals under a flood of 100,000 distinct keys', () => {
    const cache = new RefusalCache('shape', 1000);
    let most = 0;
    for (let i = 0; i < 100_000; i++) {
      const key = `k${i}`;
      cache.remember(key, 1, undefined, i, refused, cache.epoch);
      assert.ok(cache.answer(key, 1, undefined, i) !== undefined);
      if (cache.size > most) most = cache.size;
    }
    assert.equal(most, 2000);
    assert.ok(cache.size <= 2000);
  });

  it('a hot refused key survives a flood of others (a hit moves it to the newest generation)', () => {
    const cache = new RefusalCache('shape', 100);
    cache.remember('hot', 1, undefined, 0, refused, cache.epoch);
    for (let i = 0; i < 10_000; i++) {
      cache.remember(`k${i}`, 1, undefined, 0, refused, cache.epoch);
      assert.ok(cache.answer('hot', 1, undefined, 0) !== undefined, `hot key lost after ${i}`);
    }
  });

  it('drops a refusal past its instant when its key is next looked up', () => {
    const cache = new RefusalCache('shape', 100);
    for (let i = 0; i < 50; i++) cache.remember(`k${i}`, 1, undefined, 0, refused, cache.epoch);
    assert.equal(cache.size, 50);
    for (let i = 0; i < 50; i++) assert.equal(cache.answer(`k${i}`, 1, undefined, HOUR), undefined);
    assert.equal(cache.size, 0);
  });
});
