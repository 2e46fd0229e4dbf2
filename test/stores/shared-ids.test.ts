import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type pg from 'pg';
import type { Redis } from 'ioredis';
import {
  MemoryStore,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type Store,
} from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { MAX_RAW_KEY_LENGTH, bucketId } from '../../src/stores/shared/bucket-id.js';
import { postgresUrl, redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { dropSchema, runSchema, testPool } from '../support/postgres.js';

// Keys PostgreSQL cannot hold as they are (NUL, a surrogate pair), long keys that differ only in
// their last character, and short keys that look like a hashed id. (Keys with a lone surrogate
// never reach a store: the limiter refuses them.)
const oddKeys = [
  'k'.repeat(MAX_RAW_KEY_LENGTH + 1),
  'k'.repeat(MAX_RAW_KEY_LENGTH) + 'l',
  'k'.repeat(5000),
  'a\0b',
  'a\uD83D\uDE00',
  'a\uFFFD',
  `${'x'.repeat(200)}\uD83D\uDE00`,
  `${'x'.repeat(200)}\uFFFD`,
  'ip:203.0.113.7',
  '#'.repeat(MAX_RAW_KEY_LENGTH),
];

/** One take a key per hour under the rule name 'odd', on a manual clock. */
function oddLimiter(store: Store) {
  return createLimiter({
    name: 'odd',
    rule: tokenBucket({ limit: 1, period: '1h' }),
    store,
    clock: manualClock(0),
  });
}

describe('bucketId: one stored id for a key in every store', () => {
  it('keeps a short storable key as it is and hashes every other key to 129 characters', () => {
    assert.equal(bucketId('ip:203.0.113.7'), 'ip:203.0.113.7');
    assert.equal(bucketId('k'.repeat(MAX_RAW_KEY_LENGTH)), 'k'.repeat(MAX_RAW_KEY_LENGTH));
    for (const key of ['k'.repeat(MAX_RAW_KEY_LENGTH + 1), 'a\0b', 'a\uD800', '\uD83D\uDE00']) {
      assert.equal(bucketId(key).length, MAX_RAW_KEY_LENGTH + 1);
    }
  });

  it('maps distinct keys to distinct ids', () => {
    const ids = oddKeys.map(bucketId);
    assert.equal(new Set(ids).size, oddKeys.length);
  });

  it('never gives a hashed id that a raw key can have (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (key) => {
        const id = bucketId(key);
        if (id !== key) {
          assert.equal(id.length, MAX_RAW_KEY_LENGTH + 1);
          assert.doesNotMatch(id, /[\0\uD800-\uDFFF]/);
        } else {
          assert.ok(key.length <= MAX_RAW_KEY_LENGTH);
          assert.doesNotMatch(key, /[\0\uD800-\uDFFF]/);
        }
      }),
    );
  });

  it('the memory store keeps each odd key in a bucket of its own', async () => {
    const limiter = oddLimiter(new MemoryStore());
    for (const key of oddKeys) assert.equal((await limiter.take(key)).allowed, true);
    for (const key of oddKeys) assert.equal((await limiter.take(key)).allowed, false);
  });
});

const redisSkip = await skipUnlessReachable('redis', redisUrl);
const postgresSkip = await skipUnlessReachable('postgres', postgresUrl);

describe('the Redis store keys a bucket by its shared id', { skip: redisSkip }, () => {
  let redis: Redis;
  const prefix = `sluice-test:${runId}:ids:`;
  before(async () => {
    redis = await ioredisClient(redisUrl);
  });
  after(async () => {
    await deleteKeys(redis, `${prefix}*`);
    await redis.quit();
  });

  it('stores each odd key under <prefix><name>:{<bucketId>}', async () => {
    const store = new RedisStore({ client: redis, prefix, timeSource: 'app', timeout: '2s' });
    const limiter = oddLimiter(store);
    for (const key of oddKeys) assert.equal((await limiter.take(key)).allowed, true);
    for (const key of oddKeys) {
      assert.equal(await redis.exists(`${prefix}odd:{${bucketId(key)}}`), 1);
      assert.equal((await limiter.take(key)).allowed, false);
    }
  });
});

describe('the PostgreSQL store keys a bucket by its shared id', { skip: postgresSkip }, () => {
  let pool: pg.Pool;
  const schema = runSchema('ids');
  before(async () => {
    pool = testPool({ max: 4 });
    await new PostgresStore({ client: pool, schema }).migrate();
  });
  after(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('stores each odd key in the row of its bucketId', async () => {
    const store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
    const limiter = oddLimiter(store);
    for (const key of oddKeys) assert.equal((await limiter.take(key)).allowed, true);
    const { rows } = await pool.query<{ bucket: string }>(
      `SELECT bucket FROM "${schema}".token_buckets WHERE rule = 'odd'`,
    );
    assert.deepEqual(rows.map((r) => r.bucket).sort(), oddKeys.map(bucketId).sort());
  });
});

describe('one rule-name check for the limiter and every store', { skip: redisSkip || postgresSkip }, () => {
  let redis: Redis;
  let pool: pg.Pool;
  before(async () => {
    redis = await ioredisClient(redisUrl);
    pool = testPool({ max: 1 });
  });
  after(async () => {
    await redis.quit();
    await pool.end();
  });

  /** Whether each place accepts `name`; a refusal must be SLUICE_CONFIG without the name. */
  function acceptance(name: string): boolean[] {
    const rule = tokenBucket({ limit: 1, period: '1h' });
    const places: Array<() => unknown> = [
      () => createLimiter({ name, rule, store: new MemoryStore() }),
      () => new MemoryStore().bind(name, rule),
      () => new RedisStore({ client: redis, timeout: '2s' }).bind(name, rule),
      () => new PostgresStore({ client: pool, timeout: '2s' }).bind(name, rule),
    ];
    return places.map((place) => {
      try {
        place();
        return true;
      } catch (error) {
        assert.ok(isSluiceError(error, 'SLUICE_CONFIG'), String(error));
        if (name.length > 2)
          assert.ok(!(error as Error).message.includes(name), 'the message repeats the name');
        return false;
      }
    });
  }

  it('accepts and refuses the same names everywhere', () => {
    const names = [
      'login',
      'a',
      'api.v1:burst_2-x',
      'x'.repeat(64),
      'x'.repeat(65),
      '',
      'a{b}',
      'two words',
      'é',
      'a\0',
    ];
    const accepted = names.filter((name) => {
      const seen = acceptance(name);
      assert.equal(new Set(seen).size, 1, JSON.stringify(name));
      return seen[0];
    });
    assert.deepEqual(accepted, names.slice(0, 4));
    fc.assert(
      fc.property(fc.string({ maxLength: 70 }), (name) => {
        assert.equal(new Set(acceptance(name)).size, 1);
      }),
      { numRuns: 300 },
    );
  });
});
