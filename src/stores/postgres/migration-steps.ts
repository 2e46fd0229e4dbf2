import type { AccountSql, SchemaNames } from './schema-names.js';

/**
 * Each migration of the PostgreSQL store, one function each, in the order they run (see
 * `postgresMigrations`). Existing databases have run these texts: a migration's statements never
 * change once released; a change is a new migration.
 */

/** One migration: a stable name and the statements it runs, in order, in one transaction. */
export interface Migration {
  readonly name: string;
  readonly statements: readonly string[];
}

/** The token buckets, the per-day counters of calendar quotas and the functions they need. */
export function bucketsMigration(n: SchemaNames): Migration {
  return {
    name: '001_buckets',
    statements: [
      // COLLATE "C": byte order, the same order in which batches lock rows (no deadlocks), and
      // cheaper comparisons than a linguistic collation.
      `CREATE TABLE ${n.tokenBuckets} (
  rule text COLLATE "C" NOT NULL,
  bucket text COLLATE "C" NOT NULL,
  tat bigint NOT NULL,
  prev bigint,
  account_bucket text COLLATE "C",
  PRIMARY KEY (rule, bucket)
)`,
      `CREATE TABLE ${n.quotaCounters} (
  rule text COLLATE "C" NOT NULL,
  bucket text COLLATE "C" NOT NULL,
  day date NOT NULL,
  count bigint NOT NULL,
  prev bigint,
  account_bucket text COLLATE "C",
  PRIMARY KEY (rule, bucket, day)
)`,
      `CREATE INDEX quota_counters_day ON ${n.quotaCounters} (day)`,
      // The first instant of local date d in zone tz, exactly as src/core/calendar.ts finds it:
      // local midnight; on a day whose midnight repeats, the earlier one; when midnight is
      // skipped, the moment the clocks jump. PostgreSQL alone would take the later of a
      // repeated midnight, so both offsets around the date are tried, as calendar.ts does.
      `CREATE FUNCTION ${n.dayStart}(tz text, d date) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
  SELECT CASE
    WHEN e_ok AND l_ok THEN LEAST(e, l)
    WHEN l_ok AND NOT e_ok THEN l
    ELSE e
  END
  FROM (
    SELECT e, l,
      (e AT TIME ZONE tz) - (e AT TIME ZONE 'UTC') = ob AS e_ok,
      (l AT TIME ZONE tz) - (l AT TIME ZONE 'UTC') = oa AS l_ok
    FROM (
      SELECT (w - ob) AT TIME ZONE 'UTC' AS e, (w - oa) AT TIME ZONE 'UTC' AS l, ob, oa
      FROM (
        SELECT w,
          (((w - interval '1 day') AT TIME ZONE 'UTC') AT TIME ZONE tz) - (w - interval '1 day') AS ob,
          (((w + interval '1 day') AT TIME ZONE 'UTC') AT TIME ZONE tz) - (w + interval '1 day') AS oa
        FROM (SELECT d::timestamp AS w) a
      ) b
    ) c
  ) x
$fn$`,
      // Raised by the all-or-nothing statement when a row changed between its read and its
      // write; SQLSTATE 40001 (serialization_failure) tells the store to retry.
      `CREATE FUNCTION ${n.schema}.raise_retry() RETURNS bigint LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'sluice: bucket changed concurrently, retry' USING ERRCODE = '40001';
END
$fn$`,
    ],
  };
}

/** Makes the token-bucket table UNLOGGED (the `unloggedTokenBuckets` option). */
export function unloggedTokenBucketsMigration(n: SchemaNames): Migration {
  return {
    name: '002_unlogged_token_buckets',
    statements: [`ALTER TABLE ${n.tokenBuckets} SET UNLOGGED`],
  };
}

