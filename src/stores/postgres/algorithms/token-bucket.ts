import type { CallLimit, Rule } from '../../../core/rules/rule.js';
import { MAX_TOKEN_RATE } from '../../../core/bounds.js';
import { SluiceError } from '../../../core/errors.js';
import { MAX_MIGRATED_QUEUE, type TokenBucketRule } from '../../../core/rules/token-bucket.js';
import type { BucketState } from '../../../core/state.js';
import type { SchemaNames } from '../schema-names.js';
import type { PostgresRow } from '../client.js';
import { storeNow } from '../sql-clock.js';
import type { AdjustSql, AlgorithmBinding, AlgorithmModule, RuleSql } from './algorithm-module.js';
import type { TakeAllFamily } from './take-all-family.js';
import { takeAllLockout } from './lockout.js';

/** Origin of scaled time: 2025-01-01T00:00:00Z. Fixed, so every node scales time alike. */
export const SCALED_EPOCH_MS = 1_735_689_600_000;

/**
 * The SQL expressions a token bucket's decision reads its inputs from: the rule's own rate, unit
 * and tolerance reduced by their gcd `g`, the per-call tier (`tr`, `tu`, `tt`: rate, unit and
 * tolerance in the core's units; NULL for the rule's own), the time since the epoch in ms (`ne`)
 * and scaled by the reduced rate (`sn`), and the take's cost.
 */
interface BucketInputs {
  readonly rate: string;
  readonly unit: string;
  readonly tol: string;
  readonly g: string;
  readonly tr: string;
  readonly tu: string;
  readonly tt: string;
  readonly ne: string;
  readonly sn: string;
  readonly cost: string;
}

/**
 * A stored state read under the decision's parameters, as `TokenBucketRule.queuedUnder` reads
 * it, for the stored columns `[tat, tier_rate, tier_tolerance]`. A row whose tier columns are
 * NULL (every row written before tiers, and every row only the rule's own takes wrote) is in the
 * rule's own scale reduced by `g`, as before; a row with them holds its arrival time scaled by
 * `tier_rate` unreduced, and its tolerance in the core's units.
 *
 * A take under the rule's own parameters of a row in the reduced scale decides and writes in
 * that scale, exactly as before tiers (`lg`). Every other decides in the core's units under the
 * call's rate and tolerance (the rule's own when it has no tier) and writes them as the row's
 * tier columns: a tier with the rule's rate and tolerance but another period may charge units
 * the reduced scale cannot hold, and so may a state migrated back from a tier. A state read under
 * another rate or tolerance than its own is migrated as the core does in doubles, in float8: the
 * larger of ceil((queued × new tolerance) / old tolerance) (the fraction in use kept) and
 * ceil((queued × new rate) / old rate) (the time until full kept), cut at the core's
 * MAX_MIGRATED_QUEUE and not at the debt cap, so that a switch never adds tokens.
 *
 * Answers, in the decision's scale: `br` (rate), `bu` (unit), `bt` (tolerance), `bn` (now
 * scaled), `q` (time queued ahead of now), `cu` (the take's scaled cost, at most one unit past
 * the burst), and the tier columns a write stores, `wr` and `wt`.
 */
function bucketDerive(p: BucketInputs, [tat, rate, tol]: readonly string[]): string {
  return `SELECT m.*,
    CASE WHEN m.lg OR (m.sr = m.br AND m.st = m.bt) THEN m.qs
      WHEN m.qs = 0 THEN 0::bigint
      ELSE LEAST(GREATEST(ceil((m.qs::float8 * m.bt::float8) / m.st::float8),
        ceil((m.qs::float8 * m.br::float8) / m.sr::float8)), ${MAX_MIGRATED_QUEUE}::float8)::bigint END AS q,
    LEAST(GREATEST(${p.cost}, 1), m.bt / m.bu + 1) * m.bu AS cu
  FROM (
    SELECT k.*, CASE WHEN k.lg THEN ${p.sn} ELSE ${p.ne} * k.br END AS bn,
      CASE WHEN k.lg THEN NULL::bigint ELSE k.br END AS wr,
      CASE WHEN k.lg THEN NULL::bigint ELSE k.bt END AS wt,
      CASE WHEN ${rate} IS NULL THEN (GREATEST(${tat}, ${p.sn}) - ${p.sn}) * CASE WHEN k.lg THEN 1 ELSE ${p.g} END
        ELSE GREATEST(${tat}, ${p.ne} * ${rate}) - ${p.ne} * ${rate} END AS qs,
      COALESCE(${rate}, ${p.rate} * ${p.g}) AS sr, COALESCE(${tol}, ${p.tol} * ${p.g}) AS st
    FROM (
      SELECT l.lg,
        CASE WHEN l.lg THEN ${p.rate} ELSE COALESCE(${p.tr}, ${p.rate} * ${p.g}) END AS br,
        CASE WHEN l.lg THEN ${p.unit} ELSE COALESCE(${p.tu}, ${p.unit} * ${p.g}) END AS bu,
        CASE WHEN l.lg THEN ${p.tol} ELSE COALESCE(${p.tt}, ${p.tol} * ${p.g}) END AS bt
      FROM (SELECT ${p.tr} IS NULL AND ${rate} IS NULL AS lg) l
    ) k
  ) m`;
}

