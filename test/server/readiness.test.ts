/**
 * The readiness check behind /readyz, on an injected clock: any number of callers cost the
 * store one probe per interval, a probe in flight is shared, and a probe that outlives the
 * decisions' deadline answers "unavailable" without a second probe beside it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cachedReadiness } from '../../src/server/serve/readiness.js';

/** A probe that counts its runs and answers when the test says. */
function countedProbe() {
  const pending: ((ok: boolean) => void)[] = [];
  return {
    runs: 0,
    pending,
    probe() {
      this.runs++;
      return new Promise<boolean>((resolve) => pending.push(resolve));
    },
  };
}

describe('cachedReadiness', () => {
  it('512 callers at once share one probe, and its answer stands for the interval', async () => {
    let now = 0;
    const counted = countedProbe();
    const ready = cachedReadiness(() => counted.probe(), {
      intervalMs: 1000,
      deadlineMs: 60_000,
      now: () => now,
    });
    const answers = Array.from({ length: 512 }, () => ready());
    assert.equal(counted.runs, 1);
    counted.pending.shift()!(true);
    assert.deepEqual(new Set(await Promise.all(answers)), new Set([true]));
    now = 999;
    assert.equal(await ready(), true);
    assert.equal(counted.runs, 1);
    now = 1000;
    const next = ready();
    assert.equal(counted.runs, 2);
    counted.pending.shift()!(false);
    assert.equal(await next, false);
  });

  it('a probe that rejects answers false', async () => {
    const ready = cachedReadiness(() => Promise.reject(new Error('down')), { deadlineMs: 60_000 });
    assert.equal(await ready(), false);
  });

  it('a probe past the deadline answers false; no second probe runs until it answers', async () => {
    let now = 0;
    const counted = countedProbe();
    const ready = cachedReadiness(() => counted.probe(), { intervalMs: 10, deadlineMs: 1, now: () => now });
    assert.equal(await ready(), false);
    now = 100;
    assert.equal(await ready(), false);
    assert.equal(counted.runs, 1);
    counted.pending.shift()!(true);
    await new Promise((resolve) => setImmediate(resolve));
    const after = ready();
    assert.equal(counted.runs, 2);
    counted.pending.shift()!(true);
    assert.equal(await after, true);
  });
});
