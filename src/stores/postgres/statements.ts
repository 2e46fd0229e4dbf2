import type { TimeSource } from '../shared/time-source.js';
import { accountCtes, accountSource } from './account-statements.js';
import type { RuleSql } from './algorithms/index.js';
import type { AccountSql, SchemaNames } from './schema-names.js';
import { nowOf, statementClock } from './sql-clock.js';
import { statement, type Statement } from './statement.js';

/**
 * The statements of one rule, assembled from its algorithm's SQL (algorithms/). Each decision
 * (or batch of decisions on one rule) is one statement: read the bucket from the statement's
 * snapshot, and only when that read says the take charges, upsert it (INSERT … ON CONFLICT … DO
 * UPDATE). The upsert locks the current row version and recomputes the new state from it, so
 * concurrent takes serialise on the row (exact under concurrency); it also keeps the state it
 * replaced (the algorithm's `was` columns), so RETURNING reports the state this take actually
 * saw. Refusals and peeks write nothing: a flooded key costs reads, not row locks and WAL
 * flushes.
 *
 * Statements return the state before the take(s), one row per bucket, named by `bucket`, in no
 * particular order (the written rows straight from RETURNING, the others from the snapshot: no
 * join back, no sort). The decisions themselves are then computed by the core rule, as the
 * memory store computes them, so numbers agree exactly.
 *
 * A batch holds distinct buckets of one rule, each with `n` takes of one cost; the algorithms'
 * closed forms equal `n` sequential takes. Rows are locked in "C" order of the bucket, the order
 * every multi-row write uses, so two batches cannot deadlock.
 *
 * Every read of a bucket is a LATERAL subquery probing the primary key (its LIMIT 1 keeps the
 * planner from pulling it up into a join). With a plain join the
 * planner may hash-join against every row of the rule when its statistics are stale, as they are
 * while the table grows; each statement then cost time in proportion to the table, and a bench
 * on 100,000 keys slowed to a quarter (docs/postgres.md). A lateral probe cannot become a scan.
 *
 * Parameters: the rule's own (`ruleParams` of them, $1 its name), then per take bucket, cost,
 * count of takes, limit and the algorithm's own per-take inputs (`takeColumns`: a token bucket's
 * tier; scalars, or arrays in a batch); an account take instead: account bucket, cost, limit,
 * anonymous bucket, user id, then the algorithm's own inputs. Then the application's time
 * (timeSource "app"), then the time left before the deadline.
 */

/** Statements of one rule's algorithm. */
export interface RuleStatements {
  readonly batch: Statement;
  /**
   * The batch statement for one bucket: the same parameters as scalars instead of arrays. Its
   * plan has no array of unknown length, so PostgreSQL switches to a cached generic plan instead
   * of planning every execution (planning cost more than executing a lone take).
   */
  readonly single: Statement;
  /**
   * The lean statement of a lone take under the rule's own parameters, for a rule whose
   * algorithm has one (see `AlgorithmModule.plainTakeSql`); undefined otherwise.
   */
  readonly plain: Statement | undefined;
  readonly account: Statement | undefined;
  readonly reset: Statement;
  /** A reservation of one bucket, for a rule that reserves (see `AlgorithmModule.reserveSql`). */
  readonly reserve: Statement | undefined;
  /** A refund or settlement of one bucket (see {@link adjustText}). */
  readonly adjust: Statement;
  /** A refund or settlement of an account key's bucket, written only while the user exists. */
  readonly accountAdjust: Statement | undefined;
}