/**
 * The state a take saw, for the core to replay on (see the binding's `read`): the time queued
 * ahead of now in the row's own scale (`q`; reduced for a row without tier columns) and its tier
 * columns (`qr`, `qt`; NULL without), from the stored columns `[tat, tier_rate, tier_tolerance]`.
 */
function bucketOutput([tat, rate, tol]: readonly string[], ne: string, sn: string): string[] {
  return [
    `(CASE WHEN ${rate} IS NULL THEN GREATEST(${tat}, ${sn}) - ${sn}
    ELSE GREATEST(${tat}, ${ne} * ${rate}) - ${ne} * ${rate} END)::float8`,
    `${rate}::float8`,
    `${tol}::float8`,
  ];
}

/** The answer's columns, named as the binding's `read` reads them. */
const outputs = ['q', 'qr', 'qt'] as const;

/** The statement's time since the epoch in ms (`ne`) and scaled by the rule's reduced rate, $2 (`sn`). */
const prelude = (now: string) =>
  `SELECT a.ne, a.ne * $2::bigint AS sn FROM (SELECT ${now} - ${SCALED_EPOCH_MS} AS ne) a`;

/** The per-take tier columns every take statement's rows carry (NULL: the rule's own parameters). */
const tierColumns = [
  { name: 'tr', type: 'bigint' },
  { name: 'tu', type: 'bigint' },
  { name: 'tt', type: 'bigint' },
] as const;

/** The decision's inputs in a take statement: the rule's values $2, $3, $4 and $6 (gcd), the row `s`. */
const takeInputs: BucketInputs = {
  rate: '$2::bigint',
  unit: '$3::bigint',
  tol: '$4::bigint',
  g: '$6::bigint',
  tr: 's.tr',
  tu: 's.tu',
  tt: 's.tt',
  ne: 's.ne',
  sn: 's.sn',
  cost: 's.cost',
};

/**
 * Whether a take of scaled cost `cu` (SQL `cost`, the take's own) charges a queue `q` of tolerance
 * `bt`: it is a take (not a peek), could ever fit, and fits now or the rule ($5) charges
 * refusals.
 */
const charges = (cost: string, q: string, cu: string, bt: string) =>
  `${cost} > 0 AND ${cu} <= ${bt} AND ($5::boolean OR ${q} + ${cu} <= ${bt})`;

/**
 * The arrival time after `n` takes of scaled cost `cu` on a queue `q` at scaled time `bn`: under
 * penalty ($5) every one is charged, the debt capped at one extra full refill but never below the
 * queue already there (one migrated from a slower tier may be longer), as the core;
 * otherwise as many as fit.
 */
const arrivalAfter = (bn: string, q: string, cu: string, bt: string, n: string) => `${bn} + CASE
      WHEN $5::boolean THEN GREATEST(LEAST(${q} + ${n}::numeric * ${cu}, 2 * ${bt}), ${q})::bigint
      WHEN ${q} + ${cu} <= ${bt} THEN ${q} + LEAST(${n}, (${bt} - ${q}) / ${cu}) * ${cu}
      ELSE ${q} END`;

