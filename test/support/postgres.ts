/**
 * PostgreSQL helpers for the store tests: a real server on loopback (never a mock), and a fresh
 * schema per test run (runId) so that concurrent runs never collide; dropped afterwards.
 */
import pg from 'pg';
import { PostgresStore, type UsersTableOptions } from '../../src/stores/postgres/index.js';
import { postgresUrl, runId } from './services.js';

export { postgresUrl };

/** A schema name unique to this run and `label`. */
export function runSchema(label: string): string {
  return `sluice_test_${label}_${runId}`.toLowerCase();
}

/** A pg Pool on the test database. */
export function testPool(options: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: postgresUrl, max: 20, ...options });
  pool.on('error', () => {});
  return pool;
}

/** Creates `schema` with an application users table `users(id bigint primary key)`. */
export async function createAppSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".users (id bigint PRIMARY KEY)`);
}

/** Drops `schema` and everything in it. */
export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** Waits until `n` sessions wait for a lock (no sleeping on a guess: polls pg_locks). */
export async function waitForLockWaiters(pool: pg.Pool, n: number, app?: string): Promise<void> {
  for (let polls = 0; polls < 6000; polls++) {
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE NOT l.granted AND ($1::text IS NULL OR a.application_name = $1)`,
      [app ?? null],
    );
    if (rows[0].n >= n) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`fewer than ${n} sessions waited for a lock within the polls`);
}

/**
 * Waits until `ms` have passed on the server's clock (no sleeping on a guess: polls
 * `clock_timestamp()`), e.g. for a deadline a statement measures there to be over.
 */
export async function waitOnServerClock(pool: pg.Pool, ms: number): Promise<void> {
  const { rows } = await pool.query(`SELECT clock_timestamp() + $1::float8 * interval '1 millisecond' AS t`, [
    ms,
  ]);
  for (let polls = 0; polls < 1000; polls++) {
    const late = await pool.query(`SELECT clock_timestamp() > $1::timestamptz AS late`, [rows[0].t]);
    if (late.rows[0].late === true) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the server's clock did not pass ${ms} ms within the polls`);
}

/**
 * A pool on the test database, and `schema` holding the application's users table and sluice's
 * migrated tables (with the account mapping to `users`). Undo with {@link closeAppSchema}.
 */
export async function openAppSchema(schema: string, users: UsersTableOptions): Promise<pg.Pool> {
  const pool = testPool();
  await createAppSchema(pool, schema);
  await new PostgresStore({ client: pool, schema, users }).migrate();
  return pool;
}

/** Drops `schema` and closes `pool`. */
export async function closeAppSchema(pool: pg.Pool, schema: string): Promise<void> {
  await dropSchema(pool, schema);
  await pool.end();
}
