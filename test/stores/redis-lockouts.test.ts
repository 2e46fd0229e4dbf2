/**
 * Lockouts (a rule's `block` option) in the Redis store, beyond the conformance suite and the
 * differential test: how long a key with a block lives (its TTL, read as Redis' own expiry
 * time), values written before lockouts existed, a rule without a lockout reading a value with a
 * block, and a forged lockout refused at bind.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import {
  calendarQuota,
  fixedWindow,
  isSluiceError,
  slidingWindow,
  tokenBucket,
  type Rule,
} from '../../src/index.js';
import type { BlockOptions } from '../../src/core/rules/lockout.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { APP_SLACK, assertTtl, ttlWindow as ttlOf } from '../support/redis-ttl.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefixRoot = `sluice-test:${runId}:lock:`;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe('Redis lockouts: TTL, stored values, bind', { skip }, () => {
  let redis: Redis;
  let stores = 0;
  before(async () => {
    redis = await ioredisClient(redisUrl);
  });
  after(async () => {
    await deleteKeys(redis, `${prefixRoot}*`);
    await redis.quit();
  });

  function store(timeSource: 'app' | 'store', prefix = `${prefixRoot}${++stores}:`): RedisStore {
    return new RedisStore({ client: redis, timeSource, timeout: '5s', prefix });
  }

  const ttlWindow = (key: string, write: () => Promise<unknown>) => ttlOf(redis, key, write);

  it('a block keeps the key until forgetAfter after its end, however soon its bucket is full again; then the bucket alone decides the TTL', async () => {
    const rule = tokenBucket({ limit: 1, period: '1s', block: { duration: '1h', forgetAfter: '1d' } });
    // On the store's time: the block starts at the server's now, and the key lives exactly its
    // length plus the memory, although the bucket is full again a second later.
    const onServer = store('store');
    const served = onServer.bind('login', rule);
    const key = `${onServer.prefix}login:{k}`;
    assertTtl(await ttlWindow(key, () => served.take('k', 1, 0, undefined)), 1000, 'a bucket alone');
    const refused = await ttlWindow(key, () => served.take('k', 1, 0, undefined));
    assertTtl(refused, HOUR + DAY, 'blocked');

    // On the app's time, later takes: admitted after the block, the key still lives until a day
    // after the block's end; admitted once that day is over, it lives as long as its bucket.
    const app = store('app');
    const buckets = app.bind('login', rule);
    const appKey = `${app.prefix}login:{k}`;
    const t = Date.UTC(2026, 4, 1, 12);
    assert.equal((await buckets.take('k', 1, t, undefined)).allowed, true);
    assert.equal((await buckets.take('k', 1, t, undefined)).retryAfterMs, HOUR);
    let admitted = true;
    const back = await ttlWindow(appKey, async () => {
      admitted = (await buckets.take('k', 1, t + HOUR, undefined)).allowed;
    });
    assert.equal(admitted, true);
    assertTtl(back, DAY + APP_SLACK, 'admitted while the block is remembered');
    const later = await ttlWindow(appKey, () => buckets.take('k', 1, t + HOUR + DAY, undefined));
    assertTtl(later, 1000 + APP_SLACK, 'admitted once the block is forgotten');
    // Forgotten indeed: the next refusal blocks for the first duration again.
    assert.equal((await buckets.take('k', 1, t + HOUR + DAY, undefined)).retryAfterMs, HOUR);
  });

  it('a block shorter than the counts it is written with keeps the key as long as the counts decide', async () => {
    const app = store('app');
    const block = { duration: '1m', forgetAfter: '1m' } as const;
    const t = Date.UTC(2026, 4, 1, 12);
    const cases: [string, Rule, number][] = [
      ['fixed', fixedWindow({ limit: 1, window: '1h', block }), HOUR],
      // A sliding window's count weighs on the next window too.
      ['sliding', slidingWindow({ limit: 1, window: '1h', block }), 2 * HOUR],
      ['quota', calendarQuota({ limit: 1, per: 'hour', block }), HOUR],
    ];
    for (const [name, rule, counted] of cases) {
      const buckets = app.bind(name, rule);
      assert.equal((await buckets.take('k', 1, t, undefined)).allowed, true);
      const refusal = await ttlWindow(`${app.prefix}${name}:{k}`, () => buckets.take('k', 1, t, undefined));
      assertTtl(refusal, counted + APP_SLACK, name);
    }
  });

  it('reads values written before lockouts; a rule without a lockout reads a value with a block', async () => {
    const prefix = `${prefixRoot}upgrade:`;
    const t = Date.UTC(2026, 4, 1, 12);
    const kinds: [string, (block?: BlockOptions) => Rule][] = [
      ['bucket', (block) => tokenBucket({ limit: 3, period: '1h', block })],
      ['fixed', (block) => fixedWindow({ limit: 3, window: '1h', block })],
      ['sliding', (block) => slidingWindow({ limit: 3, window: '1h', block })],
      ['quota', (block) => calendarQuota({ limit: 3, per: 'hour', block })],
    ];
    for (const [name, rule] of kinds) {
      const key = `${prefix}${name}:{k}`;
      // An earlier version's store: the same values as a rule without a lockout writes now.
      const before = store('app', prefix).bind(name, rule());
      await before.take('k', 2, t, undefined);
      assert.doesNotMatch((await redis.get(key))!, /\|/, `${name}: no block part`);

      const locked = store('app', prefix).bind(name, rule({ duration: '2h' }));
      assert.equal((await locked.take('k', 0, t, undefined)).remaining, 1, `${name}: the old count reads`);
      assert.equal((await locked.take('k', 1, t, undefined)).remaining, 0);
      const refused = await locked.take('k', 1, t, undefined);
      assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 2 * HOUR], `${name}: blocked`);
      assert.match((await redis.get(key))!, /\|/, `${name}: the block is stored`);

      // The same rule without its lockout (a deploy that removed it) reads the counts as before.
      const unlocked = store('app', prefix).bind(name, rule());
      const peek = await unlocked.take('k', 0, t, undefined);
      assert.deepEqual([peek.allowed, peek.remaining], [false, 0], `${name}: counts read past the block`);
    }
  });

  it('refuses at bind a lockout not made by sluice, naming the option and never the value', () => {
    const app = store('app');
    const made = tokenBucket({ limit: 1, period: '1s' });
    const forged: unknown[] = [
      null,
      'secret-block',
      { durationMs: 0, factor: 1, maxMs: 1000, forgetAfterMs: 0 },
      { durationMs: 1000, factor: Number.NaN, maxMs: 1000, forgetAfterMs: 0 },
      { durationMs: 1000, factor: 2, maxMs: 999, forgetAfterMs: 0 },
      { durationMs: 1000, factor: 2, maxMs: 2000, forgetAfterMs: 1.5 },
    ];
    for (const block of forged) {
      const rule = Object.assign(Object.create(Object.getPrototypeOf(made) as object), made, {
        block,
      }) as Rule;
      assert.throws(
        () => app.bind('forged', rule),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') &&
          /RedisStore rule block/.test((e as Error).message) &&
          !(e as Error).message.includes('secret-block'),
      );
    }
  });
});
