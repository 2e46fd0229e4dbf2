import { quoteIdentifier, userIdType } from './identifier.js';

/** The resolved, quoted names the statements use. */
export interface SchemaNames {
  /** The quoted schema, e.g. `"sluice"`. */
  readonly schema: string;
  /** Quoted qualified tables. */
  readonly tokenBuckets: string;
  /** Per-day counters of calendar quotas, before window_counters (kept for pruning and erasure). */
  readonly quotaCounters: string;
  /** One row per bucket of every rule that counts per window: fixed, sliding, calendar. */
  readonly windowCounters: string;
  readonly accountBuckets: string;
  readonly dayStart: string;
  readonly migrations: string;
  /** One row per key of a lease group: the leases held (see lease-buckets.ts). */
  readonly leases: string;
  /** One row per bucket reset lately: when, so that a refund of an older take gives nothing. */
  readonly resets: string;
}

/** Quoted names of sluice's objects in `schema` (checked: see {@link quoteIdentifier}). */
export function schemaNames(schema: unknown = 'sluice'): SchemaNames {
  const s = quoteIdentifier(schema, 'PostgresStore schema');
  return {
    schema: s,
    tokenBuckets: `${s}.token_buckets`,
    quotaCounters: `${s}.quota_counters`,
    windowCounters: `${s}.window_counters`,
    accountBuckets: `${s}.account_rate_limit_buckets`,
    dayStart: `${s}.local_day_start`,
    migrations: `${s}.migrations`,
    leases: `${s}.leases`,
    resets: `${s}.bucket_resets`,
  };
}

/** Where the application's users live, for account erasure. */
export interface UsersTableOptions {
  /** The users table's schema. @default "public" */
  schema?: string;
  /** The users table. @default "users" */
  table?: string;
  /** Its primary-key column. @default "id" */
  column?: string;
  /** That column's SQL type: bigint, integer, int8, int4, uuid or text. @default "bigint" */
  type?: string;
}

/** The users table as the account statements and migrations name it (quoted, checked). */
export interface AccountSql {
  /** The qualified users table, e.g. `"public"."users"`. */
  readonly users: string;
  /** Its id column. */
  readonly column: string;
  /** Its id type, e.g. `bigint`. */
  readonly type: string;
}

/**
 * The quoted names of the `users` option (checked: see `quoteIdentifier` and `userIdType`); an
 * error names the option after `owner`, e.g. `PostgresStore users.table`.
 */
export function accountSqlOf(users: UsersTableOptions, owner: string): AccountSql {
  const option = (name: string) => `${owner}users.${name}`;
  return {
    users: `${quoteIdentifier(users.schema ?? 'public', option('schema'))}.${quoteIdentifier(users.table ?? 'users', option('table'))}`,
    column: quoteIdentifier(users.column ?? 'id', option('column')),
    type: userIdType(users.type ?? 'bigint', option('type')),
  };
}