/**
 * Token bucket (GCRA in scaled integer time, as src/core/rules/token-bucket.ts), one row per bucket in
 * `token_buckets` holding the theoretical arrival time `tat` as a bigint: time since
 * {@link SCALED_EPOCH_MS} in units of 1/rate ms, with limit and period reduced by their gcd (the
 * same exact arithmetic in smaller integers), or, for a state charged under a per-call tier, in
 * the tier's units with the tier in `tier_rate` and `tier_tolerance` (see {@link bucketDerive}).
 * Rule parameters: $1 rule, $2 rate (scaled units per ms), $3 unit (units per token), $4
 * tolerance (burst × unit), $5 penalty, $6 the gcd; per take its tier (`s.tr`, `s.tu`, `s.tt`).
 * Answers the state the take(s) saw (see {@link bucketOutput}); the core replays its decisions
 * on it (now = epoch = 0, so only the exact difference matters).
 */
function ruleSql(names: SchemaNames): RuleSql {
  return {
    table: names.tokenBuckets,
    ruleParams: 6,
    prelude,
    takeColumns: tierColumns,
    stateColumns: ['tat', 'tier_rate', 'tier_tolerance'],
    wasColumns: ['prev', 'was_tier_rate', 'was_tier_tolerance'],
    // A cost above the burst is refused whatever the state; capped at burst + 1 tokens, its
    // scaled size stays within the burst's (which the core keeps below 2^53), so no cost can
    // overflow a bigint here.
    derive: (old) => bucketDerive(takeInputs, old),
    // Charges when it is a take (not a peek), could ever fit (cost <= burst), and fits now or
    // the rule charges refusals.
    writes: (d) => charges('s.cost', `${d}.q`, `${d}.cu`, `${d}.bt`),
    chargeable: (d) => `s.cost > 0 AND ${d}.cu <= ${d}.bt`,
    // The queue may run past the tolerance under penalty: then nothing fits (not a negative count).
    fitting: (d) => `GREATEST((${d}.bt - ${d}.q) / ${d}.cu, 0)`,
    // n takes in order.
    next: (d, n = 's.n') => [
      arrivalAfter(`${d}.bn`, `${d}.q`, `${d}.cu`, `${d}.bt`, n),
      `${d}.wr`,
      `${d}.wt`,
    ],
    output: (state) =>
      bucketOutput(state, 's.ne', 's.sn')
        .map((value, i) => `${value} AS ${outputs[i] as string}`)
        .join(', '),
    adjust: adjustSql,
  };
}

/**
 * The lean take (see `AlgorithmModule.plainTakeSql`): one bucket under the rule's own parameters,
 * decided as {@link ruleSql} decides a state kept in the rule's reduced scale (`lg` in
 * {@link bucketDerive}), in fewer plan nodes: the bucket is read from the statement's snapshot,
 * and only when that read says the take charges is the row upserted, recomputed from the locked
 * row, so refusals still write nothing and take no lock. A row with tier columns (another take's
 * tier) is not decided here: in the snapshot the statement writes nothing, and under the lock
 * (a tiered take came in between) it keeps the arrival time; either way it answers `retry` and
 * the store sends the take statement. Parameters: $1 rule, $2 rate, $3 unit, $4 tolerance, $5
 * penalty, $6 the gcd (unused: the reduced scale needs none), $7 bucket, $8 cost, $9 count of
 * takes; `now` and `onTime` from the store.
 */