/** The account mapping to the users table `users`, and the links of bucket rows to it. */
export function accountBucketsMigration(n: SchemaNames, users: AccountSql): Migration {
  return {
    name: '003_account_buckets',
    statements: [
      // The only place a user id meets a bucket. Counter rows hold no user id; they
      // reference this mapping, which references the user: deleting the user cascades to
      // every mapping (every secret generation) and from there to every counter row.
      `CREATE TABLE ${n.accountBuckets} (
  bucket text COLLATE "C" PRIMARY KEY,
  user_id ${users.type} NOT NULL REFERENCES ${users.users} (${users.column}) ON DELETE CASCADE
)`,
      `CREATE INDEX account_rate_limit_buckets_user ON ${n.accountBuckets} (user_id)`,
      `ALTER TABLE ${n.tokenBuckets} ADD CONSTRAINT token_buckets_account FOREIGN KEY (account_bucket)
  REFERENCES ${n.accountBuckets} (bucket) ON DELETE CASCADE`,
      `ALTER TABLE ${n.quotaCounters} ADD CONSTRAINT quota_counters_account FOREIGN KEY (account_bucket)
  REFERENCES ${n.accountBuckets} (bucket) ON DELETE CASCADE`,
      // A cascading delete looks rows up by account_bucket; partial, since most rows are anonymous.
      `CREATE INDEX token_buckets_account ON ${n.tokenBuckets} (account_bucket) WHERE account_bucket IS NOT NULL`,
      `CREATE INDEX quota_counters_account ON ${n.quotaCounters} (account_bucket) WHERE account_bucket IS NOT NULL`,
    ],
  };
}

/** The deadline check every decision statement ends with. */
export function decisionDeadlineMigration(n: SchemaNames): Migration {
  return {
    name: '004_decision_deadline',
    statements: [
      // Every decision statement passes its answer through this check (see `beforeDeadline` in
      // sql-clock.ts): past its deadline it raises query_canceled, and the statement's writes roll
      // back, so a take already answered with the failure policy is never charged afterwards.
      `CREATE FUNCTION ${n.schema}.before_deadline(deadline timestamptz) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  IF clock_timestamp() > deadline THEN
    RAISE EXCEPTION 'sluice: decision past its deadline' USING ERRCODE = '57014';
  END IF;
  RETURN true;
END
$fn$`,
    ],
  };
}

/** The table of every rule that counts per window, and the check of calendar periods sent. */
export function windowCountersMigration(n: SchemaNames): Migration {
  return {
    name: '005_window_counters',
    statements: [
      // One row per rule and bucket, whatever the window: the state of the rules that count per
      // window (fixed and sliding windows, calendar quotas of any period), as the core keeps
      // it: the window's start (ms since the Unix epoch), its count, and the count of the window
      // before it (sliding windows). was_* keep the state a write replaced, so that RETURNING
      // reports the state that take saw. expires_at is the rule's horizon: from it on, forgetting
      // the row changes no decision, so prune() deletes it. Rows of quota_counters (per-day
      // quotas counted before this migration) are left in place and pruned as before.
      `CREATE TABLE ${n.windowCounters} (
  rule text COLLATE "C" NOT NULL,
  bucket text COLLATE "C" NOT NULL,
  window_start bigint NOT NULL,
  count bigint NOT NULL,
  previous bigint NOT NULL,
  expires_at bigint NOT NULL,
  was_start bigint,
  was_count bigint,
  was_previous bigint,
  account_bucket text COLLATE "C",
  PRIMARY KEY (rule, bucket)
)`,
      `CREATE INDEX window_counters_expiry ON ${n.windowCounters} (expires_at)`,
      // Calendar periods come from the application (computed by the core, exact in every zone),
      // as the four boundaries of the previous, current and next period around the time the
      // application expects. This returns the statement's time when those periods hold it, and
      // otherwise raises SQLSTATE SLB01 naming the store's time, so that the store sends the
      // periods around that time and tries again (a store clock far from the application's).
      `CREATE FUNCTION ${n.schema}.period_now(now_ms bigint, bounds bigint[]) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  IF now_ms < bounds[1] OR now_ms >= bounds[4] THEN
    RAISE EXCEPTION 'sluice: calendar periods sent do not hold the store time %', now_ms USING ERRCODE = 'SLB01';
  END IF;
  RETURN now_ms;
END
$fn$`,
    ],
  };
}