/** The statements of a rule whose algorithm's SQL is `sql`. */
export function ruleStatements(
  sql: RuleSql,
  names: SchemaNames,
  timeSource: TimeSource,
  account: AccountSql | undefined,
  reserveSql?: RuleSql,
  plainTakeSql?: (names: SchemaNames, now: string, onTime: string) => string,
): RuleStatements {
  const k = sql.ruleParams;
  // The algorithm's own per-take inputs (a token bucket's tier), after the quota.
  const extra = sql.takeColumns ?? [];
  const e = extra.length;
  const extraNames = extra.map((c) => `, x.${c.name}`).join('');
  const batchSource = `SELECT x.bucket, x.cost, x.n, x.quota${extraNames}, NULL::text AS account
  FROM unnest($${k + 1}::text[], $${k + 2}::bigint[], $${k + 3}::bigint[], $${k + 4}::bigint[]${extra.map((c, i) => `, $${k + 5 + i}::${c.type}[]`).join('')}) AS x(bucket, cost, n, quota${extra.map((c) => `, ${c.name}`).join('')})
  LIMIT cardinality($${k + 1}::text[])`;
  // LIMIT cardinality(…) keeps every row, but a generic plan then estimates one row instead of
  // ten, so PostgreSQL keeps the cached generic plan (primary-key probes in a nested loop)
  // rather than planning every batch anew.
  const extraScalars = (first: number) =>
    extra.map((c, i) => `, $${first + i}::${c.type} AS ${c.name}`).join('');
  const oneBucket = (first: number) =>
    `SELECT $${first + 1}::text AS bucket, $${first + 2}::bigint AS cost, $${first + 3}::bigint AS n, $${first + 4}::bigint AS quota${extraScalars(first + 5)}, NULL::text AS account`;
  const singleSource = oneBucket(k);
  const plainClock = statementClock(names.schema, timeSource, k + 4);
  return {
    batch: statement(takeText(sql, names, timeSource, batchSource, k + 5 + e, '')),
    single: statement(takeText(sql, names, timeSource, singleSource, k + 5 + e, '')),
    // Bucket, cost and count after the rule's parameters; then the app's time, then the time left.
    plain:
      plainTakeSql === undefined
        ? undefined
        : statement(plainTakeSql(names, plainClock.now, plainClock.onTime)),
    account:
      account === undefined
        ? undefined
        : statement(
            takeText(
              sql,
              names,
              timeSource,
              accountSource(k + 1, extraScalars(k + 6)),
              k + 6 + e,
              accountCtes(account, names, k + 1, k + 5),
            ),
          ),
    reserve:
      reserveSql === undefined
        ? undefined
        : statement(
            takeText(
              reserveSql,
              names,
              timeSource,
              oneBucket(reserveSql.ruleParams),
              reserveSql.ruleParams + 5 + e,
              '',
            ),
          ),
    reset: statement(resetText(sql, names, timeSource)),
    adjust: statement(adjustText(sql, names, timeSource, undefined)),
    accountAdjust: account === undefined ? undefined : statement(adjustText(sql, names, timeSource, account)),
  };
}

/**
 * On the store's time, how much later than a reset a take may seem and still count as before it.
 * A refund finds its take's time from the application's clock, as an offset from the refund's
 * statement time: whole ms (up to 2 ms off) plus however much longer the refund's statement
 * took to start after it was sent than the take's did (a round trip's jitter). A refund of a take
 * made this soon after a reset gives nothing back: the safe side.
 */
export const RESET_MARGIN_MS = 100;

/**
 * A reset: deletes the bucket's row and records the reset's time in the resets table (the
 * latest of the times recorded; kept until `$3` ms, the rule's refund horizon, after it), in one
 * statement. Parameters: the rule's name, the bucket, the horizon, the application's time
 * (timeSource "app").
 */
function resetText(sql: RuleSql, names: SchemaNames, timeSource: TimeSource): string {
  const now = nowOf(timeSource, 4);
  return `WITH d AS (DELETE FROM ${sql.table} WHERE rule = $1::text AND bucket = $2::text RETURNING 1)
INSERT INTO ${names.resets} AS r (rule, bucket, reset_at, expires_at)
SELECT $1::text, $2::text, t.at, t.at + $3::bigint FROM (SELECT ${now} AS at) t
ON CONFLICT (rule, bucket) DO UPDATE SET
  reset_at = GREATEST(r.reset_at, excluded.reset_at),
  expires_at = GREATEST(r.expires_at, excluded.expires_at)`;
}

/**
 * One refund or settlement (`RuleBuckets.adjust`): one statement that upserts the bucket's row
 * with the state its algorithm's `adjust` SQL derives from the row it locked, and writes
 * nothing when that state does not move. A refund inserts no row (a bucket never seen, or
 * forgotten, has nothing to give back); a charge inserts one as a take would. An account key's
 * statement locks the user's row as an account take does and writes only while the user
 * exists, linking a row it inserts to the user. A refund of a take made at or before the
 * bucket's last reset (its row in the resets table) writes nothing: the reset gave the key a new
 * bucket, which the old take never charged.
 *
 * Parameters: the algorithm's adjust values (`params` of them, $1 the rule's name), then bucket,
 * delta, the take's time and its `until` as offsets in ms from the caller's now (the statement
 * adds the first to its own time; the second is the time left to `until`), the user id (an
 * account key), the application's time (timeSource "app") and the time left before the
 * deadline, checked after the write as a take's.
 */
