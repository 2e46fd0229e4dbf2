/**
 * `limiter.close()` frees the limiter's rule in its store: afterwards the limiter refuses to
 * work (SLUICE_CONFIG), the name can be bound again, and creating and closing limiters over and
 * over does not grow the store.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { FailingStore } from '../../src/testing/failing-store.js';
import {
  MemoryStore,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
} from '../../src/index.js';

const rule = () => tokenBucket({ limit: 2, period: '1m' });
const closedError = (e: unknown) =>
  isSluiceError(e, 'SLUICE_CONFIG') && /limiter "t" is closed/.test((e as Error).message);

describe('limiter.close()', () => {
  it('memory store: take, peek and reset reject with SLUICE_CONFIG, sync and async; the buckets are dropped', async () => {
    const store = new MemoryStore();
    const limiter = createLimiter({ name: 't', rule: rule(), store, clock: manualClock(0) });
    limiter.takeSync('k');
    assert.equal(store.bucketCount('t'), 1);
    assert.equal(limiter.closed, false);
    limiter.close();
    limiter.close();
    assert.equal(limiter.closed, true);
    assert.equal(store.bucketCount('t'), 0);
    assert.throws(() => limiter.takeSync('k'), closedError);
    assert.throws(() => limiter.peekSync('k'), closedError);
    assert.throws(() => limiter.resetSync('k'), closedError);
    await assert.rejects(limiter.take('k'), closedError);
    await assert.rejects(limiter.peek('k'), closedError);
    await assert.rejects(limiter.reset('k'), closedError);
  });

  it('the name can be bound again, and the new limiter starts from full buckets on a memory store', () => {
    const store = new MemoryStore();
    const clock = manualClock(0);
    const first = createLimiter({ name: 't', rule: rule(), store, clock });
    first.takeSync('k');
    first.takeSync('k');
    assert.throws(
      () => createLimiter({ name: 't', rule: rule(), store, clock }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'),
    );
    first.close();
    const second = createLimiter({ name: 't', rule: rule(), store, clock });
    assert.equal(second.takeSync('k').remaining, 1);
  });

  it('an asynchronous store is unbound and never asked again', async () => {
    const store = new FailingStore();
    const limiter = createLimiter({ name: 't', rule: rule(), store });
    await limiter.take('k');
    limiter.close();
    await assert.rejects(limiter.take('k'), closedError);
    await assert.rejects(limiter.peek('k'), closedError);
    await assert.rejects(limiter.reset('k'), closedError);
    assert.equal(store.calls, 1);
    createLimiter({ name: 't', rule: rule(), store });
  });

  it('cascades own nothing: they cannot take a closed limiter, and reject takes once one of theirs is closed', async () => {
    const store = new MemoryStore();
    const a = createLimiter({ name: 'a', rule: rule(), store });
    const b = createLimiter({ name: 't', rule: rule(), store });
    const cascades = [createCascade([a, b]), createCascade([a, b], { mode: 'all-or-nothing' })];
    b.close();
    for (const cascade of cascades) {
      assert.throws(() => cascade.takeSync('k'), closedError);
      await assert.rejects(cascade.take('k'), closedError);
    }
    assert.equal(a.peekSync('k').remaining, 2, 'the open limit was not charged');
    assert.equal(a.closed, false, 'closing one limiter closes nothing else');
    assert.throws(
      () => createCascade([a, b]),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'),
    );
  });

  it('100,000 limiters created, used once and closed on one MemoryStore leave no bucket and no heap behind', async () => {
    const child = fileURLToPath(new URL('./close-many.child.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', child, '100000'],
      { timeout: 60_000 },
    );
    const { growth, buckets } = JSON.parse(stdout) as { growth: number; buckets: number };
    assert.equal(buckets, 0);
    // 100,000 rules kept alive cost about 56 MB here; freed ones cost nothing lasting.
    assert.ok(growth < 8 * 1024 * 1024, `heap grew by ${growth} bytes`);
  });
});
