import postgres from 'postgres';
import type pg from 'pg';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { storeConformance } from '../../src/testing/index.js';
import { skipUnlessReachable } from '../support/services.js';
import { createAppSchema, dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);

// The suite moves a manual clock, so these stores decide at the caller's `now` (timeSource: "app");
// postgres-store.test.ts proves the default server clock separately. Each driver gets its own
// fresh schema; the suite gives every test fresh rule names.
{
  const schema = runSchema('conf_pg');
  let pool: pg.Pool;
  storeConformance({
    name: 'postgres (pg)',
    skip,
    // A loaded 2-CPU CI box can take longer than the 100 ms default for 1,000 takes at once.
    timeout: '10s',
    async setup() {
      pool = testPool();
      await createAppSchema(pool, schema);
      await new PostgresStore({ client: pool, schema }).migrate();
    },
    create: async () => new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' }),
    async teardown() {
      await dropSchema(pool, schema);
      await pool.end();
    },
  });
}
{
  const schema = runSchema('conf_pgjs');
  let sql: postgres.Sql;
  storeConformance({
    name: 'postgres (postgres.js)',
    skip,
    // A loaded 2-CPU CI box can take longer than the 100 ms default for 1,000 takes at once.
    timeout: '10s',
    async setup() {
      sql = postgres(postgresUrl, { max: 20, onnotice: () => {} });
      await sql.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await new PostgresStore({ client: sql, schema }).migrate();
    },
    create: async () => new PostgresStore({ client: sql, schema, timeSource: 'app', timeout: '10s' }),
    async teardown() {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end();
    },
  });
}