function adjustText(
  sql: RuleSql,
  names: SchemaNames,
  timeSource: TimeSource,
  account: AccountSql | undefined,
): string {
  const a = sql.adjust;
  const k = a.params;
  const [bucket, delta, taken, until, user] = [k + 1, k + 2, k + 3, k + 4, k + 5];
  const nowParam = account === undefined ? k + 5 : k + 6;
  const { now, onTime } = statementClock(names.schema, timeSource, nowParam);
  const columns = a.columns;
  const fresh = a.derive(columns.map(() => 'NULL::bigint'));
  const locked = a.derive(columns.map((c) => `t.${c}`));
  const values = columns.map((_, i) => `d.n${i}`).join(', ');
  const assign =
    columns.length === 1
      ? `${columns[0] as string} = (SELECT ${values}`
      : `(${columns.join(', ')}) = (SELECT ${values}`;
  const ctes = account === undefined ? '' : accountCtes(account, names, bucket, user);
  const session = account === undefined ? '' : ' CROSS JOIN f WHERE f.session';
  const linked = account === undefined ? 'NULL::text' : `$${bucket}::text`;
  return `WITH p AS (SELECT p0.*, ${now} AS adj_now FROM (${a.prelude(now)}) p0),
${ctes}s AS (
  SELECT p.*, $${bucket}::text AS bucket, $${delta}::bigint AS delta, p.adj_now + $${taken}::bigint AS taken_ms,
    $${until}::bigint AS left_ms, ${linked} AS account
  FROM p${session}${session === '' ? ' WHERE' : ' AND'} ($${delta}::bigint > 0 OR NOT EXISTS (
    SELECT 1 FROM ${names.resets} r
    WHERE r.rule = $1::text AND r.bucket = $${bucket}::text
      AND r.reset_at + ${timeSource === 'store' ? RESET_MARGIN_MS : 0} >= p.adj_now + $${taken}::bigint))
),
w AS (
  INSERT INTO ${sql.table} AS t (rule, bucket, ${columns.join(', ')}, account_bucket)
  SELECT $1::text, s.bucket, ${values}, s.account FROM s CROSS JOIN LATERAL (${fresh}) d
  WHERE s.delta > 0 OR EXISTS (SELECT 1 FROM ${sql.table} o WHERE o.rule = $1::text AND o.bucket = s.bucket)
  ON CONFLICT (rule, bucket) DO UPDATE SET
    ${assign} FROM s CROSS JOIN LATERAL (${locked}) d),
    account_bucket = COALESCE(t.account_bucket, excluded.account_bucket)
  WHERE (SELECT d.changed FROM s CROSS JOIN LATERAL (${locked}) d)
  RETURNING 1
)
-- Checked once, after the write (counting w runs it to the end).
SELECT ${onTime} AS on_time FROM (SELECT count(*) FROM w) x`;
}

/**
 * One take statement. `source` yields the takes (bucket, cost, n, quota, account); `nowParam`
 * is the parameter after the per-take ones; `ctes` come first (an account take's).
 */
function takeText(
  sql: RuleSql,
  names: SchemaNames,
  timeSource: TimeSource,
  source: string,
  nowParam: number,
  ctes: string,
): string {
  const { now, onTime } = statementClock(names.schema, timeSource, nowParam);
  const withAccount = ctes !== '';
  const state = sql.stateColumns;
  const was = sql.wasColumns;
  const olds = state.map((c) => `o.${c} AS o_${c}`).join(', ');
  const seen = was.map((_, i) => `s.o_${state[i] as string}`);
  const next = sql.next('d');
  const assign =
    state.length === 1
      ? `${state[0] as string} = (SELECT ${next[0] as string}`
      : `(${state.join(', ')}) = (SELECT ${next.join(', ')}`;
  const session = withAccount ? ', f.session' : '';
  const joinSession = withAccount ? ' CROSS JOIN f' : '';
  return `WITH p AS (${sql.prelude(now)}),
${ctes}i AS (${source}),
s AS (
  SELECT s.*, ${olds}, d.*
  FROM (SELECT i.*, p.* FROM i CROSS JOIN p) s
  LEFT JOIN LATERAL (
    SELECT ${state.map((c) => `t.${c}`).join(', ')} FROM ${sql.table} t WHERE t.rule = $1::text AND t.bucket = s.bucket LIMIT 1
  ) o ON true
  CROSS JOIN LATERAL (${sql.derive(state.map((c) => `o.${c}`))}) d
),
w AS (
  INSERT INTO ${sql.table} AS t (rule, bucket, ${state.join(', ')}, ${was.join(', ')}, account_bucket)
  SELECT $1::text, s.bucket, ${sql.next('s').join(', ')}, ${was.map(() => 'NULL').join(', ')}, s.account FROM s
  WHERE ${sql.writes('s')}
  ORDER BY s.bucket COLLATE "C"
  ON CONFLICT (rule, bucket) DO UPDATE SET
    ${was.map((c, i) => `${c} = t.${state[i] as string}`).join(', ')},
    ${assign}
      FROM s CROSS JOIN LATERAL (${sql.derive(state.map((c) => `t.${c}`))}) d WHERE s.bucket = excluded.bucket),
    account_bucket = COALESCE(t.account_bucket, excluded.account_bucket)
  RETURNING t.bucket, ${was.map((c) => `t.${c}`).join(', ')}
),
-- Checked once, after every write (counting w runs it to the end), before any answer row.
c AS (SELECT ${onTime} AS on_time FROM (SELECT count(*) FROM w) x)
SELECT w.bucket, ${sql.output(was.map((c) => `w.${c}`))}${session}
FROM c CROSS JOIN w CROSS JOIN p AS s${joinSession}
WHERE c.on_time
UNION ALL
SELECT s.bucket, ${sql.output(seen)}${session}
FROM c CROSS JOIN s${joinSession}
WHERE c.on_time AND (${sql.writes('s')}) IS NOT TRUE`;
}
