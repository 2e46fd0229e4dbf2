import { MAX_PENALTY_COUNT } from '../../../core/bounds.js';
import type { Rule } from '../../../core/rules/rule.js';
import type { BucketState } from '../../../core/state.js';
import type { SchemaNames } from '../schema-names.js';
import type { PostgresRow } from '../client.js';
import { storeNow } from '../sql-clock.js';
import type { AdjustSql, AlgorithmBinding, AlgorithmModule, RuleSql } from './algorithm-module.js';
import type { TakeAllFamily } from './take-all-family.js';
import { takeAllLockout } from './lockout.js';

/**
 * Counting per window in PostgreSQL, shared by the fixed window, the sliding window and the
 * calendar quota: one row per rule and bucket in `window_counters` holding the core's state
 * (window start, its count, the previous window's count) and `expires_at`, the rule's horizon.
 *
 * Each kind brings where the window holding the statement's time starts and ends, and whether
 * the previous window weighs (sliding); the decision is otherwise one, as in the core:
 *
 * - the counted window is the later of the stored one and the current one: a clock stepped back
 *   counts against the stored window, which never moves backwards (for a sliding window, as if
 *   at its first instant); an anchored window's is the stored one while it runs, else one
 *   starting now (see {@link countedStart});
 * - a stored count of another window is spent (a sliding window's count of the window just
 *   before the current one becomes its previous count);
 * - the previous count weighs `ceil((previous × (w − elapsed)) / w)` on float8, the core's
 *   double arithmetic in the same order, so both agree bit for bit;
 * - a take of `cost` fits when `cost <= limit − count − weight`; refusals and peeks write
 *   nothing unless the rule has `penalty` (then counts stop at MAX_PENALTY_COUNT).
 *
 * The columns every kind's rows carry (per statement or per all-or-nothing entry): `quota`,
 * `now_ms`, `a_start` and `a_end` (the current window), `w` (the window's length; sliding and
 * anchored windows only), `slides`, `anchored` (where the counted window starts: see
 * {@link countedStart}), and `tail` (how long a count outlives its window: one window for a
 * sliding one). The all-or-nothing statement mixes every kind's entries in one CTE, so each kind
 * says these per row, in this order, and the SQL is one.
 */

/** A window row's state columns (or expressions): start, count, previous count, expiry. */
type StateColumns = [string, string, string, string];

/**
 * The start of the window a take of row `e` counts in (SQL, bigint), from the stored start `W`
 * and count `C` (NULL when the bucket has no row):
 * - windows on a grid every key shares (aligned to the Unix epoch, a calendar's periods): the
 *   later of the stored window and the current one (`a_start`), since windows never move
 *   backwards;
 * - `anchored` windows, which start at a key's first take: the stored window while it runs (a
 *   count above 0 and the statement's time before its end, `W + w`), else a new one starting
 *   at the statement's time (`a_start`).
 */
function countedStart(W: string, C: string, e: string): string {
  return `CASE WHEN ${e}.anchored
    THEN CASE WHEN ${C} > 0 AND ${e}.now_ms < ${W} + ${e}.w THEN ${W} ELSE ${e}.a_start END
    ELSE GREATEST(${W}, ${e}.a_start) END`;
}

/**
 * The derived values of a stored state (`W`, `C`, `P`, `X`: start, count, previous, expiry) for
 * row `e`. A row whose window goes on keeps its expiry (a window later than the current one, an
 * anchored window still running: both were given their end when they started); a new window
 * gets the current one's end.
 */
export function windowDerive(old: readonly string[], e: string): string {
  const [W, C, P, X] = old as StateColumns;
  return `SELECT z.st, z.cur, z.pv, z.wt, GREATEST(${e}.quota - z.cur - z.wt, 0) AS lft,
    CASE WHEN ${W} > ${e}.a_start OR (${e}.anchored AND ${W} = z.st) THEN ${X}
      ELSE ${e}.a_end + ${e}.tail END AS exp
  FROM (
    SELECT y.*, CASE WHEN y.pv = 0 THEN 0::bigint
      ELSE ceil((y.pv::float8 * (${e}.w - y.el)::float8) / ${e}.w::float8)::bigint END AS wt
    FROM (
      SELECT x.st,
        CASE WHEN ${W} = x.st THEN ${C} ELSE 0::bigint END AS cur,
        CASE WHEN NOT ${e}.slides THEN 0::bigint WHEN ${W} = x.st THEN ${P}
          WHEN ${W} = x.st - ${e}.w THEN ${C} ELSE 0::bigint END AS pv,
        CASE WHEN ${W} > ${e}.a_start THEN 0::bigint ELSE ${e}.now_ms - ${e}.a_start END AS el
      FROM (SELECT ${countedStart(W, C, e)} AS st) x
    ) y
  ) z`;
}

