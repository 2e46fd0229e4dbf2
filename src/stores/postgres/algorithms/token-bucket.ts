import type { Rule } from '../../../core/algorithm.js';
import { MAX_TOKEN_RATE } from '../../../core/bounds.js';
import { SluiceError } from '../../../core/errors.js';
import type { TokenBucketRule } from '../../../core/gcra.js';
import type { BucketState } from '../../../core/state.js';
import type { SchemaNames } from '../migrations.js';
import type { PostgresRow } from '../postgres-client.js';
import type { AdjustSql, AlgorithmBinding, AlgorithmModule, RuleSql } from './algorithm-module.js';
import type { TakeAllFamily } from './take-all-family.js';
import { takeAllLockout } from './lockout.js';

/** Origin of scaled time: 2025-01-01T00:00:00Z. Fixed, so every node scales time alike. */
export const SCALED_EPOCH_MS = 1_735_689_600_000;

/**
 * Token bucket (GCRA in scaled integer time, as src/core/gcra.ts), one row per bucket in
 * `token_buckets` holding the theoretical arrival time `tat` as a bigint: time since
 * {@link SCALED_EPOCH_MS} in units of 1/rate ms, with limit and period reduced by their gcd (the
 * same exact arithmetic in smaller integers). Rule parameters: $1 rule, $2 rate (scaled units per
 * ms), $3 unit (units per token), $4 tolerance (burst × unit), $5 penalty. Answers `q`: the
 * scaled time queued ahead of now before the take(s), in reduced units; the core replays its
 * decisions on it (now = epoch = 0, so only the exact difference matters).
 */
function ruleSql(names: SchemaNames): RuleSql {
  const queued = (tat: string) => `(GREATEST(${tat}, s.sn) - s.sn)`;
  return {
    table: names.tokenBuckets,
    ruleParams: 5,
    prelude: (now) => `SELECT (${now} - ${SCALED_EPOCH_MS}) * $2::bigint AS sn`,
    stateColumns: ['tat'],
    wasColumns: ['prev'],
    // A cost above the burst is refused whatever the state; capped at burst + 1 tokens, its
    // scaled size stays within the burst's (which the core keeps below 2^53), so no cost can
    // overflow a bigint here.
    derive: ([tat]) =>
      `SELECT ${queued(tat as string)} AS q, LEAST(GREATEST(s.cost, 1), $4::bigint / $3::bigint + 1) * $3::bigint AS cu`,
    // Charges when it is a take (not a peek), could ever fit (cost <= burst), and fits now or
    // the rule charges refusals.
    writes: (d) => `s.cost > 0 AND ${d}.cu <= $4::bigint AND ($5::boolean OR ${d}.q + ${d}.cu <= $4::bigint)`,
    chargeable: (d) => `s.cost > 0 AND ${d}.cu <= $4::bigint`,
    // The queue may run past the tolerance under penalty: then nothing fits (not a negative count).
    fitting: (d) => `GREATEST(($4::bigint - ${d}.q) / ${d}.cu, 0)`,
    // n takes in order: under penalty every one is charged, the debt capped at one extra full
    // refill (as the core); otherwise as many as fit.
    next: (d, n = 's.n') => [
      `s.sn + CASE
      WHEN $5::boolean THEN LEAST(${d}.q + ${n}::numeric * ${d}.cu, 2 * $4::bigint)::bigint
      WHEN ${d}.q + ${d}.cu <= $4::bigint THEN ${d}.q + LEAST(${n}, ($4::bigint - ${d}.q) / ${d}.cu) * ${d}.cu
      ELSE ${d}.q END`,
    ],
    output: ([tat]) => `${queued(tat as string)}::float8 AS q`,
    adjust: adjustSql,
  };
}

/**
 * A reservation: a take of one bucket whose queue may run `$5` scaled units (the longest wait
 * times the rate) past the tolerance; a refusal charges nothing, penalty or not (the rule's
 * penalty is not sent). Parameters: $1 rule, $2 rate, $3 unit, $4 tolerance, $5 the wait's
 * scaled units. The core replays the decision with `reserve` on the `q` answered.
 */
