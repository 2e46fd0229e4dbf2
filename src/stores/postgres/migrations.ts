import { optionError } from '../../core/errors.js';
import { checkRuleName } from '../shared/rule-name.js';
import { quoteIdentifier, userIdType } from './identifier.js';
import { leasesMigration } from './lease-buckets.js';

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

/** One migration: a stable name and the statements it runs, in order, in one transaction. */
export interface Migration {
  readonly name: string;
  readonly statements: readonly string[];
}

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
  /** One row per key of a lease group: the leases held (see leases.ts). */
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
  const list: Migration[] = [
    {
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
    },
  ];
  if (options.unloggedTokenBuckets === true) {
    list.push({
      name: '002_unlogged_token_buckets',
      statements: [`ALTER TABLE ${n.tokenBuckets} SET UNLOGGED`],
    });
  }
  if (options.users !== undefined) {
    const u = options.users;
    const users = `${quoteIdentifier(u.schema ?? 'public', 'users.schema')}.${quoteIdentifier(u.table ?? 'users', 'users.table')}`;
    const column = quoteIdentifier(u.column ?? 'id', 'users.column');
    const type = userIdType(u.type ?? 'bigint', 'users.type');
    list.push({
      name: '003_account_buckets',
      statements: [
        // The only place a user id meets a bucket. Counter rows hold no user id; they
        // reference this mapping, which references the user: deleting the user cascades to
        // every mapping (every secret generation) and from there to every counter row.
        `CREATE TABLE ${n.accountBuckets} (
  bucket text COLLATE "C" PRIMARY KEY,
  user_id ${type} NOT NULL REFERENCES ${users} (${column}) ON DELETE CASCADE
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
    });
  }
  list.push({
    name: '004_decision_deadline',
    statements: [
      // Every decision statement passes its answer through this check (see statements.ts):
      // past its deadline it raises query_canceled, and the statement's writes roll back, so a
      // take already answered with the failure policy is never charged afterwards.
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
  });
  list.push({
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
  });
  if (options.users !== undefined) {
    list.push({
      name: '006_account_window_counters',
      statements: [
        `ALTER TABLE ${n.windowCounters} ADD CONSTRAINT window_counters_account FOREIGN KEY (account_bucket)
  REFERENCES ${n.accountBuckets} (bucket) ON DELETE CASCADE`,
        `CREATE INDEX window_counters_account ON ${n.windowCounters} (account_bucket) WHERE account_bucket IS NOT NULL`,
      ],
    });
  }
  list.push({
    name: '007_lockouts',
    statements: [lockoutColumns(n.tokenBuckets), lockoutColumns(n.windowCounters)],
  });
  list.push(leasesMigration(n));
  list.push({
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
  });
  list.push(carryQuotaCounters(n, options.quotaTimeZones ?? {}));
  list.push({
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
  });
  return list;
}

/** What a time zone name may hold: an IANA name ("America/Argentina/Buenos_Aires", "Etc/GMT+5"). */
const timeZonePattern = /^[A-Za-z0-9_+\-/]{1,64}$/;

/**
 * Migration 005 moved every rule that counts per window to `window_counters` but left the per-day
 * rows of `quota_counters` unread, so a client at its daily limit got a fresh quota on upgrade
 * day. This moves those rows over: each row of a day not before yesterday in UTC (every zone's
 * today is among them; older days are spent in every zone and stay for prune) is deleted from
 * `quota_counters` and its bucket's latest day written as the window from that day's start to the
 * next day's start in the rule's zone, added to what the bucket counted since the upgrade in the
 * same day. Moving rather than copying makes the statement idempotent: run again, it finds nothing.
 */
function carryQuotaCounters(n: SchemaNames, zones: Readonly<Record<string, string>>): Migration {
  if (typeof zones !== 'object' || zones === null || Array.isArray(zones))
    throw optionError('postgresMigrations quotaTimeZones', 'an object of rule names to time zone names');
  const rows: string[] = [];
  for (const [rule, zone] of Object.entries(zones)) {
    checkRuleName(rule, 'postgresMigrations quotaTimeZones rule name');
    if (typeof zone !== 'string' || !timeZonePattern.test(zone))
      throw optionError('postgresMigrations quotaTimeZones zone', 'an IANA time zone name');
    // Both are checked against patterns without quotes or backslashes: safe as literals.
    rows.push(`('${rule}', '${zone}')`);
  }
  const zoneRows =
    rows.length === 0
      ? 'SELECT NULL::text AS rule, NULL::text AS tz WHERE false'
      : `VALUES ${rows.join(', ')}`;
  const ms = (t: string) => `floor(extract(epoch FROM ${t}) * 1000)::bigint`;
  return {
    name: '010_carry_quota_counters',
    statements: [
      `WITH zones (rule, tz) AS (${zoneRows}),
moved AS (
  DELETE FROM ${n.quotaCounters}
  WHERE day >= (statement_timestamp() AT TIME ZONE 'UTC')::date - 1
  RETURNING rule, bucket, day, count, account_bucket
),
latest AS (
  SELECT DISTINCT ON (m.rule, m.bucket) m.rule, m.bucket, m.count, m.account_bucket,
    ${ms(`${n.dayStart}(COALESCE(z.tz, 'UTC'), m.day)`)} AS start_ms,
    ${ms(`${n.dayStart}(COALESCE(z.tz, 'UTC'), m.day + 1)`)} AS end_ms
  FROM moved m LEFT JOIN zones z ON z.rule = m.rule
  ORDER BY m.rule, m.bucket, m.day DESC
)
INSERT INTO ${n.windowCounters} AS w (rule, bucket, window_start, count, previous, expires_at, account_bucket)
SELECT rule, bucket, start_ms, count, 0, end_ms, account_bucket FROM latest
ON CONFLICT (rule, bucket) DO UPDATE SET
  count = CASE WHEN w.window_start = EXCLUDED.window_start THEN w.count + EXCLUDED.count
    WHEN w.window_start < EXCLUDED.window_start THEN EXCLUDED.count ELSE w.count END,
  previous = CASE WHEN w.window_start < EXCLUDED.window_start THEN 0 ELSE w.previous END,
  window_start = GREATEST(w.window_start, EXCLUDED.window_start),
  expires_at = GREATEST(w.expires_at, EXCLUDED.expires_at)`,
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
