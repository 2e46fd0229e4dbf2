/**
 * Refunds and settlements in the Redis store (`RuleBuckets.adjust`), beyond the conformance
 * suite and the differential test: a refund once the take's window is over, a token bucket's
 * refund of a take partly refilled, the TTL a key is written with (the rule's horizon, a
 * lockout's memory kept), the server's clock, and the arguments refused before anything is
 * sent.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import {
  calendarQuota,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  slidingWindow,
  tokenBucket,
  type Limiter,
  type Rule,
} from '../../src/index.js';
import { MAX_COUNT } from '../../src/core/bounds.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { APP_SLACK, assertTtl, serverMs, ttlWindow } from '../support/redis-ttl.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefixRoot = `sluice-test:${runId}:adj:`;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('Redis refunds and settlements', { skip }, () => {
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

  it("a refund once the take's window is over gives nothing back, whether the state moved on or not", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 15, 12, 0, 30));
    const shared = store('app');
    const cases: [string, Rule, number][] = [
      // The rule, and how far to move the clock past the take's window.
      ['fixed', fixedWindow({ limit: 5, window: '1m' }), MINUTE],
      // A sliding window's count weighs on the window after its own: two windows on, it is over.
      ['sliding', slidingWindow({ limit: 5, window: '1m' }), 2 * MINUTE],
      ['quota', calendarQuota({ limit: 5, per: 'hour' }), HOUR],
    ];
    for (const [name, rule, later] of cases) {
      clock.set(Date.UTC(2026, 0, 15, 12, 0, 30));
      const l = createLimiter({ name, rule, store: shared, clock, timeout: '5s' });
      const key = `${shared.prefix}${name}:{`;
      const { receipt: untouched } = await l.takeWithReceipt('idle', { cost: 3 });
      const { receipt: moved } = await l.takeWithReceipt('busy', { cost: 3 });
      clock.advance(later);
      // 'busy' is taken from again in the new window: its state is the new window's now.
      assert.equal((await l.take('busy', { cost: 2 })).remaining, 3);
      const stored = await redis.get(`${key}busy}`);
      await l.refund(moved!);
      assert.equal(await redis.get(`${key}busy}`), stored, `${name}: the new window's count is untouched`);
      assert.equal((await l.peek('busy')).remaining, 3, `${name}: nothing given back`);
      // 'idle' still holds the ended window's count, which decides nothing any more.
      await l.refund(untouched!);
      assert.equal((await l.peek('idle')).remaining, 5, name);
      assert.equal((await l.take('idle', { cost: 5 })).allowed, true, `${name}: the whole limit, no more`);
      assert.equal((await l.take('idle')).allowed, false, `${name}: nothing extra from the refund`);
    }
    // A token bucket that is full again has nothing to give back either.
    clock.set(Date.UTC(2026, 0, 15, 12, 0, 30));
    const bucket = createLimiter({
      name: 'bucket',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store: shared,
      clock,
      timeout: '5s',
    });
    const { receipt } = await bucket.takeWithReceipt('k', { cost: 5 });
    clock.advance('1m');
    await bucket.refund(receipt!);
    assert.equal((await bucket.take('k', { cost: 5 })).allowed, true);
    assert.equal((await bucket.take('k')).allowed, false, 'full, not fuller');
  });

  it("a token bucket's refund gives back only the take's units that have not refilled, never a later take's", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 15, 12));
    // A token a second, ten at most.
    const l = createLimiter({
      name: 'partly',
      rule: tokenBucket({ limit: 1, period: '1s', burst: 10 }),
      store: store('app'),
      clock,
      timeout: '5s',
    });
    const { receipt: early } = await l.takeWithReceipt('k', { cost: 5 });
    clock.advance('4s'); // four of the five are back; one second of the take still weighs
    const { receipt: late } = await l.takeWithReceipt('k', { cost: 3 });
    assert.equal((await l.peek('k')).remaining, 6);
    await l.refund(early!);
    assert.equal((await l.peek('k')).remaining, 7, 'the one token not refilled yet, not the later take');
    await l.refund(late!);
    assert.equal((await l.peek('k')).remaining, 10, 'the later take is given back in full');
  });

  it("on the server's clock, a refund of a take made in an earlier window than the key's gives nothing back", async () => {
    const onServer = store('store');
    const rules: [string, Rule][] = [
      ['fixed', fixedWindow({ limit: 5, window: '1h' })],
      ['sliding', slidingWindow({ limit: 5, window: '1h' })],
      ['quota', calendarQuota({ limit: 5, per: 'hour' })],
    ];
    for (const [name, rule] of rules) {
      const buckets = onServer.bind(name, rule);
      assert.equal((await buckets.take('k', 3, 0, undefined)).remaining, 2);
      const stored = await redis.get(`${onServer.prefix}${name}:{k}`);
      // Two hours before the app's now: a window that ended, translated to the server's time.
      const takenAt = Date.now() - 2 * HOUR;
      await buckets.adjust('k', { delta: -3, now: 0, takenAt, until: takenAt });
      assert.equal(await redis.get(`${onServer.prefix}${name}:{k}`), stored, name);
      assert.equal((await buckets.take('k', 0, 0, undefined)).remaining, 2, name);
    }
  });

  it("on the server's clock, every rule refunds and settles a take the limiter just made", async () => {
    const onServer = store('store');
    const rules: [string, Rule][] = [
      ['bucket', tokenBucket({ limit: 1, period: '1h', burst: 10 })],
      ['fixed', fixedWindow({ limit: 10, window: '1h' })],
      ['sliding', slidingWindow({ limit: 10, window: '1h' })],
      ['quota', calendarQuota({ limit: 10 })],
    ];
    for (const [name, rule] of rules) {
      const l: Limiter = createLimiter({ name, rule, store: onServer, timeout: '5s' });
      const sent = Date.now();
      const { receipt } = await l.takeWithReceipt('k', { cost: 4 });
      const took = Date.now() - sent;
      await l.refund(receipt!);
      if (name === 'bucket') {
        // The take's units come back until its end, which the measured offset translates to the
        // server's clock early by at most the take's round trip (the offset is short of the
        // true one by no more than that): so much of the take may stay queued, and no more.
        const end = await serverMs(redis);
        const value = await redis.get(`${onServer.prefix}${name}:{k}`);
        const arrival = value === null ? 0 : Number(value.split(':')[0]);
        assert.ok(arrival <= end + took, `${name}: refunded but for ${arrival - end} ms (took ${took} ms)`);
      } else {
        assert.equal((await l.peek('k')).remaining, 10, `${name}: refunded`);
      }
      const { receipt: estimate } = await l.takeWithReceipt('j', { cost: 4 });
      await l.settle(estimate!, 7);
      assert.equal((await l.peek('j')).remaining, 3, `${name}: settled at the actual cost`);
    }
  });

  it("writes the key with the rule's horizon as its TTL, on the app's time", async () => {
    const app = store('app');
    const t = Date.UTC(2026, 0, 15, 12, 0, 15);
    const ttl = (name: string, write: () => Promise<unknown>) =>
      ttlWindow(redis, `${app.prefix}${name}:{k}`, write);

    // One token a second, ten at most: the TTL is the time until the bucket is full.
    const bucket = app.bind('bucket', tokenBucket({ limit: 1, period: '1s', burst: 10 }));
    await bucket.take('k', 5, t, undefined);
    const refund = (delta: number, now: number, until: number) => () =>
      bucket.adjust('k', { delta, now, takenAt: t, until });
    assertTtl(await ttl('bucket', refund(-2, t, t + 5000)), 3000 + APP_SLACK, 'refund');
    // A charge past the debt's cap (twice the burst) stops at it.
    assertTtl(await ttl('bucket', refund(30, t, t + 5000)), 20_000 + APP_SLACK, 'charge');
    // A refund of a take weighing until the debt's end: full again, nothing left to remember
    // but the slack.
    assertTtl(await ttl('bucket', refund(-100, t + 1000, t + 20_000)), APP_SLACK, 'full');

    // A window's count lives until the window's end, a sliding window's until the next one's.
    const fixed = app.bind('fixed', fixedWindow({ limit: 10, window: '1m' }));
    await fixed.take('k', 4, t, undefined);
    assertTtl(
      await ttl('fixed', () => fixed.adjust('k', { delta: 2, now: t + 30_000, takenAt: t, until: t })),
      15_000 + APP_SLACK,
      'charge',
    );
    assertTtl(
      await ttl('fixed', () => fixed.adjust('k', { delta: -6, now: t + 35_000, takenAt: t, until: t })),
      APP_SLACK,
      'all refunded',
    );

    const sliding = app.bind('sliding', slidingWindow({ limit: 10, window: '1m' }));
    await sliding.take('k', 2, t, undefined);
    const next = t + MINUTE - 5000; // 12:01:10
    await sliding.take('k', 1, next, undefined);
    // The current count refunded, the previous one still weighs until this window's end.
    assertTtl(
      await ttl('sliding', () =>
        sliding.adjust('k', { delta: -1, now: next + 10_000, takenAt: next, until: next }),
      ),
      40_000 + APP_SLACK,
      'current',
    );
    assertTtl(
      await ttl('sliding', () =>
        sliding.adjust('k', { delta: -2, now: next + 10_000, takenAt: t, until: t }),
      ),
      APP_SLACK,
      'previous',
    );

    const quota = app.bind('quota', calendarQuota({ limit: 10, per: 'hour' }));
    await quota.take('k', 3, t, undefined);
    assertTtl(
      await ttl('quota', () => quota.adjust('k', { delta: 1, now: t, takenAt: t, until: t })),
      HOUR - 15_000 + APP_SLACK,
      'charge',
    );
    assertTtl(
      await ttl('quota', () => quota.adjust('k', { delta: -4, now: t, takenAt: t, until: t })),
      APP_SLACK,
      'all refunded',
    );
  });

  it("on the server's clock, the key expires when its state is as good as new, and a refund to full deletes it", async () => {
    const onServer = store('store');
    const bucket = onServer.bind('bucket', tokenBucket({ limit: 1, period: '1h', burst: 5 }));
    const key = `${onServer.prefix}bucket:{k}`;
    const at = Date.now();
    await bucket.take('k', 3, at, undefined);
    // The take's three tokens weigh until three hours after it.
    await bucket.adjust('k', { delta: -1, now: at, takenAt: at, until: at + 3 * HOUR });
    // "<arrival ms>:0": the bucket is full at the arrival time, when the key expires.
    const [arrival, fraction] = (await redis.get(key))!.split(':').map(Number);
    assert.equal(fraction, 0);
    assert.equal(Number(await redis.pexpiretime(key)), arrival);
    await bucket.adjust('k', { delta: -2, now: at, takenAt: at, until: at + 3 * HOUR });
    assert.equal(await redis.exists(key), 0, 'full: nothing to remember');

    const fixed = onServer.bind('fixed', fixedWindow({ limit: 5, window: '1h' }));
    const fixedKey = `${onServer.prefix}fixed:{k}`;
    await fixed.take('k', 2, at, undefined);
    await fixed.adjust('k', { delta: 1, now: at, takenAt: at, until: at });
    const [start, count] = (await redis.get(fixedKey))!.split(':').map(Number);
    assert.equal(count, 3);
    assert.equal(Number(await redis.pexpiretime(fixedKey)), start! + HOUR, 'until the window ends');
    await fixed.adjust('k', { delta: -3, now: at, takenAt: at, until: at });
    assert.equal(await redis.exists(fixedKey), 0);
  });

  it("a refund keeps a lockout's block in the value, and the key until the block is forgotten", async () => {
    const app = store('app');
    const t = Date.UTC(2026, 0, 15, 12);
    const rule = tokenBucket({ limit: 2, period: '1m', block: { duration: '1h', forgetAfter: '1d' } });
    const buckets = app.bind('login', rule);
    const key = `${app.prefix}login:{k}`;
    await buckets.take('k', 1, t, undefined);
    await buckets.take('k', 1, t, undefined);
    assert.equal((await buckets.take('k', 1, t, undefined)).retryAfterMs, HOUR);
    const refunded = await ttlWindow(redis, key, () =>
      buckets.adjust('k', { delta: -1, now: t + MINUTE / 2, takenAt: t, until: t + MINUTE }),
    );
    assertTtl(refunded, HOUR + DAY - MINUTE / 2 + APP_SLACK, 'the block is remembered');
    assert.match((await redis.get(key))!, new RegExp(`\\|${t + HOUR}:${HOUR}$`), 'the block is kept');
    const still = await buckets.take('k', 0, t + MINUTE / 2, undefined);
    assert.deepEqual([still.allowed, still.retryAfterMs], [false, HOUR - MINUTE / 2]);
  });

  it('refuses what the script cannot count with before sending anything, naming the argument and never the value', async () => {
    // This client never connects: an argument error comes first, and nothing is sent.
    const idle = new Redis({ lazyConnect: true });
    try {
      const s = new RedisStore({ client: idle, prefix: `${prefixRoot}args:` });
      const buckets = s.bind('x', fixedWindow({ limit: 5, window: '1m' }));
      const bad: [unknown, unknown, unknown, unknown, unknown][] = [
        ['', -1, 0, 0, 0],
        [{ secret: 'key' }, -1, 0, 0, 0],
        ['k', 0.5, 0, 0, 0],
        ['k', Number.NaN, 0, 0, 0],
        ['k', MAX_COUNT + 1, 0, 0, 0],
        ['k', -MAX_COUNT - 1, 0, 0, 0],
        ['k', '-1', 0, 0, 0],
        ['k', -1, Number.NaN, 0, 0],
        ['k', -1, 0, Number.POSITIVE_INFINITY, 0],
        ['k', -1, 0, '123456789', 0],
        ['k', -1, 0, 0, Number.NEGATIVE_INFINITY],
        ['k', -1, 0, 0, '123456789'],
        ['k', -1, 0, 0, undefined],
      ];
      for (const [key, delta, now, takenAt, until] of bad) {
        await assert.rejects(
          buckets.adjust(key as string, {
            delta: delta as number,
            now: now as number,
            takenAt: takenAt as number,
            until: until as number,
          }),
          (e: unknown) =>
            isSluiceError(e, 'SLUICE_ARGUMENT') &&
            /^RedisStore: an? (key|adjustment)/.test((e as Error).message) &&
            !/secret|123456789/.test((e as Error).message),
        );
      }
      // Nothing to settle: no call at all, so even a client that is not ready resolves.
      await buckets.adjust('k', { delta: 0, now: 0, takenAt: 0, until: 0 });
      await assert.rejects(buckets.adjust('k', { delta: -1, now: 0, takenAt: 0, until: 0 }), (e: unknown) =>
        isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE'),
      );
      s.unbind('x');
      await assert.rejects(buckets.adjust('k', { delta: -1, now: 0, takenAt: 0, until: 0 }), (e: unknown) =>
        isSluiceError(e, 'SLUICE_CONFIG'),
      );
    } finally {
      idle.disconnect();
    }
  });
});