function plainTakeSql(names: SchemaNames, now: string, onTime: string): string {
  const table = names.tokenBuckets;
  // The statement's time scaled by the reduced rate, and a take's scaled cost (at most one unit
  // past the burst, as in bucketDerive); both stable within the statement.
  const sn = `((${now}) - ${SCALED_EPOCH_MS}) * $2::bigint`;
  const cu = `LEAST(GREATEST($8::bigint, 1), $4::bigint / $3::bigint + 1) * $3::bigint`;
  // The arrival time after $9 takes on a queue `q` (ruleSql's `next` on the lg path).
  const next = (q: string, scaledNow: string, unit: string) =>
    arrivalAfter(scaledNow, q, unit, '$4::bigint', '$9::bigint');
  const locked = `(GREATEST(t.tat, ${sn}) - ${sn})`;
  return `WITH s AS (
  SELECT x.sn, x.cu, o.tat, o.tier_rate, GREATEST(o.tat, x.sn) - x.sn AS q
  FROM (SELECT ${sn} AS sn, ${cu} AS cu, $6::bigint AS g) x
  LEFT JOIN LATERAL (
    SELECT t.tat, t.tier_rate FROM ${table} t WHERE t.rule = $1::text AND t.bucket = $7::text LIMIT 1
  ) o ON true
),
w AS (
  INSERT INTO ${table} AS t (rule, bucket, tat)
  SELECT $1::text, $7::text, ${next('s.q', 's.sn', 's.cu')} FROM s
  WHERE s.tier_rate IS NULL AND ${charges('$8::bigint', 's.q', 's.cu', '$4::bigint')}
  ON CONFLICT (rule, bucket) DO UPDATE SET
    prev = t.tat, was_tier_rate = t.tier_rate, was_tier_tolerance = t.tier_tolerance,
    tat = CASE WHEN t.tier_rate IS NULL THEN ${next(locked, sn, `(${cu})`)} ELSE t.tat END
  RETURNING t.prev, t.was_tier_rate
),
-- Checked once, after the write (counting w runs it to the end), before the answer.
c AS (SELECT ${onTime} AS on_time FROM (SELECT count(*) FROM w) x)
SELECT $7::text AS bucket, (GREATEST(w.prev, s.sn) - s.sn)::float8 AS q, NULL::float8 AS qr, NULL::float8 AS qt,
  w.was_tier_rate IS NOT NULL AS retry
FROM c CROSS JOIN w CROSS JOIN s
WHERE c.on_time
UNION ALL
SELECT $7::text, s.q::float8, NULL::float8, NULL::float8, s.tier_rate IS NOT NULL
FROM c CROSS JOIN s
WHERE c.on_time AND NOT EXISTS (SELECT 1 FROM w)`;
}

/**
 * A reservation: a take of one bucket whose queue may run the longest wait ($5, in ms) times the
 * decision's rate past the tolerance; a refusal charges nothing, penalty or not (the rule's
 * penalty is not sent). Parameters: $1 rule, $2 rate, $3 unit, $4 tolerance, $5 the wait, $6
 * the gcd; per take its tier. The core replays the decision with `reserve` on the state answered.
 */
function reserveSql(names: SchemaNames): RuleSql {
  const take = ruleSql(names);
  const fits = (d: string) => `${d}.q + ${d}.cu <= ${d}.bt + $5::bigint * ${d}.br`;
  return {
    ...take,
    writes: (d) => `s.cost > 0 AND ${d}.cu <= ${d}.bt AND ${fits(d)}`,
    next: (d) => [
      `${d}.bn + CASE WHEN ${fits(d)} THEN ${d}.q + ${d}.cu ELSE ${d}.q END`,
      `${d}.wr`,
      `${d}.wt`,
    ],
  };
}

/**
 * A refund or settlement of a token bucket, as `TokenBucketRule.adjust`, under the tier the take
 * was made under. Parameters: $1 rule, $2 rate, $3 unit, $4 tolerance, $5 the gcd, $6, $7, $8 the
 * take's tier (NULL: the rule's own). A refund moves the arrival time back by the take's units
 * not refilled yet (`s.left_ms` × rate, at most `-delta` tokens), never before now, and only
 * while the bucket is not full; a charge moves it forward from now or the queue, the debt capped
 * at twice the tolerance (never below the queue already there). Each product is capped first
 * at a size past which the result cannot change (a refund is at most the burst, a charge at most
 * twice the tolerance; a queue is at most 2^52), so none can overflow a bigint. The state is
 * read (and migrated) as a take under the tier reads it.
 */
const adjustSql: AdjustSql = {
  params: 8,
  prelude,
  columns: ['tat', 'tier_rate', 'tier_tolerance'],
  derive: (old) => `SELECT x.bn + x.nq AS n0, x.wr AS n1, x.wt AS n2, x.refunds OR s.delta > 0 AS changed
  FROM (
    SELECT y.*, CASE
      WHEN y.refunds THEN GREATEST(y.q - LEAST(
        LEAST(-s.delta, 2 * y.bt / y.bu + 1) * y.bu,
        LEAST(s.left_ms, 2 * y.bt / y.br + 1) * y.br), 0)
      WHEN s.delta > 0 THEN GREATEST(LEAST(y.q + LEAST(s.delta, 2 * y.bt / y.bu + 1) * y.bu, 2 * y.bt), y.q)
      ELSE y.q END AS nq
    FROM (SELECT d.*, s.delta < 0 AND d.q > 0 AND s.left_ms > 0 AS refunds FROM (${bucketDerive(
      {
        rate: '$2::bigint',
        unit: '$3::bigint',
        tol: '$4::bigint',
        g: '$5::bigint',
        tr: '$6::bigint',
        tu: '$7::bigint',
        tt: '$8::bigint',
        ne: 's.ne',
        sn: 's.sn',
        cost: '1',
      },
      old,
    )}) d) y
  ) x`,
};

