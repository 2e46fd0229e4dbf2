/**
 * The one deadline helper: what it answers in time, past its deadline, and with a late outcome.
 * Timers are mocked, so nothing here waits or depends on the machine's speed.
 */
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import { deadlineError, withDeadline } from '../../../src/stores/shared/deadline.js';
import { isSluiceError } from '../../../src/index.js';

/** A promise and the functions that settle it. */
function deferred<T>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('withDeadline', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  it('passes a value that comes in time through, and clears its timer', async () => {
    const d = deferred<number>();
    const bounded = withDeadline(d.promise, 100, 'the test store');
    mock.timers.tick(99);
    d.resolve(7);
    assert.equal(await bounded, 7);
    // Past the deadline nothing fires any more: the answer stays the value.
    mock.timers.tick(1_000);
    assert.equal(await bounded, 7);
  });

  it('passes an error that comes in time through unchanged (mapping it is the caller’s business)', async () => {
    const d = deferred<number>();
    const bounded = withDeadline(d.promise, 100, 'the test store');
    const error = Object.assign(new Error('driver text'), { code: 'ECONNRESET' });
    d.reject(error);
    await assert.rejects(bounded, (e: unknown) => e === error);
  });

  it('rejects with SLUICE_STORE_TIMEOUT naming what did not answer and the bound, at the deadline', async () => {
    const d = deferred<number>();
    const bounded = withDeadline(d.promise, 100, 'the test store');
    let settled = false;
    bounded.then(
      () => (settled = true),
      () => (settled = true),
    );
    mock.timers.tick(99);
    await Promise.resolve();
    assert.equal(settled, false);
    mock.timers.tick(1);
    await assert.rejects(
      bounded,
      (e: unknown) =>
        isSluiceError(e, 'SLUICE_STORE_TIMEOUT') &&
        e.message === 'the test store did not answer within 100 ms',
    );
  });

  it('ignores an outcome after the deadline, and a late rejection is handled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const d = deferred<number>();
      const bounded = withDeadline(d.promise, 50, 'the test store');
      mock.timers.tick(50);
      await assert.rejects(bounded, (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT'));
      d.reject(new Error('late'));
      // Let the late rejection run through every handler it has.
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('deadlineError is the same error the helper rejects with', () => {
    const error = deadlineError('the redis store (limit "login")', 250);
    assert.ok(isSluiceError(error, 'SLUICE_STORE_TIMEOUT'));
    assert.equal(error.message, 'the redis store (limit "login") did not answer within 250 ms');
  });
});
