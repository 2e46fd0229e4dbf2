/**
 * A burst on a healthy store is load, not a failure: one key, limit 100, default store options,
 * `failure: 'open'`, tens of thousands of takes in one tick on real Redis and real PostgreSQL.
 * Calls that time out in sluice's own queue or pipeline while the store keeps answering are
 * refused (SLUICE_STORE_OVERLOADED), never admitted as fail-open; the store admits at most the
 * limit. Bounded: each burst is one tick of takes, every one settles within the store's timeout
 * after its turn, and the test awaits them all.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { createLimiter, isSluiceError, tokenBucket, type Limiter, type Store } from '../../src/index.js';

const redisSkip = await skipUnlessReachable('redis', redisUrl);
const postgresSkip = await skipUnlessReachable('postgres', postgresUrl);
const silent = { warn() {} };

/** What a burst of `n` takes of one key in one tick came to. */
interface BurstOutcome {
  storeAdmitted: number;
  storeRefused: number;
  failOpen: number;
  overloaded: number;
  other: number;
}

async function burst(limiter: Limiter, key: string, n: number): Promise<BurstOutcome> {
  const takes: Promise<unknown>[] = new Array(n);
  for (let i = 0; i < n; i++) takes[i] = limiter.take(key);
  const outcome: BurstOutcome = { storeAdmitted: 0, storeRefused: 0, failOpen: 0, overloaded: 0, other: 0 };
  for (const settled of await Promise.allSettled(takes)) {
    if (settled.status === 'rejected') {
      if (isSluiceError(settled.reason, 'SLUICE_STORE_OVERLOADED')) outcome.overloaded++;
      else outcome.other++;
      continue;
    }
    const decision = settled.value as { allowed: boolean; source: string };
    if (decision.source === 'fail-open') outcome.failOpen++;
    else if (decision.allowed) outcome.storeAdmitted++;
    else outcome.storeRefused++;
  }
  return outcome;
}

/** Bursts of growing size on `store`, one fresh key each: nothing admitted beyond the limit. */
async function assertBurstsStayWithinTheLimit(
  store: Store,
  label: string,
  report: (line: string) => void,
): Promise<void> {
  const limiter = createLimiter({
    name: `burst-${label}`,
    rule: tokenBucket({ limit: 100, period: '1h' }),
    store,
    failure: 'open',
    logger: silent,
  });
  for (const n of [6_000, 20_000, 50_000]) {
    const outcome = await burst(limiter, `one-key-${n}`, n);
    const context = `${label}, ${n} takes: ${JSON.stringify(outcome)}, stats ${JSON.stringify(limiter.stats())}`;
    report(context);
    assert.equal(
      outcome.failOpen,
      0,
      `nothing is admitted as fail-open while the store answers (${context})`,
    );
    assert.ok(outcome.storeAdmitted <= 100, `the store admits at most the limit (${context})`);
    assert.equal(outcome.other, 0, `every take is decided or refused as overload (${context})`);
    assert.equal(
      outcome.storeAdmitted + outcome.storeRefused + outcome.overloaded,
      n,
      `every take settled (${context})`,
    );
    // The store kept answering: the breaker never opened.
    assert.equal(limiter.storeHealth().breaker, 'closed', context);
  }
  assert.equal(limiter.stats().failOpenAdmits, 0);
  assert.equal(limiter.stats().breakerOpenings, 0);
}

describe('a burst on a healthy Redis store is not a failure', { skip: redisSkip }, () => {
  let redis: Redis;
  const prefix = `sluice-test:${runId}:burst:`;
  before(async () => {
    redis = await ioredisClient(redisUrl);
  });
  after(async () => {
    await deleteKeys(redis, `${prefix}*`);
    await redis.quit();
  });

  it('one key, limit 100, up to 50,000 takes in one tick, failure open: at most 100 admitted, none fail-open', async (t) => {
    await assertBurstsStayWithinTheLimit(new RedisStore({ client: redis, prefix }), 'redis', (line) =>
      t.diagnostic(line),
    );
  });
});

describe('a burst on a healthy PostgreSQL store is not a failure', { skip: postgresSkip }, () => {
  let pool: pg.Pool;
  const schema = runSchema('burst');
  before(async () => {
    pool = testPool();
    await new PostgresStore({ client: pool, schema }).migrate();
  });
  after(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('one key, limit 100, up to 50,000 takes in one tick, failure open: at most 100 admitted, none fail-open', async (t) => {
    await assertBurstsStayWithinTheLimit(new PostgresStore({ client: pool, schema }), 'postgres', (line) =>
      t.diagnostic(line),
    );
  });
});