function reserveSql(names: SchemaNames): RuleSql {
  const take = ruleSql(names);
  const fits = (d: string) => `${d}.q + ${d}.cu <= $4::bigint + $5::bigint`;
  return {
    ...take,
    ruleParams: 5,
    writes: (d) => `s.cost > 0 AND ${d}.cu <= $4::bigint AND ${fits(d)}`,
    next: (d) => [`s.sn + CASE WHEN ${fits(d)} THEN ${d}.q + ${d}.cu ELSE ${d}.q END`],
  };
}

/**
 * A refund or settlement of a token bucket, as `TokenBucketRule.adjust` in reduced units.
 * Parameters: $1 rule, $2 rate, $3 unit, $4 tolerance. A refund moves the arrival time back by
 * the take's units not refilled yet (`s.left_ms` × rate, at most `-delta` tokens), never before
 * now, and only while the bucket is not full; a charge moves it forward from now or the queue,
 * the debt capped at twice the tolerance. Each product is capped first at a size past which the
 * result cannot change (a refund is at most the burst, the queue at most twice the tolerance),
 * so none can overflow a bigint.
 */
const adjustSql: AdjustSql = {
  params: 4,
  prelude: (now) => `SELECT (${now} - ${SCALED_EPOCH_MS}) * $2::bigint AS sn`,
  columns: ['tat'],
  derive: ([tat]) => `SELECT CASE
      WHEN x.refunds THEN GREATEST(x.tat - LEAST(
        LEAST(-s.delta, 2 * $4::bigint / $3::bigint + 1) * $3::bigint,
        LEAST(s.left_ms, 2 * $4::bigint / $2::bigint + 1) * $2::bigint), s.sn)
      WHEN s.delta > 0 THEN s.sn + LEAST(GREATEST(x.tat - s.sn, 0)
        + LEAST(s.delta, 2 * $4::bigint / $3::bigint + 1) * $3::bigint, 2 * $4::bigint)
      ELSE x.tat END AS n0,
    x.refunds OR s.delta > 0 AS changed
  FROM (SELECT y.tat, s.delta < 0 AND y.tat > s.sn AND s.left_ms > 0 AS refunds
    FROM (SELECT COALESCE(${tat as string}, s.sn) AS tat) y) x`,
};

const family: TakeAllFamily = {
  id: 't',
  snapshot: (names, lockouts) => `ts AS (
  SELECT te.*, o.tat AS old${lockouts ? takeAllLockout.snapshot('o') : ''},
    te.cu <= te.tol AND GREATEST(o.tat, te.sn) - te.sn + te.cu <= te.tol${lockouts ? takeAllLockout.open('te', 'o.blocked_until') : ''} AS fits
  FROM te LEFT JOIN LATERAL (
    SELECT t.tat${lockouts ? takeAllLockout.read('t') : ''} FROM ${names.tokenBuckets} t WHERE t.rule = te.rule AND t.bucket = te.bucket LIMIT 1
  ) o ON true
)`,
  decide: (names, lockouts) => `tl AS (
  SELECT l.rule, l.bucket, l.tat${lockouts ? takeAllLockout.read('l') : ''}
  FROM (SELECT te.rule, te.bucket FROM te WHERE (SELECT sok.ok FROM sok) ORDER BY te.rule COLLATE "C", te.bucket COLLATE "C") e
  CROSS JOIN LATERAL (
    SELECT t.rule, t.bucket, t.tat${lockouts ? takeAllLockout.read('t') : ''} FROM ${names.tokenBuckets} t WHERE t.rule = e.rule AND t.bucket = e.bucket FOR UPDATE OF t
  ) l
),
td AS (
  SELECT y.*, y.cu <= y.tol AND y.q + y.cu <= y.tol${lockouts ? takeAllLockout.open('y', 'y.blk_until') : ''} AS fits FROM (
    SELECT ts.ord, ts.rule, ts.bucket, ts.cost, ts.sn, ts.cu, ts.tol, v.old, GREATEST(v.old, ts.sn) - ts.sn AS q${lockouts ? ', ts.forget, ts.blk_now, v.blk_until, v.blk_last' : ''}
    FROM ts LEFT JOIN tl ON tl.rule = ts.rule AND tl.bucket = ts.bucket
    CROSS JOIN LATERAL (SELECT CASE WHEN (SELECT sok.ok FROM sok) THEN tl.tat ELSE ts.old END AS old${lockouts ? takeAllLockout.pick('(SELECT sok.ok FROM sok)', 'tl', 'ts') : ''}) v
  ) y
)`,
  write: (names) => `tw AS (
  INSERT INTO ${names.tokenBuckets} AS t (rule, bucket, tat, prev)
  SELECT td.rule, td.bucket, td.sn + td.q + td.cu, td.old FROM td
  WHERE (SELECT ok.ok FROM ok) AND td.cost > 0
  ORDER BY td.rule COLLATE "C", td.bucket COLLATE "C"
  ON CONFLICT (rule, bucket) DO UPDATE SET prev = t.tat,
    tat = CASE WHEN t.tat IS NOT DISTINCT FROM excluded.prev THEN excluded.tat ELSE ${names.schema}.raise_retry() END
  RETURNING 1
)`,
  outputs: ['q'],
  output: () => ['td.q::float8'],
};

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

