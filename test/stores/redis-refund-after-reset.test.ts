/**
 * A receipt from before its key's last reset refunds nothing on Redis: the reset already gave the
 * key a new bucket, and giving the old charge back too would admit more than the limit. Limit 5,
 * one reset, all in one instant: 10 admitted (5 before the reset, 5 after), where refunding the 5
 * old receipts admitted 15. Every algorithm on the app's time (a manual clock), the token bucket
 * and the fixed window on the server's; a receipt taken after the reset still refunds.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { createLimiter, tokenBucket } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { keySlot } from '../../src/stores/redis/key-slot.js';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { forgottenResetCase, refundAfterResetCases } from '../support/refund-after-reset.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefixRoot = `sluice-test:${runId}:rar:`;
describe('refunds after a reset, Redis store', { skip }, () => {
  let redis: Redis;
  let stores = 0;
  let shared: RedisStore | undefined;
  before(async () => {
    redis = await ioredisClient(redisUrl);
  });
  after(async () => {
    await deleteKeys(redis, `${prefixRoot}*`);
    await redis.quit();
  });

  function store(timeSource: 'app' | 'store'): RedisStore {
    return new RedisStore({ client: redis, timeSource, timeout: '5s', prefix: `${prefixRoot}${++stores}:` });
  }

  refundAfterResetCases((rule, clock) =>
    createLimiter({
      name: 'r',
      rule,
      store: store(clock === undefined ? 'store' : 'app'),
      ...(clock ? { clock } : {}),
    }),
  );

  forgottenResetCase(
    'a take under a per-call tier longer than the reset is remembered: once its marker is gone, an old receipt still refunds nothing',
    (rule, clock) => createLimiter({ name: 'r', rule, store: (shared = store('app')), clock }),
    async () => {
      // The marker's TTL (the rule's horizon) is real time: its expiry is its deletion.
      assert.equal(await redis.del(`${shared!.prefix}r#reset:{k}`), 1);
    },
  );

  it("a reset's marker lies in its bucket's Cluster slot under every hash tag, and erase deletes it uncounted", async () => {
    for (const hashTag of ['key', 'store', (_: string, key: string) => key.slice(0, 2)] as const) {
      const shared = new RedisStore({
        client: redis,
        hashTag,
        timeout: '5s',
        prefix: `${prefixRoot}${++stores}:`,
      });
      const buckets = shared.bind('r', tokenBucket({ limit: 5, period: '1h' }));
      for (const key of ['k', 'x'.repeat(300)]) {
        assert.equal(keySlot(buckets.markerKey(key)), keySlot(buckets.redisKey(key)));
        await buckets.take(key, 1, Date.now(), undefined);
        await buckets.reset(key);
        await buckets.take(key, 1, Date.now(), undefined);
        assert.equal(await redis.exists(buckets.markerKey(key)), 1);
        assert.equal(await shared.erase([key]), 1, 'the bucket alone is counted');
        assert.equal(await redis.exists(buckets.markerKey(key), buckets.redisKey(key)), 0);
      }
    }
  });
});