/** The links of window rows to the account mapping. */
export function accountWindowCountersMigration(n: SchemaNames): Migration {
  return {
    name: '006_account_window_counters',
    statements: [
      `ALTER TABLE ${n.windowCounters} ADD CONSTRAINT window_counters_account FOREIGN KEY (account_bucket)
  REFERENCES ${n.accountBuckets} (bucket) ON DELETE CASCADE`,
      `CREATE INDEX window_counters_account ON ${n.windowCounters} (account_bucket) WHERE account_bucket IS NOT NULL`,
    ],
  };
}

/** The lockout columns (see {@link lockoutColumns}) of both bucket tables. */
export function lockoutsMigration(n: SchemaNames): Migration {
  return {
    name: '007_lockouts',
    statements: [lockoutColumns(n.tokenBuckets), lockoutColumns(n.windowCounters)],
  };
}

/** The leases table (see lease-buckets.ts). */
export function leasesMigration(n: SchemaNames): Migration {
  return {
    name: '008_leases',
    statements: [
      `CREATE TABLE ${n.leases} (
  rule text COLLATE "C" NOT NULL,
  bucket text COLLATE "C" NOT NULL,
  ids text[] NOT NULL,
  expiries bigint[] NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (rule, bucket)
)`,
      `CREATE INDEX leases_expiry ON ${n.leases} (expires_at)`,
    ],
  };
}

/** The per-call tier columns of token buckets. */
export function tokenBucketTiersMigration(n: SchemaNames): Migration {
  return {
    name: '009_token_bucket_tiers',
    statements: [
      // A token bucket's state charged under a per-call tier (a plan's rate, period and burst
      // from data) keeps that tier's rate and tolerance beside its arrival time, which is then
      // scaled by that rate (see algorithms/token-bucket.ts). NULL is the rule's own parameters,
      // so every row written before reads as it did; nullable without a default, adding them
      // rewrites no row. was_* keep the tier a write replaced, as `prev` keeps the arrival time.
      `ALTER TABLE ${n.tokenBuckets}
  ADD COLUMN tier_rate bigint,
  ADD COLUMN tier_tolerance bigint,
  ADD COLUMN was_tier_rate bigint,
  ADD COLUMN was_tier_tolerance bigint`,
    ],
  };
}

/** The resets table: when a bucket was last reset, for refunds. */
export function bucketResetsMigration(n: SchemaNames): Migration {
  return {
    name: '011_bucket_resets',
    statements: [
      // A reset deletes a bucket's row and writes here when (ms since the Unix epoch, the
      // statement's time or the application's), so that a refund of a take made at or before it
      // gives nothing back: the reset gave the key a new bucket, which the old take never
      // charged. expires_at is the rule's refund horizon after the reset: from it on, a refund
      // of an old take gives nothing anyway, so prune() deletes the row.
      `CREATE TABLE ${n.resets} (
  rule text COLLATE "C" NOT NULL,
  bucket text COLLATE "C" NOT NULL,
  reset_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (rule, bucket)
)`,
      `CREATE INDEX bucket_resets_expiry ON ${n.resets} (expires_at)`,
    ],
  };
}

/**
 * A rule's lockout (its `block` option) lives in its bucket's row: `blocked_until` (ms since the
 * Unix epoch) and `block_ms` (the last block's length), 0 when never blocked, which is what every
 * row written before this migration reads as; with a constant default, adding them rewrites no
 * row. `was_*` keep the block a write replaced, as the other `was` columns do.
 */
function lockoutColumns(table: string): string {
  return `ALTER TABLE ${table}
  ADD COLUMN blocked_until bigint NOT NULL DEFAULT 0,
  ADD COLUMN block_ms bigint NOT NULL DEFAULT 0,
  ADD COLUMN was_blocked_until bigint,
  ADD COLUMN was_block_ms bigint`;
}
