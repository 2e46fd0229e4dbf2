/**
 * sluice/postgres: the PostgreSQL store. `pg` or `postgres` (postgres.js) is an optional
 * peer dependency: pass your own pool.
 */
export {
  PostgresStore,
  type PostgresStoreOptions,
  type PostgresMigrateOptions,
  type PostgresPruneOptions,
  type PostgresPruneResult,
  type AccountTakeOptions,
} from './postgres-store.js';
export { PostgresRuleBuckets, type AccountTakeResult } from './postgres-rule-buckets.js';
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
} from './postgres-client.js';
export {
  postgresMigrations,
  type Migration,
  type PostgresMigrationOptions,
  type UsersTableOptions,
} from './migrations.js';
export { SCALED_EPOCH_MS, type ClockSource } from './statements.js';
export { type PostgresStoreError } from './postgres-errors.js';
export { DriverError } from '../shared/driver-error.js';
