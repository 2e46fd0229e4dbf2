/**
 * sluice/postgres: the PostgreSQL store. `pg` or `postgres` (postgres.js) is an optional
 * peer dependency: pass your own pool.
 *
 * @module sluice/postgres
 */
export {
  PostgresStore,
  type PostgresStoreOptions,
  type PostgresMigrateOptions,
  type PostgresWarmOptions,
  type PostgresPruneOptions,
  type PostgresPruneResult,
} from './store.js';
export { type AccountTakeOptions } from './accounts.js';
export { type TimeSource } from '../shared/time-source.js';
export { PostgresRuleBuckets, type AccountTakeResult } from './rule-buckets.js';
export {
  pgClient,
  postgresJsClient,
  toPostgresClient,
  type PostgresClient,
  type PostgresQueryable,
  type PostgresRow,
  type PgPoolLike,
  type PgPoolClientLike,
  type PostgresJsLike,
} from './client.js';
export {
  postgresMigrations,
  type Migration,
  type PostgresMigrationOptions,
  type UsersTableOptions,
} from './migrations.js';
export { type PostgresStoreError } from './errors.js';
export { DriverError } from '../shared/driver-error.js';