function bind(name: string, bound: Rule): AlgorithmBinding {
  const rule = bound as TokenBucketRule;
  const g = gcd(rule.limit, rule.periodMs);
  const rate = rule.limit / g;
  const unit = rule.periodMs / g;
  // The rules sluice builds never exceed it (their limit is at most MAX_TOKEN_RATE); a rule built
  // elsewhere must not overflow the bigint scaled time either.
  if (rate > MAX_TOKEN_RATE) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `PostgresStore rule: a tokenBucket whose limit/period reduces to more than ${MAX_TOKEN_RATE} (MAX_TOKEN_RATE) scaled units per ms cannot be counted exactly in PostgreSQL's 64-bit scaled time until 2300; use a coarser limit or period`,
    );
  }
  const tolerance = rule.burst * unit;
  const params = [name, rate, unit, tolerance, rule.penalty];
  const adjust = [name, rate, unit, tolerance];
  const entry = [rate, unit, tolerance];
  return {
    ruleParams: () => params,
    adjustParams: () => adjust,
    reserveParams: (_now, maxWaitMs) => [name, rate, unit, tolerance, maxWaitMs * rate],
    entryParams: () => entry,
    read(row: PostgresRow, state: BucketState): number {
      // Reduced units → the core's units.
      state.value = (row.q as number) * g;
      state.window = 0;
      state.previous = 0;
      return 0;
    },
    // A full bucket (arrival time not after now) says nothing a missing row does not.
    prune: (names, batchSize, keep) => ({
      text: `WITH d AS (DELETE FROM ${names.tokenBuckets} WHERE ctid IN (
  SELECT ctid FROM ${names.tokenBuckets}
  WHERE rule = $1 AND tat <= (floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint - ${SCALED_EPOCH_MS}) * $2::bigint${keep === undefined ? '' : `\n    AND ${keep.sql(4)}`}
  LIMIT $3) RETURNING 1)
SELECT count(*)::float8 AS n FROM d`,
      values: keep === undefined ? [name, rate, batchSize] : [name, rate, batchSize, ...keep.values],
    }),
  };
}

/** The token bucket's module. */
export const tokenBucketModule: AlgorithmModule = {
  kind: 'token-bucket',
  bind,
  ruleSql,
  reserveSql,
  family,
  entryTypes: ['bigint', 'bigint', 'bigint'],
  entrySource: (first) => {
    const p = (i: number, type: string) => `$${first + i}::${type}[]`;
    return `SELECT x.ord, x.rule, x.bucket, x.cost, x.tol,
    (n.now_ms - ${SCALED_EPOCH_MS}) * x.rate AS sn,
    LEAST(GREATEST(x.cost, 1), x.tol / x.unit + 1) * x.unit AS cu
  FROM unnest(${p(0, 'bigint')}, ${p(1, 'text')}, ${p(2, 'text')}, ${p(3, 'bigint')}, ${p(4, 'bigint')}, ${p(5, 'bigint')}, ${p(6, 'bigint')}, ${p(7, 'bigint')})
    AS x(ord, rule, bucket, cost, quota, rate, unit, tol) CROSS JOIN n`;
  },
};
