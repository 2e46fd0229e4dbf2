import { createHash } from 'node:crypto';
import { MAX_COUNT } from '../../core/bounds.js';
import type { SchemaNames } from './migrations.js';
import type { TimeSource } from '../shared/time-source.js';
import { accountCtes as accountCtesOf, type AccountSql } from './account-statements.js';

/**
 * The SQL of the PostgreSQL store. Each decision (or batch of decisions on one rule) is one
 * statement: read the bucket from the statement's snapshot, and only when that read says the
 * take charges, upsert it (INSERT … ON CONFLICT … DO UPDATE). The upsert locks the current row
 * version and recomputes the new state from it, so concurrent takes serialise on the row (exact under concurrency);
 * it also stores the state it replaced (`prev`), so RETURNING reports the state this take
 * actually saw. Refusals and peeks write nothing: a flooded key costs reads, not row locks and
 * WAL flushes.
 *
 * Statements return the state before the take(s): queued scaled time (token bucket) or the
 * count used today (quota), one row per bucket, named by `bucket`, in no particular order (the
 * written rows straight from RETURNING, the others from the snapshot: no join back, no sort). The decision itself is then computed by the same core code the
 * memory store runs, so numbers agree exactly.
 *
 * A batch holds distinct buckets of one rule, each with `n` takes of one cost; the closed forms
 * below equal `n` sequential takes. Rows are locked in "C" order of the bucket, the order every
 * multi-row write uses, so two batches cannot deadlock.
 *
 * Every read of a bucket is a LATERAL subquery probing the primary key. With a plain join the
 * planner may hash-join against every row of the rule when its statistics are stale, as they are
 * while the table grows; each statement then cost time in proportion to the table, and a bench
 * on 100,000 keys slowed to a quarter (docs/postgres.md). A lateral probe cannot become a scan.
 */

/** Origin of scaled time: 2025-01-01T00:00:00Z. Fixed, so every node scales time alike. */
export const SCALED_EPOCH_MS = 1_735_689_600_000;

/** One statement: its text and the name it is prepared under. */
export interface Statement {
  readonly text: string;
  readonly name: string;
}

/** Statements of one kind of rule. */
export interface RuleStatements {
  readonly batch: Statement;
  /**
   * The batch statement for one bucket: the same parameters as scalars instead of arrays. Its
   * plan has no array of unknown length, so PostgreSQL settles on a cached generic plan instead
   * of planning every execution (planning cost more than executing a lone take).
   */
  readonly single: Statement;
  readonly account: Statement | undefined;
  readonly reset: Statement;
}

function statement(text: string): Statement {
  return { text, name: `sluice_${createHash('sha256').update(text).digest('base64url').slice(0, 20)}` };
}

const serverNow = `floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint`;

/**
 * The check every statement makes once its writes are done: true while the statement is within
 * its deadline (`statement_timestamp()` + the time left when it was sent, parameter `param`),
 * otherwise `before_deadline` raises query_canceled (57014) and the whole statement, its writes
 * included, rolls back. A take that waited on a row lock past its deadline, and was answered
 * with the failure policy, is never charged when the lock is released.
 */
function beforeDeadline(schema: string, param: number): string {
  return `${schema}.before_deadline(statement_timestamp() + $${param}::float8 * interval '1 millisecond')`;
}

/** The local date of instant `ms` in zone `tz` (float8 × 1 ms is exact for whole ms below 2^53 µs). */
function localDate(ms: string, tz: string): string {
  return `((timestamptz 'epoch' + ${ms}::float8 * interval '1 millisecond') AT TIME ZONE ${tz})::date`;
}

/** A timestamptz as whole ms since the Unix epoch. */
function epochMs(ts: string): string {
  return `floor(extract(epoch FROM ${ts}) * 1000)::bigint`;
}

