/**
 * Cascades are validated at construction: only limiters made by createLimiter (a cascade applies
 * their failure policies), each at most once (one bucket charged twice in one take would be a
 * silent double or single charge), and coded errors naming the option.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FailingStore } from '../../src/testing/failing-store.js';
import { MemoryStore, createCascade, createLimiter, isSluiceError, tokenBucket } from '../../src/index.js';

const configError = (mentions: RegExp) => (e: unknown) =>
  isSluiceError(e, 'SLUICE_CONFIG') && mentions.test((e as Error).message);

describe('cascade construction', () => {
  it('rejects a look-alike limiter that createLimiter did not make', () => {
    const store = new MemoryStore();
    const real = createLimiter({ name: 'real', rule: tokenBucket({ limit: 1, period: '1s' }), store });
    const fake = {
      name: 'fake',
      rule: real.rule,
      store,
      clock: real.clock,
      buckets: real.buckets,
      take: real.take,
    };
    assert.throws(() => createCascade([real, fake as never]), configError(/createCascade limiters/));
    assert.throws(
      () => createCascade([real, fake as never], { mode: 'all-or-nothing' }),
      configError(/createCascade limiters/),
    );
  });

  it('rejects one limiter twice in both modes, so no take can name one bucket twice', () => {
    const store = new FailingStore();
    const a = createLimiter({ name: 'a', rule: tokenBucket({ limit: 1, period: '1s' }), store });
    for (const mode of ['first-refusal', 'all-or-nothing'] as const)
      assert.throws(() => createCascade([a, a], { mode }), configError(/twice/));
  });

  it('rejects options that are not an object, unknown options and unknown modes, naming them', () => {
    const a = createLimiter({
      name: 'a',
      rule: tokenBucket({ limit: 1, period: '1s' }),
      store: new MemoryStore(),
    });
    assert.throws(() => createCascade([a], null as never), configError(/createCascade options/));
    assert.throws(() => createCascade([a], { order: 'wide' } as never), configError(/order/));
    assert.throws(() => createCascade([a], { mode: 'any' as never }), configError(/createCascade mode/));
    assert.throws(() => createCascade('a' as never), configError(/createCascade limiters/));
  });
});
