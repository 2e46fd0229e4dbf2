/**
 * PostgreSQL helpers for the store tests: a real server on loopback (never a mock), and a fresh
 * schema per test run (runId) so that concurrent runs never collide; dropped afterwards.
 */
import pg from 'pg';
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