interface Shape {
  readonly table: string;
  /** The `p` CTE: per-statement values (scaled now, or today's date and reset). */
  readonly prelude: string;
  /**
   * `unnest(…)` source of a batch: bucket, cost, n[, quota]. Its `LIMIT cardinality(…)`
   * keeps every row, but a generic plan then estimates one row instead of ten, so PostgreSQL
   * keeps the cached generic plan (primary-key probes in a nested loop) rather than planning
   * every batch anew: planning a custom plan cost more than executing a batch of a few keys.
   */
  readonly batchSource: string;
  /** The same columns from scalar parameters (one bucket). */
  readonly singleSource: string;
  /** The account take's single row, given `f.session`. */
  readonly accountSource: string;
  readonly stateColumn: string;
  /** Extra columns of `s`, computed once per row. */
  readonly extra: string;
  /**
   * The lateral probe of a bucket's row, a primary-key lookup, as `t`; `t.<stateColumn>` is its
   * state. A quota probes the latest day not before today (a clock stepped back keeps counting
   * on the latest stored day, never on an earlier one).
   */
  readonly probe: string;
  /** Extra columns RETURNING gives from a written row (the quota's day). */
  readonly returning: string;
  readonly keyColumns: string;
  readonly keyValues: string;
  /** Whether the snapshot's state says this take charges. */
  readonly writes: string;
  /** The new state from the old one (SQL expression of `old`; NULL = never seen). */
  next(old: string): string;
  /** Output columns, from the state the take saw (`pre`) and, for a quota, its day. */
  output(pre: string, day: string): string;
  /** Parameter numbers of the account take: account bucket, anon bucket, user id. */
  readonly accountParams: readonly [number, number, number];
  readonly nowParam: { batch: number; account: number };
}

function build(
  shape: Shape,
  timeSource: TimeSource,
  account: AccountSql | undefined,
  names: SchemaNames,
): RuleStatements {
  const { schema } = names;
  const make = (source: string, nowParam: number, withAccount: boolean): Statement => {
    const now = timeSource === 'store' ? serverNow : `$${nowParam}::bigint`;
    const onTime = beforeDeadline(schema, timeSource === 'store' ? nowParam : nowParam + 1);
    const [acct, , user] = shape.accountParams;
    const accountCtes = withAccount && account !== undefined ? accountCtesOf(account, names, acct, user) : '';
    return statement(`WITH p AS (${shape.prelude.replaceAll('NOW', now)}),
${accountCtes}i AS (${source}),
s AS (
  SELECT i.*, p.*, t.${shape.stateColumn} AS old${shape.extra}
  FROM i CROSS JOIN p
  LEFT JOIN LATERAL (${shape.probe}) t ON true
),
w AS (
  INSERT INTO ${shape.table} AS t (${shape.keyColumns}, ${shape.stateColumn}, prev, account_bucket)
  SELECT ${shape.keyValues}, ${shape.next('NULL')}, NULL, s.account FROM s
  WHERE ${shape.writes}
  ORDER BY s.bucket COLLATE "C"
  ON CONFLICT (${shape.keyColumns}) DO UPDATE SET
    prev = t.${shape.stateColumn},
    ${shape.stateColumn} = (SELECT ${shape.next(`t.${shape.stateColumn}`)} FROM s WHERE s.bucket = excluded.bucket),
    account_bucket = COALESCE(t.account_bucket, excluded.account_bucket)
  RETURNING t.bucket, t.prev${shape.returning}
),
-- Checked once, after every write (counting w runs it to the end), before any answer row.
c AS (SELECT ${onTime} AS on_time FROM (SELECT count(*) FROM w) x)
SELECT w.bucket, ${shape.output('w.prev', 'w.day')}${withAccount ? ', f.session' : ''}
FROM c CROSS JOIN w CROSS JOIN p AS s${withAccount ? ' CROSS JOIN f' : ''}
WHERE c.on_time
UNION ALL
SELECT s.bucket, ${shape.output('s.old', 's.d')}${withAccount ? ', f.session' : ''}
FROM c CROSS JOIN s${withAccount ? ' CROSS JOIN f' : ''}
WHERE c.on_time AND (${shape.writes}) IS NOT TRUE`);
  };
  return {
    batch: make(shape.batchSource, shape.nowParam.batch, false),
    single: make(shape.singleSource, shape.nowParam.batch, false),
    account: account === undefined ? undefined : make(shape.accountSource, shape.nowParam.account, true),
    reset: statement(`DELETE FROM ${shape.table} WHERE rule = $1 AND bucket = $2`),
  };
}

