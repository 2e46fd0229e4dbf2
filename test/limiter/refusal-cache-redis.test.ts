/**
 * The refusal cache in front of the real Redis store: a flood on a refused key reaches Redis
 * once until the retry instant, on the store's own clock as on the application's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { createLimiter, fixedWindow, manualClock, tokenBucket } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { CountingStore } from './counting-store.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefix = `sluice-test:${runId}:refusal-cache:`;

describe('refusal cache on Redis', { skip }, () => {
  let client: Redis;
  before(async () => {
    client = await ioredisClient(redisUrl);
  });
  after(async () => {
    await deleteKeys(client, `${prefix}*`);
    client.disconnect();
  });

  it("on the store's clock: a flood on a refused key is one Redis call", async () => {
    const store = new CountingStore(new RedisStore({ client, prefix: `${prefix}store:`, timeout: '2s' }));
    const limiter = createLimiter({
      name: 'flood',
      rule: tokenBucket({ limit: 1, period: '1h' }),
      store,
      refusalCache: true,
    });
    assert.equal((await limiter.take('k')).allowed, true);
    assert.equal((await limiter.take('k')).allowed, false);
    const flood = await Promise.all(Array.from({ length: 500 }, () => limiter.take('k')));
    assert.ok(flood.every((d) => !d.allowed && d.remaining === 0 && d.retryAfterMs > 0));
    assert.equal(store.takes, 2);
    await limiter.reset('k');
    assert.equal((await limiter.take('k')).allowed, true, 'reset reaches Redis and the cache');
    assert.equal(store.takes, 3);
  });

  it("on the application's clock: answered locally until the retry instant, then Redis again", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1, 10, 30));
    const store = new CountingStore(
      new RedisStore({ client, prefix: `${prefix}app:`, timeout: '2s', timeSource: 'app' }),
    );
    const limiter = createLimiter({
      name: 'windowed',
      rule: fixedWindow({ limit: 2, window: '1h' }),
      store,
      clock,
      refusalCache: { maxKeys: 100 },
    });
    await limiter.take('k', { cost: 2 });
    const refused = await limiter.take('k');
    assert.equal(refused.retryAfterMs, 30 * 60_000);
    clock.advance(30 * 60_000 - 2);
    assert.equal((await limiter.take('k', { cost: 2 })).retryAfterMs, 2);
    assert.equal((await limiter.take('k', { limit: 3 })).allowed, true, 'another limit asks Redis');
    assert.equal(store.takes, 3);
    clock.advance(2);
    assert.equal((await limiter.take('k')).allowed, true, 'a new window: Redis admits');
    assert.equal(store.takes, 4);
  });
});