/**
 * A refund or settlement of a window kind, as the core's (`adjustWindowCount`, and the sliding
 * window's own): `takenStart` is the start of the take's window from its time and the stored
 * window's start (SQL expressions, the latter NULL when the bucket has no row; NULL when unknown,
 * which gives nothing back). A refund comes off the count while the take's
 * window is the row's, for a sliding window off the previous count while the row's window is
 * the one after the take's, never below 0; a charge goes to the later of the row's window and
 * the current one (for an anchored window, the running one or one starting now), rolling the row into it as a take would (counts stop at MAX_PENALTY_COUNT),
 * and keeps the row at least until that window's horizon. Rule parameters: $1 rule, $2 the
 * kind's own, then `params − 2` more (a calendar quota's periods around the take).
 */
export function windowAdjustSql(
  prelude: (now: string) => string,
  params: number,
  takenStart: (taken: string, stored: string) => string,
): AdjustSql {
  return {
    params,
    prelude,
    columns: ['window_start', 'count', 'previous', 'expires_at'],
    derive: (old) => {
      const [W, C, P, X] = old as StateColumns;
      return `SELECT CASE WHEN x.charges AND NOT x.same THEN x.st ELSE x.w0 END AS n0,
    CASE WHEN x.cur THEN GREATEST(x.c0 + s.delta, 0)
      WHEN x.charges THEN LEAST(CASE WHEN x.same THEN x.c0 ELSE 0 END + s.delta, ${MAX_PENALTY_COUNT})
      ELSE x.c0 END AS n1,
    CASE WHEN x.prv THEN GREATEST(x.p0 + s.delta, 0)
      WHEN x.charges AND s.slides AND NOT x.same THEN CASE WHEN x.w0 = x.st - s.w THEN x.c0 ELSE 0 END
      ELSE x.p0 END AS n2,
    CASE WHEN x.charges THEN GREATEST(x.x0,
      CASE WHEN s.anchored AND x.same THEN x.st + s.w ELSE s.a_end + s.tail END) ELSE x.x0 END AS n3,
    x.cur OR x.prv OR x.charges AS changed
  FROM (
    SELECT y.*, y.w0 = y.st AS same, s.delta > 0 AS charges,
      COALESCE(s.delta < 0 AND y.w0 = y.tk AND y.c0 > 0, false) AS cur,
      COALESCE(s.delta < 0 AND s.slides AND NOT (y.w0 = y.tk AND y.c0 > 0) AND y.w0 = y.tk + s.w AND y.p0 > 0, false) AS prv
    FROM (
      SELECT COALESCE(${W}, s.a_start) AS w0, COALESCE(${C}, 0) AS c0, COALESCE(${P}, 0) AS p0,
        COALESCE(${X}, s.a_end + s.tail) AS x0, ${countedStart(W, C, 's')} AS st,
        ${takenStart('s.taken_ms', W)} AS tk
    ) y
  ) x`;
    },
  };
}

/**
 * The rule statements' SQL of a window kind, given its prelude: per-statement columns `now_ms`,
 * `a_start`, `a_end`, `w`, `slides`, `anchored`, `tail`. Rule parameters: $1 rule, $2 the kind's own, $3
 * penalty. Answers the state the take saw and the statement's time. Refunds and settlements
 * are `adjust`, made by the kind with {@link windowAdjustSql}.
 */
export function windowRuleSql(
  names: SchemaNames,
  prelude: (now: string) => string,
  adjust: AdjustSql,
): RuleSql {
  return {
    adjust,
    table: names.windowCounters,
    ruleParams: 3,
    prelude,
    stateColumns: ['window_start', 'count', 'previous', 'expires_at'],
    wasColumns: ['was_start', 'was_count', 'was_previous'],
    derive: (old) => windowDerive(old, 's'),
    writes: (d) => `s.cost > 0 AND s.cost <= s.quota AND ($3::boolean OR s.cost <= ${d}.lft)`,
    chargeable: () => `s.cost > 0 AND s.cost <= s.quota`,
    fitting: (d) => `${d}.lft / GREATEST(s.cost, 1)`,
    // n takes in order: under penalty every one is charged (a refusal as much as an admission);
    // otherwise as many as fit.
    next: (d, n = 's.n') => [
      `${d}.st`,
      `CASE WHEN $3::boolean THEN LEAST(${d}.cur + ${n}::numeric * s.cost, ${MAX_PENALTY_COUNT})::bigint
      ELSE ${d}.cur + LEAST(${n}, ${d}.lft / s.cost) * s.cost END`,
      `${d}.pv`,
      `${d}.exp`,
    ],
    expiry: 3,
    output: ([W, C, P]) =>
      `COALESCE(${W}, 0)::float8 AS window_start, COALESCE(${C}, 0)::float8 AS count, COALESCE(${P}, 0)::float8 AS previous, s.now_ms::float8 AS now_ms`,
  };
}