/**
 * Token bucket (GCRA in scaled integer time, as src/core/gcra.ts; units reduced by the gcd of
 * limit and period). Batch parameters: $1 rule, $2 rate (scaled units per ms), $3 unit (units per
 * token), $4 tolerance (burst × unit), $5 penalty, $6 buckets, $7 costs, $8 counts[, $9 now].
 * Account: $6 account bucket, $7 cost, $8 anon bucket, $9 user id[, $10 now].
 * Returns `q`: scaled time queued ahead of now before the take(s), in reduced units.
 */
export function tokenBucketStatements(
  names: SchemaNames,
  timeSource: TimeSource,
  account: AccountSql | undefined,
): RuleStatements {
  const q = (old: string) => `(GREATEST(${old}, s.sn) - s.sn)`;
  return build(
    {
      table: names.tokenBuckets,
      prelude: `SELECT (NOW - ${SCALED_EPOCH_MS}) * $2::bigint AS sn`,
      batchSource: `SELECT x.bucket, x.cost, x.n, NULL::text AS account
  FROM unnest($6::text[], $7::bigint[], $8::bigint[]) AS x(bucket, cost, n)
  LIMIT cardinality($6::text[])`,
      singleSource: `SELECT $6::text AS bucket, $7::bigint AS cost, $8::bigint AS n, NULL::text AS account`,
      accountSource: `SELECT CASE WHEN f.session THEN $6::text ELSE COALESCE($8::text, $6::text) END AS bucket,
    CASE WHEN f.session OR $8::text IS NOT NULL THEN $7::bigint ELSE 0 END AS cost,
    1::bigint AS n, CASE WHEN f.session THEN $6::text END AS account
  FROM f`,
      stateColumn: 'tat',
      // A cost above the burst is refused whatever the state; capped at burst + 1 tokens, its
      // scaled size stays within the burst's (which the core keeps below 2^53), so no cost
      // can overflow a bigint here.
      extra: `, LEAST(GREATEST(i.cost, 1), $4::bigint / $3::bigint + 1) * $3::bigint AS cu`,
      probe: `SELECT t.tat FROM ${names.tokenBuckets} t WHERE t.rule = $1::text AND t.bucket = i.bucket LIMIT 1`,
      returning: '',
      keyColumns: 'rule, bucket',
      keyValues: '$1::text, s.bucket',
      // Charges when it is a take (not a peek), could ever fit (cost <= burst), and fits now
      // or the rule charges refusals.
      writes: `s.cost > 0 AND s.cu <= $4::bigint AND ($5::boolean OR ${q('s.old')} + s.cu <= $4::bigint)`,
      next: (old) => `s.sn + CASE
      WHEN $5::boolean THEN LEAST(${q(old)} + s.n::numeric * s.cu, 2 * $4::bigint)::bigint
      WHEN ${q(old)} + s.cu <= $4::bigint THEN ${q(old)} + LEAST(s.n, ($4::bigint - ${q(old)}) / s.cu) * s.cu
      ELSE ${q(old)} END`,
      output: (pre) => `${q(pre)}::float8 AS q`,
      accountParams: [6, 8, 9],
      nowParam: { batch: 9, account: 10 },
    },
    timeSource,
    account,
    names,
  );
}