/** The decision's inputs of an all-or-nothing entry, from the family's row `e`. */
const entryInputs = (e: string): BucketInputs => ({
  rate: `${e}.rate`,
  unit: `${e}.unit`,
  tol: `${e}.tol`,
  g: `${e}.g`,
  tr: `${e}.tr`,
  tu: `${e}.tu`,
  tt: `${e}.tt`,
  ne: `${e}.ne`,
  sn: `${e}.sn`,
  cost: `${e}.cost`,
});

const family: TakeAllFamily = {
  id: 't',
  snapshot: (names, lockouts) => `ts AS (
  SELECT te.*, o.tat AS old, o.tier_rate AS old_rate, o.tier_tolerance AS old_tol${lockouts ? takeAllLockout.snapshot('o') : ''},
    d.cu <= d.bt AND d.q + d.cu <= d.bt${lockouts ? takeAllLockout.open('te', 'o.blocked_until') : ''} AS fits
  FROM te LEFT JOIN LATERAL (
    SELECT t.tat, t.tier_rate, t.tier_tolerance${lockouts ? takeAllLockout.read('t') : ''} FROM ${names.tokenBuckets} t WHERE t.rule = te.rule AND t.bucket = te.bucket LIMIT 1
  ) o ON true
  CROSS JOIN LATERAL (${bucketDerive(entryInputs('te'), ['o.tat', 'o.tier_rate', 'o.tier_tolerance'])}) d
)`,
  decide: (names, lockouts) => `tl AS (
  SELECT l.rule, l.bucket, l.tat, l.tier_rate, l.tier_tolerance${lockouts ? takeAllLockout.read('l') : ''}
  FROM (SELECT te.rule, te.bucket FROM te WHERE (SELECT sok.ok FROM sok) ORDER BY te.rule COLLATE "C", te.bucket COLLATE "C") e
  CROSS JOIN LATERAL (
    SELECT t.rule, t.bucket, t.tat, t.tier_rate, t.tier_tolerance${lockouts ? takeAllLockout.read('t') : ''} FROM ${names.tokenBuckets} t WHERE t.rule = e.rule AND t.bucket = e.bucket FOR UPDATE OF t
  ) l
),
td AS (
  SELECT y.*, d.*, d.cu <= d.bt AND d.q + d.cu <= d.bt${lockouts ? takeAllLockout.open('y', 'y.blk_until') : ''} AS fits FROM (
    SELECT ts.ord, ts.rule, ts.bucket, ts.cost, ts.rate, ts.unit, ts.tol, ts.g, ts.tr, ts.tu, ts.tt, ts.ne, ts.sn,
      v.old, v.old_rate, v.old_tol${lockouts ? ', ts.forget, ts.blk_now, v.blk_until, v.blk_last' : ''}
    FROM ts LEFT JOIN tl ON tl.rule = ts.rule AND tl.bucket = ts.bucket
    CROSS JOIN LATERAL (SELECT CASE WHEN k.l THEN tl.tat ELSE ts.old END AS old,
      CASE WHEN k.l THEN tl.tier_rate ELSE ts.old_rate END AS old_rate,
      CASE WHEN k.l THEN tl.tier_tolerance ELSE ts.old_tol END AS old_tol${lockouts ? takeAllLockout.pick('k.l', 'tl', 'ts') : ''}
      FROM (SELECT (SELECT sok.ok FROM sok) AS l) k) v
  ) y
  CROSS JOIN LATERAL (${bucketDerive(entryInputs('y'), ['y.old', 'y.old_rate', 'y.old_tol'])}) d
)`,
  write: (names) => `tw AS (
  INSERT INTO ${names.tokenBuckets} AS t (rule, bucket, tat, tier_rate, tier_tolerance, prev, was_tier_rate, was_tier_tolerance)
  SELECT td.rule, td.bucket, td.bn + td.q + td.cu, td.wr, td.wt, td.old, td.old_rate, td.old_tol FROM td
  WHERE (SELECT ok.ok FROM ok) AND td.cost > 0
  ORDER BY td.rule COLLATE "C", td.bucket COLLATE "C"
  ON CONFLICT (rule, bucket) DO UPDATE SET prev = t.tat, was_tier_rate = t.tier_rate, was_tier_tolerance = t.tier_tolerance,
    tat = CASE WHEN (t.tat, t.tier_rate, t.tier_tolerance) IS NOT DISTINCT FROM (excluded.prev, excluded.was_tier_rate, excluded.was_tier_tolerance)
      THEN excluded.tat ELSE ${names.schema}.raise_retry() END,
    tier_rate = excluded.tier_rate, tier_tolerance = excluded.tier_tolerance
  RETURNING 1
)`,
  outputs,
  output: () => bucketOutput(['td.old', 'td.old_rate', 'td.old_tol'], 'td.ne', 'td.sn'),
};

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** The per-take tier values of a take under the rule's own parameters. */
const OWN_TIER: readonly unknown[] = [null, null, null];

