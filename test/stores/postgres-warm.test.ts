/**
 * `PostgresStore.warm()` on a real server: it opens the pool's connections and prepares every
 * bound rule's take statements on each, charging nothing, so the first decisions under load pay
 * for neither; on a schema that was never migrated it fails with the schema error.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { skipUnlessReachable } from '../support/services.js';
import { dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { calendarQuota, createLimiter, isSluiceError, tokenBucket } from '../../src/index.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const silent = { warn() {} };

describe('PostgresStore.warm', { skip }, () => {
  let admin: pg.Pool;
  const schema = runSchema('warm');
  before(async () => {
    admin = testPool({ max: 2 });
    await new PostgresStore({ client: admin, schema }).migrate();
  });
  after(async () => {
    await dropSchema(admin, schema);
    await admin.end();
  });

  it("opens the pool's connections and prepares every rule's take statements on each, charging nothing", async () => {
    const pool = testPool({ max: 4 });
    try {
      const store = new PostgresStore({ client: pool, schema });
      const bucket = createLimiter({
        name: 'warm-bucket',
        rule: tokenBucket({ limit: 5, period: '1m' }),
        store,
        logger: silent,
      });
      const quota = createLimiter({
        name: 'warm-quota',
        rule: calendarQuota({ limit: 5 }),
        store,
        logger: silent,
      });
      assert.equal(pool.totalCount, 0);
      await store.warm();
      assert.equal(pool.totalCount, 4, "the pool's max, read from the pg Pool");
      // Every connection has the statements prepared: hold all four at once and ask each.
      const held = await Promise.all(Array.from({ length: 4 }, () => pool.connect()));
      try {
        for (const connection of held) {
          const { rows } = await connection.query(
            `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE 'sluice\\_%'`,
          );
          // Two rules of two algorithms: single and batch each, and the token bucket's lean take.
          assert.equal(rows[0].n, 5);
        }
      } finally {
        for (const connection of held) connection.release();
      }
      const { rows } = await admin.query(
        `SELECT (SELECT count(*) FROM "${schema}".token_buckets)::int + (SELECT count(*) FROM "${schema}".window_counters)::int AS n`,
      );
      assert.equal(rows[0].n, 0, 'nothing was written');
      assert.equal((await bucket.take('k')).remaining, 4);
      assert.equal((await quota.take('k')).remaining, 4);
    } finally {
      await pool.end();
    }
  });

  it('takes a number of connections; a bad one is SLUICE_CONFIG naming the option', async () => {
    const pool = testPool({ max: 6 });
    try {
      const store = new PostgresStore({ client: pool, schema });
      createLimiter({ name: 'warm-n', rule: tokenBucket({ limit: 5, period: '1m' }), store, logger: silent });
      await store.warm({ connections: 2 });
      assert.equal(pool.totalCount, 2);
      for (const connections of [0, 1.5, '3', 1001]) {
        await assert.rejects(
          store.warm({ connections: connections as number }),
          (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && e.message.includes('warm connections'),
        );
      }
    } finally {
      await pool.end();
    }
  });

  it('fails with SLUICE_STORE_SCHEMA on a schema that was never migrated', async () => {
    const pool = testPool({ max: 2 });
    try {
      const store = new PostgresStore({ client: pool, schema: runSchema('warm_missing') });
      createLimiter({
        name: 'warm-missing',
        rule: tokenBucket({ limit: 5, period: '1m' }),
        store,
        logger: silent,
      });
      await assert.rejects(store.warm(), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_SCHEMA'));
    } finally {
      await pool.end();
    }
  });
});
