/**
 * The memory store's side of the Store contract: an all-or-nothing take that names one bucket
 * twice is refused before anything is charged, and an unbound rule frees its buckets and answers
 * every later call with SLUICE_CONFIG.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  MemoryStore,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
} from '../../src/index.js';
import type { TakeEntry } from '../../src/stores/contract/store.js';

const configError = (e: unknown) =>
  isSluiceError(e, 'SLUICE_CONFIG') && /not bound/.test((e as Error).message);

describe('MemoryStore contract', () => {
  it('an all-or-nothing take naming the same bucket twice is SLUICE_ARGUMENT, and nothing is charged', async () => {
    const store = new MemoryStore();
    const clock = manualClock(0);
    const a = createLimiter({ name: 'a', rule: tokenBucket({ limit: 5, period: '1h' }), store, clock });
    const b = createLimiter({ name: 'b', rule: tokenBucket({ limit: 5, period: '1h' }), store, clock });
    const entries: TakeEntry[] = [
      { buckets: a.buckets, key: 'k', cost: 1, limit: undefined },
      { buckets: b.buckets, key: 'k', cost: 1, limit: undefined },
      { buckets: a.buckets, key: 'k', cost: 1, limit: undefined },
    ];
    const isArgument = (e: unknown) =>
      isSluiceError(e, 'SLUICE_ARGUMENT') && /same bucket twice/.test((e as Error).message);
    assert.throws(() => store.takeAllSync(entries, 0), isArgument);
    await assert.rejects(store.takeAll(entries, 0), isArgument);
    assert.equal(a.peekSync('k').remaining, 5);
    assert.equal(b.peekSync('k').remaining, 5);
    assert.equal(store.bucketCount('a') + store.bucketCount('b'), 0);
    // Equal keys on two rules are two buckets: allowed (each limit keeps its own counter).
    const both = createCascade([a, b], { mode: 'all-or-nothing' });
    assert.equal(both.takeSync('k').allowed, true);
    assert.equal(a.peekSync('k').remaining, 4);
    assert.equal(b.peekSync('k').remaining, 4);
  });

  it('an all-or-nothing take longer than a generation charges exactly what it evaluated', () => {
    const store = new MemoryStore({ maxKeysPerGeneration: 1 });
    const clock = manualClock(0);
    const limiters = ['x', 'y', 'z'].map((name) =>
      createLimiter({ name, rule: tokenBucket({ limit: 2, period: '1h' }), store, clock }),
    );
    const cascade = createCascade(limiters, { mode: 'all-or-nothing' });
    assert.equal(cascade.takeSync('k').allowed, true);
    assert.equal(cascade.takeSync('k').allowed, true);
    const third = cascade.takeSync('k');
    assert.equal(third.allowed, false);
    assert.deepEqual(third.refusedBy, ['x', 'y', 'z']);
  });

  it('unbind frees the rule: its buckets and summary go, later calls are SLUICE_CONFIG, and the name binds afresh', async () => {
    const store = new MemoryStore({ maxKeysPerGeneration: 2, rememberForgotten: ['login'] });
    const clock = manualClock(0);
    const rule = tokenBucket({ limit: 3, period: '1h' });
    const old = createLimiter({ name: 'login', rule, store, clock });
    for (let i = 0; i < 10; i++) old.takeSync(`k${i}`);
    assert.ok(store.bucketCount('login') > 0);
    assert.ok(store.summaryBytes('login') > 0);
    store.unbind('login');
    assert.equal(store.bucketCount('login'), 0);
    assert.equal(store.summaryBytes('login'), 0);
    assert.throws(() => old.takeSync('k0'), configError);
    assert.throws(() => old.peekSync('k0'), configError);
    assert.throws(() => old.resetSync('k0'), configError);
    await assert.rejects(old.buckets.take('k0', 1, 0, undefined), configError);
    await assert.rejects(old.buckets.reset('k0'), configError);
    await assert.rejects(
      store.takeAll([{ buckets: old.buckets, key: 'k0', cost: 1, limit: undefined }], 0),
      configError,
    );
    store.unbind('login'); // unbinding a name that is not bound does nothing
    const fresh = createLimiter({ name: 'login', rule, store, clock });
    assert.equal(fresh.peekSync('k0').remaining, 3, 'a rebound name starts with no buckets');
  });

  it('close unbinds every rule', async () => {
    const store = new MemoryStore();
    const limiter = createLimiter({ name: 'c', rule: tokenBucket({ limit: 1, period: '1h' }), store });
    limiter.takeSync('k');
    await store.close();
    assert.equal(store.bucketCount('c'), 0);
    assert.throws(() => limiter.takeSync('k'), configError);
  });
});