/**
 * The prelude of a window aligned to the Unix epoch ($2 its length in ms) around the statement's
 * time `now`: a sliding window's counts outlive their window by one more (`tail`).
 */
export function alignedPrelude(slides: boolean): (now: string) => string {
  return (now) => `SELECT a.now_ms, ${alignedStart('a.now_ms', '$2::bigint')} AS a_start,
    ${alignedStart('a.now_ms', '$2::bigint')} + $2::bigint AS a_end,
    $2::bigint AS w, ${String(slides)} AS slides, false AS anchored, ${slides ? '$2::bigint' : '0::bigint'} AS tail
  FROM (SELECT ${now} AS now_ms) a`;
}

/** The start of the aligned window of length `w` holding `now` (SQL, both bigint), as Math.floor. */
export function alignedStart(now: string, w: string): string {
  return `(${now} - ((${now} % ${w}) + ${w}) % ${w})`;
}

/**
 * The binding of a window kind whose one parameter is its length in ms: rule parameters $1
 * rule, $2 the length, $3 penalty; a refund's $1 and $2; an all-or-nothing entry's the length
 * (see {@link lengthEntries}).
 */
export function lengthBinding(name: string, lengthMs: number, penalty: boolean): AlgorithmBinding {
  const params = [name, lengthMs, penalty];
  const entry = [lengthMs];
  const adjusting = [name, lengthMs];
  return {
    ruleParams: () => params,
    adjustParams: () => adjusting,
    entryParams: () => entry,
    read: readWindowRow,
  };
}

/** What {@link lengthWindowModule} needs of a window kind whose one parameter is its length. */
export interface LengthWindowKind {
  readonly kind: string;
  /** The bound rule's window length in ms. */
  readonly lengthOf: (rule: Rule) => number;
  /** The current window around the statement's time (see {@link windowRuleSql}). */
  readonly prelude: (now: string) => string;
  /** A refunded take's window (see {@link windowAdjustSql}). */
  readonly takenStart: (taken: string, stored: string) => string;
  /** An all-or-nothing entry's columns from `a_start` to `tail`, per row `x` beside `n`. */
  readonly entryWindow: string;
}

/**
 * The module of a window kind whose one parameter is its length in ms (the aligned windows, the
 * anchored window): bound by {@link lengthBinding}, counted in `window_counters` by
 * {@link windowRuleSql}, its all-or-nothing entries from {@link lengthEntries}. Each kind brings
 * only where its windows lie.
 */
export function lengthWindowModule(window: LengthWindowKind): AlgorithmModule {
  const prelude = window.prelude;
  const adjust = windowAdjustSql(prelude, 2, window.takenStart);
  return {
    kind: window.kind,
    bind(name: string, rule: Rule) {
      return lengthBinding(name, window.lengthOf(rule), (rule as PenaltyRule).penalty);
    },
    ruleSql: (names) => windowRuleSql(names, prelude, adjust),
    family: windowFamily,
    entryTypes: ['bigint'],
    entrySource: (first) => `SELECT x.ord, x.rule, x.bucket, x.cost, x.quota, n.now_ms,
    ${window.entryWindow}
  FROM ${lengthEntries(first)}`,
  };
}

/** The option every window kind has: a refusal of a single take is charged too. */
interface PenaltyRule extends Rule {
  readonly penalty: boolean;
}

/**
 * The all-or-nothing entries of a kind bound by {@link lengthBinding}, from parameter `first`:
 * rows `x` of ord, rule, bucket, cost, quota and `w` (the length), beside the statement's time
 * `n`.
 */
export function lengthEntries(first: number): string {
  return `unnest($${first}::bigint[], $${first + 1}::text[], $${first + 2}::text[], $${first + 3}::bigint[],
    $${first + 4}::bigint[], $${first + 5}::bigint[]) AS x(ord, rule, bucket, cost, quota, w) CROSS JOIN n`;
}

/** Reads a returned row into the core's state; answers the statement's time. */
export function readWindowRow(row: PostgresRow, state: BucketState): number {
  state.value = row.count as number;
  state.window = row.window_start as number;
  state.previous = row.previous as number;
  return row.now_ms as number;
}

