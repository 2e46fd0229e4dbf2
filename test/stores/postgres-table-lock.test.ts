/**
 * PostgreSQL under a table lock, on a real server with a real `LOCK TABLE` held by a second
 * connection: decisions answered meanwhile by a failure policy (fail-open, insurance, a 503) are
 * never charged once the lock goes, whatever waited on it; and the store decides again as soon as
 * it is released. Bounded: a fixed number of takes, the lock held for a fixed time.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { skipUnlessReachable } from '../support/services.js';
import {
  dropSchema,
  postgresUrl,
  runSchema,
  testPool,
  waitForLockWaiters,
  waitOnServerClock,
} from '../support/postgres.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { calendarQuota, createLimiter, type FailurePolicy } from '../../src/index.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const silent = { warn() {} };
const LIMIT = 1_000_000;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

describe('PostgreSQL after a table lock', { skip }, () => {
  // The decisions' pool, and another for the lock and the test's own queries, which must not
  // queue behind statements waiting on the lock.
  let pool: pg.Pool;
  let admin: pg.Pool;
  const schema = runSchema('tablelock');
  before(async () => {
    pool = testPool({ max: 10 });
    admin = testPool({ max: 3 });
    await new PostgresStore({ client: admin, schema }).migrate();
  });
  after(async () => {
    await dropSchema(admin, schema);
    await pool.end();
    await admin.end();
  });

  for (const failure of ['open', 'insurance', 'closed'] as FailurePolicy[]) {
    it(`${failure}: nothing answered by the failure policy while the table was locked is charged when the lock goes`, async () => {
      const store = new PostgresStore({ client: pool, schema });
      const limiter = createLimiter({
        name: `lock-${failure}`,
        // A quota with room for everything counts exactly: what the row holds is what was charged.
        rule: calendarQuota({ limit: LIMIT }),
        store,
        failure,
        logger: silent,
      });
      const key = 'k';
      let byStore = 0;
      const count = (decision: { allowed: boolean; source: string }) => {
        if (decision.allowed && decision.source === 'store') byStore++;
      };
      // The first decision, once the pool has its connections (a busy machine may time it out).
      for (let i = 0; i < 100 && byStore === 0; i++) {
        const first = await limiter.take(key).catch(() => undefined);
        if (first?.source === 'store') count(first);
        else await sleep(50);
      }
      assert.equal(byStore, 1);
      const locker = await admin.connect();
      let answeredByPolicy = 0;
      try {
        await locker.query('BEGIN');
        await locker.query(`LOCK TABLE "${schema}".window_counters IN ACCESS EXCLUSIVE MODE`);
        // Takes arrive while the lock is held: every one waits on it past its deadline.
        const takes: Promise<void>[] = [];
        for (let round = 0; round < 12; round++) {
          for (let i = 0; i < 10; i++) {
            takes.push(
              limiter.take(key).then(
                (decision) => {
                  if (decision.source === 'store') count(decision);
                  else answeredByPolicy++;
                },
                () => {
                  answeredByPolicy++;
                },
              ),
            );
          }
          await sleep(100);
        }
        await waitForLockWaiters(admin, 1);
        await Promise.all(takes);
      } finally {
        await locker.query('COMMIT');
        locker.release();
      }
      assert.ok(answeredByPolicy > 0, 'the lock made takes time out');
      // Whatever still waited on the lock has run (or been dropped) by now.
      await waitOnServerClock(admin, 500);
      // The store decides again (a peek the failure policy answered says nothing of the row).
      let remaining: number | undefined;
      for (let i = 0; i < 100 && remaining === undefined; i++) {
        const peek = await limiter.peek(key).catch(() => undefined);
        if (peek?.source === 'store') remaining = peek.remaining;
        else await sleep(20);
      }
      assert.ok(remaining !== undefined, 'the store decides again once the lock is gone');
      const charged = LIMIT - remaining;
      assert.equal(
        charged,
        byStore,
        `charged exactly what the store answered as admitted (${answeredByPolicy} answered by the policy)`,
      );
    });
  }
});
