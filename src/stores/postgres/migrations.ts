import { carryQuotaCounters } from './carry-quota-counters.js';
import {
  accountBucketsMigration,
  accountWindowCountersMigration,
  bucketResetsMigration,
  bucketsMigration,
  decisionDeadlineMigration,
  leasesMigration,
  lockoutsMigration,
  tokenBucketTiersMigration,
  unloggedTokenBucketsMigration,
  windowCountersMigration,
  type Migration,
} from './migration-steps.js';
import { accountSqlOf, schemaNames, type UsersTableOptions } from './schema-names.js';

export type { Migration } from './migration-steps.js';
// Declared in the leaf both the statements and the migrations read; the entry, the server and
// the tests import them from here, where they always were.
export { schemaNames, type SchemaNames, type UsersTableOptions } from './schema-names.js';

/** Options of {@link postgresMigrations}. */
export interface PostgresMigrationOptions {
  /** The schema sluice's tables live in (created if missing). @default "sluice" */
  schema?: string;
  /**
   * The application's users table. When given, a second migration adds the account mapping
   * `account_rate_limit_buckets(bucket, user_id)` with ON DELETE CASCADE to it, and links account
   * rows to the mapping, so deleting a user removes every bucket of that account.
   * @default undefined — no account mapping
   */
  users?: UsersTableOptions;
  /**
   * Makes the token-bucket table UNLOGGED: no WAL for its writes, so a decision's commit does not
   * wait for a disk flush and a hot key is no longer bound by it. The price: after a crash (not a
   * clean restart) PostgreSQL empties the table, i.e. every token bucket is full again — what a
   * restart does to a memory store. Quota counters always stay logged. Can be switched later by
   * running `ALTER TABLE … SET LOGGED/UNLOGGED` yourself.
   * @default false
   */
  unloggedTokenBuckets?: boolean;
  /**
   * The time zone of each daily calendar quota, by rule name, for carrying the per-day rows
   * counted before migration 005 (`quota_counters`) into the window table: a rule's row of day d
   * counts in the period from d's start to the next day's start in its zone. A rule not named
   * counts in UTC days (the calendar quota's default). `PostgresStore#migrate()` fills it from the
   * rules bound to the store.
   * @default {}
   */
  quotaTimeZones?: Readonly<Record<string, string>>;
}

/**
 * The SQL migrations of the PostgreSQL store, for a given schema (and users table), in order.
 * `PostgresStore#migrate()` applies the missing ones; or run them with your own migration tool.
 *
 * @example
 * for (const m of postgresMigrations({ schema: 'sluice', users: { table: 'users' } }))
 *   writeFileSync(`migrations/${m.name}.sql`, m.statements.join(';\n') + ';\n');
 */
export function postgresMigrations(options: PostgresMigrationOptions = {}): Migration[] {
  const n = schemaNames(options.schema ?? 'sluice');
  const list = [bucketsMigration(n)];
  if (options.unloggedTokenBuckets === true) list.push(unloggedTokenBucketsMigration(n));
  // Checked before the time zones below, as it always was: the first bad option is the one named.
  const users = options.users === undefined ? undefined : accountSqlOf(options.users, '');
  if (users !== undefined) list.push(accountBucketsMigration(n, users));
  list.push(decisionDeadlineMigration(n), windowCountersMigration(n));
  if (users !== undefined) list.push(accountWindowCountersMigration(n));
  list.push(
    lockoutsMigration(n),
    leasesMigration(n),
    tokenBucketTiersMigration(n),
    carryQuotaCounters(n, options.quotaTimeZones ?? {}),
    bucketResetsMigration(n),
  );
  return list;
}