/** Deletes rows past their horizon, whatever their rule (bound here or not): at most $1 per statement. */
export function windowPruneText(names: SchemaNames): string {
  const T = names.windowCounters;
  return `WITH d AS (DELETE FROM ${T} WHERE ctid IN (
  SELECT ctid FROM ${T} WHERE expires_at <= ${storeNow} LIMIT $1
) RETURNING 1)
SELECT count(*)::float8 AS n FROM d`;
}

const old = (alias: string) =>
  [`${alias}.window_start`, `${alias}.count`, `${alias}.previous`, `${alias}.expires_at`] as const;

/** The window kinds' part of the all-or-nothing statement (penalties do not apply there). */
export const windowFamily: TakeAllFamily = {
  id: 'w',
  snapshot: (names, lockouts) => `ws AS (
  SELECT we.*, o.window_start AS o_start, o.count AS o_count, o.previous AS o_previous, o.expires_at AS o_expires${lockouts ? takeAllLockout.snapshot('o') : ''},
    GREATEST(we.cost, 1) <= d.lft${lockouts ? takeAllLockout.open('we', 'o.blocked_until') : ''} AS fits
  FROM we LEFT JOIN LATERAL (
    SELECT t.window_start, t.count, t.previous, t.expires_at${lockouts ? takeAllLockout.read('t') : ''} FROM ${names.windowCounters} t
    WHERE t.rule = we.rule AND t.bucket = we.bucket LIMIT 1
  ) o ON true
  CROSS JOIN LATERAL (${windowDerive(old('o'), 'we')}) d
)`,
  decide: (names, lockouts) => `wl AS (
  SELECT l.*
  FROM (SELECT we.rule, we.bucket FROM we WHERE (SELECT sok.ok FROM sok) ORDER BY we.rule COLLATE "C", we.bucket COLLATE "C") e
  CROSS JOIN LATERAL (
    SELECT t.rule, t.bucket, t.window_start, t.count, t.previous, t.expires_at${lockouts ? takeAllLockout.read('t') : ''} FROM ${names.windowCounters} t
    WHERE t.rule = e.rule AND t.bucket = e.bucket FOR UPDATE OF t
  ) l
),
wd AS (
  SELECT ws.ord, ws.rule, ws.bucket, ws.cost, ws.now_ms, v.window_start, v.count, v.previous, d.*,
    GREATEST(ws.cost, 1) <= d.lft${lockouts ? takeAllLockout.open('ws', 'v.blk_until') : ''} AS fits${lockouts ? ', ws.forget, ws.blk_now, v.blk_until, v.blk_last' : ''}
  FROM ws LEFT JOIN wl ON wl.rule = ws.rule AND wl.bucket = ws.bucket
  CROSS JOIN LATERAL (
    SELECT CASE WHEN l THEN wl.window_start ELSE ws.o_start END AS window_start,
      CASE WHEN l THEN wl.count ELSE ws.o_count END AS count,
      CASE WHEN l THEN wl.previous ELSE ws.o_previous END AS previous,
      CASE WHEN l THEN wl.expires_at ELSE ws.o_expires END AS expires_at${lockouts ? takeAllLockout.pick('l', 'wl', 'ws') : ''}
    FROM (SELECT (SELECT sok.ok FROM sok) AS l) k
  ) v
  CROSS JOIN LATERAL (${windowDerive(old('v'), 'ws')}) d
)`,
  write: (names, lockouts) => `ww AS (
  INSERT INTO ${names.windowCounters} AS t
    (rule, bucket, window_start, count, previous, expires_at, was_start, was_count, was_previous)
  SELECT wd.rule, wd.bucket, wd.st, wd.cur + wd.cost, wd.pv, ${lockouts ? takeAllLockout.expiry('wd', 'wd.exp') : 'wd.exp'}, wd.window_start, wd.count, wd.previous
  FROM wd WHERE (SELECT ok.ok FROM ok) AND wd.cost > 0
  ORDER BY wd.rule COLLATE "C", wd.bucket COLLATE "C"
  ON CONFLICT (rule, bucket) DO UPDATE SET
    window_start = CASE WHEN (t.window_start, t.count, t.previous) IS NOT DISTINCT FROM
      (excluded.was_start, excluded.was_count, excluded.was_previous)
      THEN excluded.window_start ELSE ${names.schema}.raise_retry() END,
    count = excluded.count, previous = excluded.previous, expires_at = excluded.expires_at,
    was_start = t.window_start, was_count = t.count, was_previous = t.previous
  RETURNING 1
)`,
  outputs: ['window_start', 'count', 'previous', 'now_ms'],
  output: () => [
    'COALESCE(wd.window_start, 0)::float8',
    'COALESCE(wd.count, 0)::float8',
    'COALESCE(wd.previous, 0)::float8',
    'wd.now_ms::float8',
  ],
};