/**
 * Calendar quota: one row per bucket and local day of the rule's time zone, the day and its end
 * computed by PostgreSQL (see `local_day_start` in the migrations). Batch parameters: $1 rule,
 * $2 time zone, $3 penalty, $4 buckets, $5 costs, $6 counts, $7 limits[, $8 now], then the time
 * left. Account: $4 account bucket, $5 cost, $6 limit, $7 anon bucket, $8 user id[, $9 now],
 * then the time left.
 * Returns `used` (the count before the take(s)), `reset_ms` (ms to the end of the counted day)
 * and `window_ms` (that day's length).
 *
 * A take counts on the latest stored day that is not before today: today, or a later day when
 * the clock stepped back across midnight (a server clock corrected, or a caller's clock moved
 * back). A window never moves backwards: counting a take on an earlier day than one already
 * counted would let a clock step buy a second day's quota.
 */
export function calendarQuotaStatements(
  names: SchemaNames,
  timeSource: TimeSource,
  account: AccountSql | undefined,
): RuleStatements {
  const left = (old: string) => `GREATEST(s.quota - COALESCE(${old}, 0), 0)`;
  const dayEnd = (day: string) => epochMs(`${names.dayStart}($2::text, ${day} + 1)`);
  // The counted day's bounds: today's from the prelude, a later day's computed here (rare).
  const reset = (day: string) =>
    `CASE WHEN ${day} > s.today THEN ${dayEnd(day)} - s.now_ms ELSE s.today_reset_ms END`;
  const window = (day: string) =>
    `CASE WHEN ${day} > s.today THEN ${dayEnd(day)} - ${epochMs(`${names.dayStart}($2::text, ${day})`)} ELSE s.today_window_ms END`;
  return build(
    {
      table: names.quotaCounters,
      // float8 × 1 ms is exact here: whole milliseconds up to 2^53 µs.
      prelude: `SELECT b.now_ms, b.today, e.end_ms - b.now_ms AS today_reset_ms, e.end_ms - e.start_ms AS today_window_ms
  FROM (
    SELECT a.now_ms, ${localDate('a.now_ms', '$2::text')} AS today
    FROM (SELECT NOW AS now_ms) a
  ) b
  CROSS JOIN LATERAL (
    SELECT ${epochMs(`${names.dayStart}($2::text, b.today)`)} AS start_ms, ${epochMs(`${names.dayStart}($2::text, b.today + 1)`)} AS end_ms
  ) e`,
      batchSource: `SELECT x.bucket, x.cost, x.n, x.quota, NULL::text AS account
  FROM unnest($4::text[], $5::bigint[], $6::bigint[], $7::bigint[]) AS x(bucket, cost, n, quota)
  LIMIT cardinality($4::text[])`,
      singleSource: `SELECT $4::text AS bucket, $5::bigint AS cost, $6::bigint AS n, $7::bigint AS quota, NULL::text AS account`,
      accountSource: `SELECT CASE WHEN f.session THEN $4::text ELSE COALESCE($7::text, $4::text) END AS bucket,
    CASE WHEN f.session OR $7::text IS NOT NULL THEN $5::bigint ELSE 0 END AS cost,
    1::bigint AS n, $6::bigint AS quota, CASE WHEN f.session THEN $4::text END AS account
  FROM f`,
      stateColumn: 'count',
      extra: ', COALESCE(t.day, p.today) AS d',
      probe: `SELECT t.count, t.day FROM ${names.quotaCounters} t
    WHERE t.rule = $1::text AND t.bucket = i.bucket AND t.day >= p.today ORDER BY t.day DESC LIMIT 1`,
      returning: ', t.day',
      keyColumns: 'rule, bucket, day',
      keyValues: '$1::text, s.bucket, s.d',
      writes: `s.cost > 0 AND s.cost <= s.quota AND ($3::boolean OR s.cost <= ${left('s.old')})`,
      // Refusals counted under a penalty stop adding at MAX_COUNT: any count at or above the
      // largest limit refuses alike, and the sum can then never overflow.
      next: (old) => `COALESCE(${old}, 0) + CASE
      WHEN $3::boolean THEN LEAST(s.n::numeric * s.cost, ${MAX_COUNT} - LEAST(COALESCE(${old}, 0), ${MAX_COUNT}))::bigint
      ELSE LEAST(s.n, ${left(old)} / s.cost) * s.cost END`,
      output: (pre, day) =>
        `COALESCE(${pre}, 0)::float8 AS used, (${reset(day)})::float8 AS reset_ms, (${window(day)})::float8 AS window_ms`,
      accountParams: [4, 7, 8],
      nowParam: { batch: 8, account: 9 },
    },
    timeSource,
    account,
    names,
  );
}

