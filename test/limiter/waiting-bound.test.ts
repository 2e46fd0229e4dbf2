/**
 * takeOrWait holds a bounded crowd: at most `maxWaitersPerKey` calls in progress for one key and
 * `maxWaiters` for the limiter; a call beyond either is refused at once with
 * SLUICE_WAIT_QUEUE_FULL and reserves nothing. Counted in calls (`limiter.waiting`), not in heap.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setMaxListeners } from 'node:events';
import { MemoryStore, createLimiter, isSluiceError, manualClock, tokenBucket } from '../../src/index.js';

const START = Date.UTC(2026, 0, 15, 12);
// One token a millisecond, burst 1: every waiter after the first waits for a slot of its own.
const rule = tokenBucket({ limit: 1000, period: '1s', burst: 1 });
const full = (e: unknown) => isSluiceError(e, 'SLUICE_WAIT_QUEUE_FULL');

function waiters(options: { maxWaiters?: number; maxWaitersPerKey?: number } = {}) {
  return createLimiter({
    name: 'api',
    rule,
    store: new MemoryStore(),
    clock: manualClock(START),
    ...options,
  });
}

/** Starts `count` waits on `key`; returns how many were refused as a full queue. */
function crowd(limiter: ReturnType<typeof waiters>, key: string, count: number, signal: AbortSignal) {
  let refused = 0;
  const calls: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++)
    calls.push(
      limiter.takeOrWait(key, { maxWait: '1h', signal }).catch((error: unknown) => {
        if (full(error)) refused++;
        else if (error !== signal.reason) throw error;
      }),
    );
  return { calls, refused: () => refused };
}

describe('limiter.takeOrWait: a bounded crowd of waiters', () => {
  it('100,000 callers on one key: 1,000 wait (the default per key), 99,000 are refused at once and reserve nothing', async () => {
    const aborts = new AbortController();
    setMaxListeners(0, aborts.signal);
    const limiter = waiters();
    const { calls, refused } = crowd(limiter, 'k', 100_000, aborts.signal);
    assert.equal(limiter.waiting, 1_000);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(refused(), 99_000);
    // Exactly 1,000 slots were reserved: the bucket stands as after 1,000 calls alone.
    const control = waiters();
    const controlAborts = new AbortController();
    setMaxListeners(0, controlAborts.signal);
    const alone = crowd(control, 'k', 1_000, controlAborts.signal);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(await limiter.peek('k'), await control.peek('k'));
    aborts.abort(new Error('test over'));
    controlAborts.abort(new Error('test over'));
    await Promise.all([...calls, ...alone.calls]);
    assert.equal(limiter.waiting, 0);
    assert.equal(control.waiting, 0);
  });

  it('the limiter bound counts every key; a call is let in again once a waiter leaves', async () => {
    const aborts = new AbortController();
    setMaxListeners(0, aborts.signal);
    const limiter = waiters({ maxWaiters: 50, maxWaitersPerKey: 10 });
    const runs = Array.from({ length: 8 }, (_, k) => crowd(limiter, `key${k}`, 12, aborts.signal));
    assert.equal(limiter.waiting, 50);
    await new Promise((resolve) => setImmediate(resolve));
    // Keys 0-3 fill to 10 each (2 refused per key), key 4 gets the last 10, keys 5-7 none.
    assert.deepEqual(
      runs.map((run) => run.refused()),
      [2, 2, 2, 2, 2, 12, 12, 12],
    );
    aborts.abort(new Error('test over'));
    await Promise.all(runs.flatMap((run) => run.calls));
    assert.equal(limiter.waiting, 0);
    const again = await limiter.takeOrWait('key7', { maxWait: '1h' });
    assert.equal(again.decision.allowed, true);
  });

  it('checks both bounds and names the option, never the value', () => {
    for (const [option, value] of [
      ['maxWaiters', 0],
      ['maxWaiters', 1.5],
      ['maxWaiters', '100'],
      ['maxWaitersPerKey', -1],
      ['maxWaitersPerKey', 2e7],
      ['maxWaitersPerKey', Number.NaN],
    ] as const)
      assert.throws(
        () => waiters({ [option]: value } as never),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') &&
          e.message === `limiter "api" ${option} must be a whole number from 1 to 10000000`,
      );
  });
});