/** A per-call tier as the statements take it: rate, unit and tolerance in the core's units. */
function tierValues(limit: CallLimit | undefined): readonly unknown[] {
  if (typeof limit !== 'object') return OWN_TIER;
  return [limit.limit, limit.periodMs, limit.burst * limit.periodMs];
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
  const ownRate = rule.limit;
  const ownTolerance = rule.burst * rule.periodMs;
  const params = [name, rate, unit, tolerance, rule.penalty, g];
  const adjust = [name, rate, unit, tolerance, g];
  const entry = [rate, unit, tolerance, g];
  return {
    ruleParams: () => params,
    adjustParams: (_now, _takenAt, limit) => [...adjust, ...tierValues(limit)],
    reserveParams: (_now, maxWaitMs) => [name, rate, unit, tolerance, maxWaitMs, g],
    entryParams: (_now, limit) => [...entry, ...tierValues(limit)],
    tierValues,
    read(row: PostgresRow, state: BucketState): number {
      const tierRate = row.qr as number | null;
      if (tierRate === null) {
        // Reduced units → the core's units.
        state.value = (row.q as number) * g;
        state.window = 0;
        state.previous = 0;
        return 0;
      }
      // A row with tier columns is in the core's units already; the rule's own rate and
      // tolerance there read as an untagged state, as the core keeps one.
      const tierTolerance = row.qt as number;
      const own = tierRate === ownRate && tierTolerance === ownTolerance;
      state.value = row.q as number;
      state.window = own ? 0 : tierRate;
      state.previous = own ? 0 : tierTolerance;
      return 0;
    },
    // A full bucket (arrival time not after now, in the row's own scale) says nothing a missing
    // row does not.
    prune: (names, batchSize, keep) => ({
      text: `WITH d AS (DELETE FROM ${names.tokenBuckets} WHERE ctid IN (
  SELECT ctid FROM ${names.tokenBuckets}
  WHERE rule = $1 AND tat <= (${storeNow} - ${SCALED_EPOCH_MS}) * COALESCE(tier_rate, $2::bigint)${keep === undefined ? '' : `\n    AND ${keep.sql(4)}`}
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
  plainTakeSql,
  family,
  entryTypes: ['bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint'],
  entrySource: (first) => {
    const p = (i: number, type: string) => `$${first + i}::${type}[]`;
    const arrays = [p(0, 'bigint'), p(1, 'text'), p(2, 'text')];
    for (let i = 3; i < 12; i++) arrays.push(p(i, 'bigint'));
    return `SELECT x.ord, x.rule, x.bucket, x.cost, x.rate, x.unit, x.tol, x.g, x.tr, x.tu, x.tt,
    n.now_ms - ${SCALED_EPOCH_MS} AS ne, (n.now_ms - ${SCALED_EPOCH_MS}) * x.rate AS sn
  FROM unnest(${arrays.join(', ')})
    AS x(ord, rule, bucket, cost, quota, rate, unit, tol, g, tr, tu, tt) CROSS JOIN n`;
  },
};
