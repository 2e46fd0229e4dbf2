/**
 * How the Redis store keeps a token bucket's state across per-call tiers, beyond the conformance
 * suite and the differential test: the values it reads and writes. A value of two fields (every
 * key written before tiers) is in the rule's own scale; a write under a tier whose rate or
 * tolerance differs from the rule's carries both as two more fields, and a write under the rule's
 * own drops them again; a lockout's bar after either keeps working; a key's TTL is its time to
 * full in the scale it is written in. Also: tiers the store refuses before sending anything.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import {
  isSluiceError,
  tokenBucket,
  type BlockOptions,
  type BucketTier,
  type Decision,
} from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { APP_SLACK, assertTtl, ttlWindow } from '../support/redis-ttl.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefixRoot = `sluice-test:${runId}:tiers:`;
const T = Date.UTC(2026, 0, 15, 12, 0, 0);
/** Ten times the rule's rate and capacity (10 a minute): the same period. */
const pro: BucketTier = { limit: 100, periodMs: 60_000, burst: 100 };
/** Odd numbers: migrating to and from it rounds up. */
const odd: BucketTier = { limit: 7, periodMs: 3_001, burst: 3 };

const view = (d: Decision) => [d.allowed, d.limit, d.capacity, d.remaining, d.retryAfterMs, d.resetMs];

