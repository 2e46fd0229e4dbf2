import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { retryDelay } from '../../src/client/backoff.js';

const policy = (random: number) => ({
  baseDelayMs: 1000,
  maxDelayMs: 5000,
  jitterMs: 1000,
  random: () => random,
});

describe('retryDelay', () => {
  it('adds jitter on top of Retry-After, never below it', () => {
    assert.equal(retryDelay(1, 2000, policy(0)), 2000);
    assert.equal(retryDelay(1, 2000, policy(0.5)), 2500);
    assert.equal(retryDelay(1, 2000, policy(0.999)), 2999);
  });

  it('caps a jittered wait at maxDelay but never below Retry-After', () => {
    assert.equal(retryDelay(1, 4500, policy(0.9)), 5000);
    assert.equal(retryDelay(1, 5000, policy(0.9)), 5000);
  });

  it('backs off exponentially with full jitter when there is no Retry-After', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((retry) => retryDelay(retry, undefined, policy(0.5))),
      [500, 1000, 2000, 2500, 2500],
    );
    assert.equal(retryDelay(3, undefined, policy(0)), 0);
    assert.equal(retryDelay(2, 0, policy(0.5)), 1000, 'Retry-After 0 is no lower bound: backoff');
  });

  it('stays at the cap for any retry number, with no overflow', () => {
    assert.equal(retryDelay(5000, undefined, policy(0.5)), 2500);
  });

  it('refuses a random source outside [0, 1)', () => {
    for (const bad of [1, -0.1, Number.NaN])
      assert.throws(() => retryDelay(1, undefined, policy(bad)), { code: 'SLUICE_CONFIG' });
  });
});