/**
 * All or nothing in one statement: lock the existing rows of every entry (FOR UPDATE returns
 * their latest versions, in "C" order), decide every entry from them, and write only when all
 * admit. A row that was missing when read but inserted concurrently before the write would be
 * overwritten from a stale state; the write checks that the row still holds what was read
 * (`prev`) and otherwise raises serialization_failure (40001), and the store retries.
 *
 * Token entries: $1 ord, $2 rule, $3 bucket, $4 cost, $5 rate, $6 unit, $7 tolerance. Quota
 * entries: $8 ord, $9 rule, $10 bucket, $11 cost, $12 limit, $13 time zone. [$14 now], then the
 * time left. Returns one row per entry: ord, and the state before (as the batch statements).
 * A quota entry counts on its latest stored day not before today, as the batch statements do.
 */
export function takeAllStatement(names: SchemaNames, timeSource: TimeSource): Statement {
  const now = timeSource === 'store' ? serverNow : `$14::bigint`;
  const onTime = beforeDeadline(names.schema, timeSource === 'store' ? 14 : 15);
  const T = names.tokenBuckets;
  const Q = names.quotaCounters;
  const dayMs = (day: string) => epochMs(`${names.dayStart}(y.tz, ${day})`);
  return statement(`WITH n AS (SELECT ${now} AS now_ms),
te AS (
  SELECT x.*, (n.now_ms - ${SCALED_EPOCH_MS}) * x.rate AS sn,
    LEAST(GREATEST(x.cost, 1), x.tol / x.unit + 1) * x.unit AS cu
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
    AS x(ord, rule, bucket, cost, rate, unit, tol) CROSS JOIN n
),
ts AS (
  SELECT te.ord, t.tat AS old FROM te
  LEFT JOIN LATERAL (SELECT t.tat FROM ${T} t WHERE t.rule = te.rule AND t.bucket = te.bucket LIMIT 1) t ON true
),
qs AS (
  SELECT x.*, n.now_ms, ${localDate('n.now_ms', 'x.tz')} AS today
  FROM unnest($8::bigint[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::text[])
    AS x(ord, rule, bucket, cost, quota, tz) CROSS JOIN n
),
qe AS (
  SELECT y.*, ${dayMs('y.d')} AS start_ms, ${dayMs('y.d + 1')} AS end_ms
  FROM (
    SELECT qs.*, c.count AS old, COALESCE(c.day, qs.today) AS d FROM qs
    LEFT JOIN LATERAL (
      SELECT c.count, c.day FROM ${Q} c WHERE c.rule = qs.rule AND c.bucket = qs.bucket AND c.day >= qs.today
      ORDER BY c.day DESC LIMIT 1
    ) c ON true
  ) y
),
-- Decided on the snapshot first: when some entry refuses there, the answer is that refusal
-- (true at the snapshot's instant) and nothing is locked, so refusals never queue on row locks.
sok AS (
  SELECT COALESCE(bool_and(a), true) AS ok FROM (
    SELECT te.cu <= te.tol AND GREATEST(ts.old, te.sn) - te.sn + te.cu <= te.tol AS a
    FROM te JOIN ts ON ts.ord = te.ord
    UNION ALL
    SELECT GREATEST(qe.cost, 1) <= GREATEST(qe.quota - COALESCE(qe.old, 0), 0) FROM qe
  ) z
),
tl AS (
  SELECT l.rule, l.bucket, l.tat
  FROM (SELECT te.rule, te.bucket FROM te WHERE (SELECT sok.ok FROM sok) ORDER BY te.rule COLLATE "C", te.bucket COLLATE "C") e
  CROSS JOIN LATERAL (SELECT t.rule, t.bucket, t.tat FROM ${T} t WHERE t.rule = e.rule AND t.bucket = e.bucket FOR UPDATE OF t) l
),
td AS (
  SELECT te.*, v.old, GREATEST(v.old, te.sn) - te.sn AS q
  FROM te JOIN ts ON ts.ord = te.ord LEFT JOIN tl ON tl.rule = te.rule AND tl.bucket = te.bucket
  CROSS JOIN LATERAL (SELECT CASE WHEN (SELECT sok.ok FROM sok) THEN tl.tat ELSE ts.old END AS old) v
),
ql AS (
  SELECT l.rule, l.bucket, l.day, l.count
  FROM (SELECT qe.rule, qe.bucket, qe.d FROM qe WHERE (SELECT sok.ok FROM sok) ORDER BY qe.rule COLLATE "C", qe.bucket COLLATE "C", qe.d) e
  CROSS JOIN LATERAL (
    SELECT c.rule, c.bucket, c.day, c.count FROM ${Q} c WHERE c.rule = e.rule AND c.bucket = e.bucket AND c.day = e.d FOR UPDATE OF c
  ) l
),
qd AS (
  SELECT qe.ord, qe.rule, qe.bucket, qe.cost, qe.quota, qe.d, qe.now_ms, qe.start_ms, qe.end_ms, v.old, COALESCE(v.old, 0) AS used
  FROM qe LEFT JOIN ql ON ql.rule = qe.rule AND ql.bucket = qe.bucket AND ql.day = qe.d
  CROSS JOIN LATERAL (SELECT CASE WHEN (SELECT sok.ok FROM sok) THEN ql.count ELSE qe.old END AS old) v
),
ok AS (
  SELECT COALESCE(bool_and(a), true) AS ok FROM (
    SELECT td.cu <= td.tol AND td.q + td.cu <= td.tol AS a FROM td
    UNION ALL
    SELECT GREATEST(qd.cost, 1) <= GREATEST(qd.quota - qd.used, 0) FROM qd
  ) z
),
tw AS (
  INSERT INTO ${T} AS t (rule, bucket, tat, prev)
  SELECT td.rule, td.bucket, td.sn + td.q + td.cu, td.old FROM td CROSS JOIN ok
  WHERE ok.ok AND td.cost > 0
  ORDER BY td.rule COLLATE "C", td.bucket COLLATE "C"
  ON CONFLICT (rule, bucket) DO UPDATE SET prev = t.tat,
    tat = CASE WHEN t.tat IS NOT DISTINCT FROM excluded.prev THEN excluded.tat ELSE ${names.schema}.raise_retry() END
  RETURNING 1
),
qw AS (
  INSERT INTO ${Q} AS c (rule, bucket, day, count, prev)
  SELECT qd.rule, qd.bucket, qd.d, qd.used + qd.cost, qd.old FROM qd CROSS JOIN ok
  WHERE ok.ok AND qd.cost > 0
  ORDER BY qd.rule COLLATE "C", qd.bucket COLLATE "C"
  ON CONFLICT (rule, bucket, day) DO UPDATE SET prev = c.count,
    count = CASE WHEN c.count IS NOT DISTINCT FROM excluded.prev THEN excluded.count ELSE ${names.schema}.raise_retry() END
  RETURNING 1
),
-- Checked once, after every write (counting tw and qw runs them to the end), before any answer row.
c AS (SELECT ${onTime} AS on_time FROM (SELECT (SELECT count(*) FROM tw) + (SELECT count(*) FROM qw)) x)
SELECT td.ord, td.q::float8 AS q, NULL::float8 AS used, NULL::float8 AS reset_ms, NULL::float8 AS window_ms
FROM c CROSS JOIN td WHERE c.on_time
UNION ALL
SELECT qd.ord, NULL, qd.used::float8, (qd.end_ms - qd.now_ms)::float8, (qd.end_ms - qd.start_ms)::float8
FROM c CROSS JOIN qd WHERE c.on_time`);
}
