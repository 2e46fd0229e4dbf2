/**
 * Upgrading a PostgreSQL schema from before the window table keeps today's quota: per-day rows of
 * `quota_counters` are carried into `window_counters` (in the rule's own time zone when the rule
 * is bound before `migrate()`, in UTC days otherwise), so a client at its daily limit is still
 * refused on upgrade day. Real PostgreSQL, a schema of its own, the schema built as migration 004
 * left it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { calendarQuota, createLimiter, manualClock } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { postgresMigrations, schemaNames } from '../../src/stores/postgres/migrations.js';
import { bucketId } from '../../src/stores/shared/bucket-id.js';
import { skipUnlessReachable } from '../support/services.js';
import { dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);

/** Builds `schema` as migrations 001 to 004 left it, recorded as applied. */
async function schemaAt004(pool: pg.Pool, schema: string): Promise<void> {
  const n = schemaNames(schema);
  await pool.query(`CREATE SCHEMA ${n.schema}`);
  await pool.query(
    `CREATE TABLE ${n.migrations} (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  for (const migration of postgresMigrations({ schema })) {
    if (migration.name.slice(0, 3) > '004') break;
    for (const sql of migration.statements) await pool.query(sql);
    await pool.query(`INSERT INTO ${n.migrations} (name) VALUES ($1)`, [migration.name]);
  }
}

/** The local date of `ms` in `timeZone`, as PostgreSQL's date type reads it (YYYY-MM-DD). */
function localDate(ms: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(ms);
}

describe('PostgreSQL: quota rows counted before the window table survive the upgrade', { skip }, () => {
  let pool: pg.Pool;
  const schemas: string[] = [];

  before(() => {
    pool = testPool();
  });
  after(async () => {
    for (const schema of schemas) await dropSchema(pool, schema);
    await pool.end();
  });

  for (const timeZone of ['UTC', 'Pacific/Kiritimati', 'America/Adak'] as const) {
    it(`a client at its daily limit (${timeZone}) is still refused after migrate(), and migrating again changes nothing`, async () => {
      const schema = runSchema(`carry_${timeZone.replace(/\W/g, '').toLowerCase()}`);
      schemas.push(schema);
      await schemaAt004(pool, schema);
      const n = schemaNames(schema);
      const store = new PostgresStore({ client: pool, schema, timeSource: 'app' });
      const now = Date.now();
      const reports = createLimiter({
        name: 'reports',
        rule: calendarQuota({ limit: 3, timeZone }),
        store,
        clock: manualClock(now),
      });
      // The client used its 3 reports today (and some yesterday, spent), counted the old way.
      const today = localDate(now, timeZone);
      const yesterday = localDate(now - 86_400_000, timeZone);
      await pool.query(
        `INSERT INTO ${n.quotaCounters} (rule, bucket, day, count) VALUES ($1, $2, $3, 3), ($1, $2, $4, 2)`,
        ['reports', bucketId('acct'), today, yesterday],
      );
      const applied = await store.migrate();
      const refused = await reports.take('acct');
      assert.equal(refused.allowed, false, 'the day is spent');
      assert.equal(refused.remaining, 0);
      assert.equal((await reports.peek('other')).remaining, 3, 'another client has its quota');
      assert.ok(applied.includes('010_carry_quota_counters'));
      assert.deepEqual(await store.migrate(), []);
      // Today's row moved (a row of an older day may stay, spent, for prune).
      const left = await pool.query(`SELECT count(*)::int AS n FROM ${n.quotaCounters} WHERE day >= $1`, [
        today,
      ]);
      assert.equal(left.rows[0].n, 0);
      assert.equal((await reports.take('acct')).allowed, false);
    });
  }

  it('a database upgraded to the window table the same day adds both counts: 2 counted the old way and 1 since make the 3 of the day', async () => {
    const schema = runSchema('carry_sameday');
    schemas.push(schema);
    const n = schemaNames(schema);
    await pool.query(`CREATE SCHEMA ${n.schema}`);
    await pool.query(
      `CREATE TABLE ${n.migrations} (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    for (const migration of postgresMigrations({ schema })) {
      if (migration.name === '010_carry_quota_counters') continue;
      for (const sql of migration.statements) await pool.query(sql);
      await pool.query(`INSERT INTO ${n.migrations} (name) VALUES ($1)`, [migration.name]);
    }
    const now = Date.now();
    await pool.query(
      `INSERT INTO ${n.quotaCounters} (rule, bucket, day, count) VALUES ('reports', $1, $2, 2)`,
      [bucketId('acct'), localDate(now, 'UTC')],
    );
    // The rule is not bound when migrating: its rows count in UTC days, the quota's default.
    const upgraded = new PostgresStore({ client: pool, schema, timeSource: 'app' });
    const before = createLimiter({
      name: 'reports',
      rule: calendarQuota({ limit: 3 }),
      store: upgraded,
      clock: manualClock(now),
    });
    assert.equal((await before.take('acct')).remaining, 2, 'the window table alone knew nothing of the 2');
    assert.deepEqual(await new PostgresStore({ client: pool, schema }).migrate(), [
      '010_carry_quota_counters',
    ]);
    const refused = await before.take('acct');
    assert.deepEqual([refused.allowed, refused.remaining], [false, 0]);
  });
});
