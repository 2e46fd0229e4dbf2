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
import {
  calendarQuota,
  createLimiter,
  fixedWindow,
  manualClock,
  slidingWindow,
  tokenBucket,
  type Rule,
} from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { keySlot } from '../../src/stores/redis/key-slot.js';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefixRoot = `sluice-test:${runId}:rar:`;
const START = Date.UTC(2026, 0, 15, 12);

const rules: [string, () => Rule][] = [
  ['token bucket', () => tokenBucket({ limit: 5, period: '1h' })],
  ['fixed window', () => fixedWindow({ limit: 5, window: '1h' })],
  ['sliding window', () => slidingWindow({ limit: 5, window: '1h' })],
  ['calendar quota', () => calendarQuota({ limit: 5, per: 'day' })],
];

describe('refunds after a reset, Redis store', { skip }, () => {
  let redis: Redis;
  let stores = 0;
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

  /** Takes 5 with receipts, resets, takes until refused, refunds the 5, takes again: the count. */
  async function admittedAroundReset(limiter: ReturnType<typeof createLimiter>): Promise<number> {
    const old = [];
    let admitted = 0;
    for (let i = 0; i < 5; i++) {
      const { decision, receipt } = await limiter.takeWithReceipt('k');
      if (decision.allowed) admitted++;
      old.push(receipt!);
    }
    await limiter.reset('k');
    for (let i = 0; i < 20 && (await limiter.take('k')).allowed; i++) admitted++;
    for (const receipt of old) await limiter.refund(receipt);
    for (let i = 0; i < 20 && (await limiter.take('k')).allowed; i++) admitted++;
    return admitted;
  }

  for (const [title, rule] of rules) {
    it(`${title}, app's time: limit 5 and one reset in one instant admit 10, not 15`, async () => {
      const limiter = createLimiter({
        name: 'r',
        rule: rule(),
        store: store('app'),
        clock: manualClock(START),
      });
      assert.equal(await admittedAroundReset(limiter), 10);
    });

    it(`${title}, app's time: a receipt taken after the reset still refunds`, async () => {
      const clock = manualClock(START);
      const limiter = createLimiter({ name: 'r', rule: rule(), store: store('app'), clock });
      await limiter.takeWithReceipt('k');
      await limiter.reset('k');
      clock.advance(1);
      const { receipt } = await limiter.takeWithReceipt('k');
      assert.equal((await limiter.peek('k')).remaining, 4);
      await limiter.refund(receipt!);
      assert.equal((await limiter.peek('k')).remaining, 5, 'a charge made after the reset is given back');
    });
  }

  it('a take under a per-call tier longer than the reset is remembered: once its marker is gone, an old receipt still refunds nothing', async () => {
    const clock = manualClock(START);
    const shared = store('app');
    const limiter = createLimiter({
      name: 'r',
      rule: tokenBucket({ limit: 10, period: '1m' }),
      store: shared,
      clock,
    });
    // 10 a day: a token refills in 2.4 h, longer than the rule's refund horizon (about an hour).
    const tier = { limit: 10, period: '1d', burst: 10 } as const;
    const old = [];
    for (let i = 0; i < 10; i++) old.push((await limiter.takeWithReceipt('k', tier)).receipt!);
    await limiter.reset('k');
    let admitted = 0;
    for (let i = 0; i < 20 && (await limiter.take('k', tier)).allowed; i++) admitted++;
    assert.equal(admitted, 10);
    clock.advance('2h');
    // The marker's TTL (the rule's horizon) is real time: its expiry is its deletion.
    assert.equal(await redis.del(`${shared.prefix}r#reset:{k}`), 1);
    for (const receipt of old) await limiter.refund(receipt);
    assert.equal((await limiter.take('k', tier)).allowed, false, 'no token given back, none refilled yet');
  });

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

  for (const [title, rule] of rules.slice(0, 2)) {
    it(`${title}, server's time: limit 5 and one reset in one instant admit 10, not 15`, async () => {
      const limiter = createLimiter({ name: 'r', rule: rule(), store: store('store') });
      assert.equal(await admittedAroundReset(limiter), 10);
    });
  }
});