describe("Redis keeps a token bucket's state across per-call tiers", { skip }, () => {
  let redis: Redis;
  let stores = 0;
  before(async () => {
    redis = await ioredisClient(redisUrl);
  });
  after(async () => {
    await deleteKeys(redis, `${prefixRoot}*`);
    await redis.quit();
  });

  function bind(name: string, block?: BlockOptions) {
    const store = new RedisStore({
      client: redis,
      timeSource: 'app',
      timeout: '5s',
      prefix: `${prefixRoot}${++stores}:`,
    });
    const buckets = store.bind(name, tokenBucket({ limit: 10, period: '1m', ...(block ? { block } : {}) }));
    return { buckets, key: `${store.prefix}${name}:{k}` };
  }

  it('reads a value written before tiers (two fields) under the rule’s own parameters, and under a tier migrated from them', async () => {
    const { buckets, key } = bind('old');
    // 3 tokens and 5 scaled units (of 1/10 ms) in use: 18,000.5 ms to full.
    await redis.set(key, `${T + 18_000}:5`);
    assert.deepEqual(view(await buckets.take('k', 0, T, undefined)), [true, 10, 10, 6, 0, 18_001]);
    // 180,005 of 600,000 is 1,800,050 of 6,000,000.
    assert.deepEqual(view(await buckets.take('k', 0, T, pro)), [true, 100, 100, 69, 0, 18_001]);
    assert.equal(await redis.get(key), `${T + 18_000}:5`, 'peeks write nothing');
  });

  it('writes a tier with the state, and a take under the rule’s own parameters migrates it back to two fields', async () => {
    const { buckets, key } = bind('move');
    await redis.set(key, `${T + 18_000}:0`);
    const ttl = (write: () => Promise<unknown>) => ttlWindow(redis, key, write);

    let taken: Decision | undefined;
    const tiered = await ttl(async () => (taken = await buckets.take('k', 10, T, pro)));
    // 30 of 100 in use, then 10 more: 40 of 100, full in 24 s.
    assert.deepEqual(view(taken!), [true, 100, 100, 60, 0, 24_000]);
    assert.equal(await redis.get(key), `${T + 24_000}:0:100:6000000`);
    assertTtl(tiered, 24_000 + APP_SLACK, 'under the tier');

    const own = await ttl(async () => (taken = await buckets.take('k', 1, T, undefined)));
    // 4 of 10 in use, then 1 more.
    assert.deepEqual(view(taken!), [true, 10, 10, 5, 0, 30_000]);
    assert.equal(await redis.get(key), `${T + 30_000}:0`, 'back in the rule’s own scale: two fields');
    assertTtl(own, 30_000 + APP_SLACK, 'under the rule');

    // 30 s to full under the rule stays 30 s under the odd tier (210,000 scaled units at 7 a ms,
    // more than the fraction's 4,501.5 of 9,003): a switch to a faster-refilling tier adds nothing.
    assert.deepEqual(view(await buckets.take('k', 1, T, odd)), [false, 7, 3, 0, 29_143, 30_000]);
    assert.equal(await redis.get(key), `${T + 30_000}:0`, 'a refusal writes nothing');
    // Half a second to full (5,000 units at 10 a ms) is 3,500 at 7 a ms; a token of 3,001 more:
    // 6,501 units, 928 ms and 5 units.
    const later = T + 29_500;
    const rounded = await ttl(async () => (taken = await buckets.take('k', 1, later, odd)));
    assert.deepEqual(view(taken!), [true, 7, 3, 0, 0, 929]);
    assert.equal(await redis.get(key), `${later + 928}:5:7:9003`);
    assertTtl(rounded, 929 + APP_SLACK, 'under the odd tier');
    // And back: the fraction, 6,501 × 600,000 / 9,003 = 433,255.58…, rounded up to 433,256, is
    // more than the time until full (9,288 units): 2 tokens left, 43,326 ms to full.
    assert.deepEqual(view(await buckets.take('k', 0, later, undefined)), [true, 10, 10, 2, 0, 43_326]);
    // A refusal that charges nothing leaves the state in its own scale.
    assert.deepEqual(view(await buckets.take('k', 3, later, undefined)), [false, 10, 10, 2, 1_326, 43_326]);
    assert.equal(await redis.get(key), `${later + 928}:5:7:9003`);
  });

  it('settles a refund in the tier of its take, and writes the state in that tier', async () => {
    const { buckets, key } = bind('refund');
    await buckets.take('k', 50, T, pro);
    assert.equal(await redis.get(key), `${T + 30_000}:0:100:6000000`);
    // 10 s later 33⅓ of 100 are in use; 20 of the take's 50 given back leaves 13⅓, at the
    // tier's rate 8 s to full.
    await buckets.adjust('k', { delta: -20, now: T + 10_000, takenAt: T, until: T + 30_000, limit: pro });
    assert.equal(await redis.get(key), `${T + 18_000}:0:100:6000000`);
    // A refund under the rule's own parameters migrates first: 13⅓ of 100 is 1⅓ of 10, less 1.
    await buckets.adjust('k', {
      delta: -1,
      now: T + 10_000,
      takenAt: T,
      until: T + 30_000,
      limit: undefined,
    });
    assert.equal(await redis.get(key), `${T + 12_000}:0`);
  });

  it('reads and keeps a lockout’s bar after a tiered value', async () => {
    const { buckets, key } = bind('locked', { duration: '1s' });
    const block = `|${T + 500}:1000`;
    await redis.set(key, `${T + 24_000}:0:100:6000000${block}`);
    const blocked = await buckets.take('k', 1, T, undefined);
    assert.deepEqual([blocked.allowed, blocked.retryAfterMs], [false, 500]);
    assert.equal(
      await redis.get(key),
      `${T + 24_000}:0:100:6000000${block}`,
      'a blocked take writes nothing',
    );
    // Once the block is over: 23.5 s to full at 100 a minute is 39⅙ of 100, 3 11/12 of 10, then
    // a token: full in 29.5 s.
    const admitted = await buckets.take('k', 1, T + 500, undefined);
    assert.deepEqual(view(admitted), [true, 10, 10, 5, 0, 29_500]);
    assert.equal(await redis.get(key), `${T + 30_000}:0${block}`);
  });

  it('refuses a tier it cannot count with before sending anything, naming the field and never the value', async () => {
    const { buckets, key } = bind('bad');
    const secret = 987_654_321.5;
    const cases: [unknown, RegExp][] = [
      [null, /per-call tier must be an object/],
      ['gold', /per-call tier must be an object/],
      [{ limit: secret, periodMs: 1_000, burst: 1 }, /tier's limit must be a whole number from 1 to 1000000/],
      [{ limit: 1_000_001, periodMs: 1_000, burst: 1 }, /tier's limit/],
      [{ limit: 5, periodMs: 0, burst: 1 }, /tier's periodMs must be a whole number of at least 1/],
      [{ limit: 5, periodMs: secret, burst: 1 }, /tier's periodMs/],
      [{ limit: 5, periodMs: 1_000, burst: 0 }, /tier's burst must be a whole number from 1 to/],
      [{ limit: 5, periodMs: 1_000, burst: '3' }, /tier's burst/],
      [{ limit: 5, periodMs: 10_000, burst: 1e12 }, /burst × periodMs is too large/],
    ];
    for (const [tier, message] of cases) {
      const calls = [
        () => buckets.take('k', 1, T, tier as BucketTier),
        () => buckets.reserve!('k', 1, T, 1_000, tier as BucketTier),
        () =>
          buckets.adjust('k', { delta: -1, now: T, takenAt: T, until: T + 1_000, limit: tier as BucketTier }),
      ];
      for (const call of calls) {
        await assert.rejects(call(), (e: unknown) => {
          assert.ok(isSluiceError(e, 'SLUICE_ARGUMENT'), String(e));
          assert.match((e as Error).message, message);
          assert.doesNotMatch((e as Error).message, /987654321|gold/);
          return true;
        });
      }
    }
    assert.equal(await redis.exists(key), 0, 'nothing was sent');
  });
});
