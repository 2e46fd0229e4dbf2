/**
 * A memory store draws its random hash seed on first use, not when it is created: a Cloudflare
 * Worker may not generate random values in its global scope, where a store is usually created.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createLimiter, tokenBucket } from '../../src/index.js';

describe('MemoryStore seed', () => {
  it('is not drawn by the constructor, and is drawn once the store is used', () => {
    const crypto = globalThis.crypto;
    const original = crypto.getRandomValues;
    let draws = 0;
    const refuse = () => {
      throw new Error('random values are not allowed here');
    };
    crypto.getRandomValues = refuse as typeof crypto.getRandomValues;
    let store: MemoryStore;
    try {
      store = new MemoryStore({ maxKeysPerGeneration: 1, rememberForgotten: ['seeded'] });
    } finally {
      crypto.getRandomValues = original;
    }
    crypto.getRandomValues = ((array: Uint32Array) => {
      draws++;
      return original.call(crypto, array);
    }) as typeof crypto.getRandomValues;
    try {
      const limiter = createLimiter({ name: 'seeded', rule: tokenBucket({ limit: 2, period: '1m' }), store });
      // Three keys through one-key generations: keys leave the maps, and the summary hashes them.
      for (const key of ['a', 'b', 'c', 'a']) assert.equal(limiter.takeSync(key).allowed, true);
    } finally {
      crypto.getRandomValues = original;
    }
    assert.equal(draws, 1);
  });
});
