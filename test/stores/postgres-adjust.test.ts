/**
 * Refunds and settlements on PostgreSQL beyond the conformance suite, on both clients: a refund
 * once the take's window (or a bucket's refill) is over gives nothing back; on the store's own
 * clock a refund right after its take gives it back; account keys settle the user's row and
 * write nothing once the user is gone; a refund answered as timed out never applies afterwards.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import type pg from 'pg';
import {
  calendarQuota,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  slidingWindow,
  tokenBucket,
  type Limiter,
  type Receipt,
  type Rule,
} from '../../src/index.js';
import { PostgresStore, toPostgresClient, type PostgresClient } from '../../src/stores/postgres/index.js';
import { skipUnlessReachable } from '../support/services.js';
import {
  closeAppSchema,
  openAppSchema,
  postgresUrl,
  runSchema,
  waitForLockWaiters,
  waitOnServerClock,
} from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const schema = runSchema('adjust');
const users = { schema, table: 'users' };

describe('PostgreSQL refunds and settlements', { skip }, () => {
  let pool: pg.Pool;
  let sql: postgres.Sql;
  let counter = 0;
  const name = () => `a${++counter}`;

  before(async () => {
    pool = await openAppSchema(schema, users);
    sql = postgres(postgresUrl, { max: 5, onnotice: () => {} });
  });
  after(async () => {
    await sql.end();
    await closeAppSchema(pool, schema);
  });

  const clients = [
    { driver: 'pg', client: () => pool },
    { driver: 'postgres.js', client: () => sql },
  ] as const;

  const open = async (l: Limiter, key: string, cost = 1): Promise<Receipt> => {
    const { decision, receipt } = await l.takeWithReceipt(key, { cost });
    assert.equal(decision.allowed, true);
    assert.ok(receipt !== undefined);
    return receipt;
  };

  for (const { driver, client } of clients) {
    describe(driver, () => {
      it('a refund once the take no longer weighs gives nothing back, on every kind', async () => {
        const store = new PostgresStore({ client: client(), schema, timeSource: 'app', timeout: '10s' });
        const clock = manualClock(Date.UTC(2026, 0, 15, 23, 59, 30));
        const limiter = (rule: Rule) => createLimiter({ name: name(), rule, store, clock, timeout: '10s' });
        const fixed = limiter(fixedWindow({ limit: 5, window: '1m' }));
        const sliding = limiter(slidingWindow({ limit: 5, window: '1m' }));
        const daily = limiter(calendarQuota({ limit: 5 }));
        const bucket = limiter(tokenBucket({ limit: 6, period: '1m' }));
        const takes = [
          await open(fixed, 'k', 2),
          await open(sliding, 'k', 2),
          await open(daily, 'k', 2),
          await open(bucket, 'k', 2),
        ];
        // Two minutes on, past midnight: each take's window and the window after it are over,
        // the day is another, and the bucket refilled the two tokens 20 s after the take.
        clock.advance('2m');
        for (const l of [fixed, sliding, daily, bucket]) await open(l, 'k', 1);
        for (const [i, l] of [fixed, sliding, daily, bucket].entries()) await l.refund(takes[i] as Receipt);
        for (const l of [fixed, sliding, daily]) assert.equal((await l.peek('k')).remaining, 4, l.name);
        assert.equal((await bucket.peek('k')).remaining, 5, 'the bucket');
      });

      it("on the store's clock, a refund right after its take gives it back; a settlement charges the rest", async () => {
        const store = new PostgresStore({ client: client(), schema, timeout: '10s' });
        const limiter = (rule: Rule) => createLimiter({ name: name(), rule, store, timeout: '10s' });
        for (const l of [
          limiter(fixedWindow({ limit: 100, window: '1h' })),
          limiter(slidingWindow({ limit: 100, window: '1h' })),
        ]) {
          await l.refund(await open(l, 'k', 30));
          assert.equal((await l.peek('k')).remaining, 100, `${l.name}: refunded`);
          await l.settle(await open(l, 'k', 10), 40);
          assert.equal((await l.peek('k')).remaining, 60, `${l.name}: settled for 40`);
        }
        // A bucket gets back the take's units but the milliseconds between the application's
        // clock readings and the statements (never more): one token less may show, never more.
        const bucket = limiter(tokenBucket({ limit: 100, period: '1h' }));
        await bucket.refund(await open(bucket, 'k', 30));
        assert.ok((await bucket.peek('k')).remaining >= 99, 'refunded');
        await bucket.settle(await open(bucket, 'k', 10), 40);
        const settled = (await bucket.peek('k')).remaining;
        assert.ok(settled === 59 || settled === 60, `settled for 40: ${settled} left`);
      });
    });
  }

  it("an account key settles the user's row, and writes nothing once the user is gone", async () => {
    const store = new PostgresStore({ client: pool, schema, users, timeSource: 'app', timeout: '10s' });
    const clock = manualClock(Date.UTC(2026, 0, 15, 12));
    const quota = createLimiter({
      name: name(),
      rule: calendarQuota({ limit: 10 }),
      store,
      clock,
      timeout: '10s',
    });
    const id = 4242;
    await pool.query(`INSERT INTO "${schema}".users (id) VALUES ($1)`, [id]);
    const key = store.accountKey(id, 'account:v1:refunds');
    const row = async () =>
      (
        await pool.query(
          `SELECT count::float8 AS count, account_bucket FROM "${schema}".window_counters WHERE rule = $1 AND bucket = $2`,
          [quota.name, 'account:v1:refunds'],
        )
      ).rows[0] as { count: number; account_bucket: string | null } | undefined;
    await quota.refund(await open(quota, key, 4));
    await quota.settle(await open(quota, key, 1), 3);
    assert.deepEqual(await row(), { count: 3, account_bucket: 'account:v1:refunds' });
    const late = await open(quota, key, 2);
    await pool.query(`DELETE FROM "${schema}".users WHERE id = $1`, [id]);
    assert.equal(await row(), undefined, 'deleting the user erased the row');
    await quota.settle(late, 9);
    assert.equal(await row(), undefined, 'a settlement for a deleted user writes no row');
  });

  it('a refund answered as timed out is never applied when the row lock is released', async () => {
    const base = toPostgresClient(pool);
    let outstanding = 0;
    const counting: PostgresClient = {
      query(text, values, statement) {
        outstanding++;
        const settled = base.query(text, values, statement);
        settled.then(
          () => outstanding--,
          () => outstanding--,
        );
        return settled;
      },
      transaction: (fn) => base.transaction(fn),
    };
    const store = new PostgresStore({ client: counting, schema, timeout: '300ms' });
    const bucket = createLimiter({
      name: name(),
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store,
      timeout: '300ms',
    });
    const receipt = await open(bucket, 'k', 3);
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM "${schema}".token_buckets WHERE rule = $1 FOR UPDATE`, [
        bucket.name,
      ]);
      await assert.rejects(
        bucket.buckets.adjust('k', { delta: -3, now: Date.now(), takenAt: receipt.at, until: receipt.until }),
        (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT'),
      );
      await waitForLockWaiters(pool, 1);
      // Release the lock only once the refund's deadline has passed on the server's clock.
      await waitOnServerClock(pool, 300);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    for (let polls = 0; outstanding > 0 && polls < 1000; polls++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(outstanding, 0, 'the refund statement settled');
    assert.equal((await bucket.peek('k')).remaining, 2, 'the timed-out refund gave nothing back');
  });
});
