import type { BlockPolicy } from '../../../core/rules/lockout.js';
import { optionError } from '../../../core/errors.js';
import type { BucketState } from '../../../core/state.js';
import type { PostgresRow } from '../client.js';
import { storeNow } from '../sql-clock.js';
import type { AlgorithmBinding, RuleSql } from './algorithm-module.js';

/**
 * Lockouts (a rule's `block` option, src/core/rules/lockout.ts) on PostgreSQL, once for every algorithm:
 * a layer around an algorithm's statements and binding. The block lives in the bucket's own row
 * (`blocked_until`, ms since the Unix epoch, and `block_ms`, the last block's length; 0 when
 * never blocked, which is what rows from before the lockout migration read as) and is decided
 * and written by the same statement as the bucket, so a take stays one statement.
 *
 * Per take (n of them coalesced on the row, in order), as `decideWithBlock`:
 * - while the statement's time is before `blocked_until`, nothing is written;
 * - otherwise a take the rule can ever admit (`chargeable`) writes: the takes that fit are
 *   charged; when one does not, it starts the next block (charged too under penalty) and every
 *   take after it meets that block, so the bucket is charged for at most the takes that fit plus
 *   one. Without penalty a refusal leaves the bucket's columns exactly as they were, as the core
 *   does (it only writes the block).
 * - The next block's length is the last one's times the factor, on float8 (one multiplication of
 *   doubles, then ceil), capped, as `nextBlockMs`; or the first duration when the last block was
 *   forgotten.
 *
 * Rows a table prunes by their expiry (window_counters) keep it at least until the block is
 * forgotten. The rule's values for the layer follow the algorithm's own parameters: the first
 * block's length, the factor, the longest block and how long a block is remembered.
 *
 * Answers, beside the algorithm's columns, `blk_left` (the block's end minus the statement's
 * time: the binding reads it in the frame the algorithm replays in) and `blk_ms`.
 */

/** The columns holding a lockout, in every table of buckets. */
export const LOCKOUT_COLUMNS = ['blocked_until', 'block_ms'] as const;

/** The columns a write keeps the replaced lockout in. */
const LOCKOUT_WAS_COLUMNS = ['was_blocked_until', 'was_block_ms'] as const;

/** How many values the layer adds after the algorithm's own. */
const LOCKOUT_PARAMS = 4;

/**
 * `sql` with lockouts: the statements of a rule of its algorithm that has a `block` option. The
 * block's columns come first, then the algorithm's, so that each `was` column pairs with its
 * state column by position (an algorithm may keep fewer `was` columns than state columns).
 */
export function lockoutRuleSql(sql: RuleSql): RuleSql {
  const k = sql.ruleParams;
  const [duration, factor, max, forget] = [k + 1, k + 2, k + 3, k + 4];
  const skip = LOCKOUT_COLUMNS.length;
  const own = <T>(list: readonly T[]) => list.slice(skip);
  return {
    table: sql.table,
    ruleParams: k + LOCKOUT_PARAMS,
    prelude: (now) => `SELECT p0.*, ${now} AS blk_now FROM (${sql.prelude(now)}) p0`,
    ...(sql.takeColumns === undefined ? {} : { takeColumns: sql.takeColumns }),
    stateColumns: [...LOCKOUT_COLUMNS, ...sql.stateColumns],
    wasColumns: [...LOCKOUT_WAS_COLUMNS, ...sql.wasColumns],
    // Three layers: the algorithm's derived values (i) and the stored block (b); whether the
    // key is blocked, what the takes do, and the next block's length; then the block written.
    derive: (old) => {
      const [until, last] = old as [string, string];
      return `SELECT j.*,
    CASE WHEN j.blk_starts THEN s.blk_now + j.blk_next ELSE j.blk_until END AS blk_until2,
    CASE WHEN j.blk_starts THEN j.blk_next ELSE j.blk_last END AS blk_last2
  FROM (
    SELECT i.*, ${own(old)
      .map((column, n) => `${column} AS blk_old${n}`)
      .join(', ')}, b.blk_until, b.blk_last,
      s.blk_now >= b.blk_until AND ${sql.writes('i')} AS blk_charges,
      s.blk_now >= b.blk_until AND ${sql.chargeable('i')} AND ${sql.fitting('i')} < s.n AS blk_starts,
      LEAST(s.n, ${sql.fitting('i')} + 1) AS blk_n,
      CASE WHEN b.blk_last > 0 AND s.blk_now < b.blk_until + $${forget}::bigint
        THEN LEAST(ceil(b.blk_last::float8 * $${factor}::float8), $${max}::bigint::float8)::bigint
        ELSE $${duration}::bigint END AS blk_next
    FROM (${sql.derive(own(old))}) i
    CROSS JOIN (SELECT COALESCE(${until}, 0) AS blk_until, COALESCE(${last}, 0) AS blk_last) b
  ) j`;
    },
    writes: (d) => `s.blk_now >= ${d}.blk_until AND ${sql.chargeable(d)}`,
    chargeable: sql.chargeable,
    fitting: sql.fitting,
    next: (d) => {
      const bucket = sql.next(d, `${d}.blk_n`).map((value, n) => {
        const kept = `CASE WHEN ${d}.blk_charges THEN ${value} ELSE ${d}.blk_old${n} END`;
        if (n !== sql.expiry) return kept;
        // NULL (no block to remember) leaves the bucket's own expiry.
        return `GREATEST(${kept}, CASE WHEN ${d}.blk_last2 > 0 THEN ${d}.blk_until2 + $${forget}::bigint END)`;
      });
      return [`${d}.blk_until2`, `${d}.blk_last2`, ...bucket];
    },
    ...(sql.expiry === undefined ? {} : { expiry: sql.expiry + skip }),
    output: (state) =>
      `${sql.output(own(state))}, ${lockoutOutput(state[0] as string, state[1] as string, 's.blk_now')}`,
    // A refund or settlement leaves the block as it is: the algorithm's own statement.
    adjust: sql.adjust,
  };
}

/** The answer's lockout columns (float8) from the stored block and the statement's time. */
function lockoutOutput(until: string, last: string, now: string): string {
  return `(COALESCE(${until}, 0) - ${now})::float8 AS blk_left, COALESCE(${last}, 0)::float8 AS blk_ms`;
}

/**
 * `binding` with lockouts: sends the policy after the algorithm's values, reads the block back
 * in the algorithm's frame, and prunes a row only once its block is forgotten.
 * @throws SluiceError `SLUICE_CONFIG` for a policy that is not whole milliseconds within range
 */
export function lockoutBinding(binding: AlgorithmBinding, policy: BlockPolicy): AlgorithmBinding {
  const { durationMs, factor, maxMs, forgetAfterMs } = policy;
  const whole = (ms: number) => Number.isSafeInteger(ms) && ms >= 0;
  if (!whole(durationMs) || durationMs < 1 || !whole(maxMs) || !whole(forgetAfterMs) || !(factor >= 1))
    throw optionError(
      'PostgresStore rule block',
      'a lockout checked by the rule (whole milliseconds, factor at least 1)',
    );
  const values = [durationMs, factor, maxMs, forgetAfterMs];
  const forget = [forgetAfterMs];
  return {
    ruleParams: (now) => [...binding.ruleParams(now), ...values],
    adjustParams: binding.adjustParams,
    entryParams: binding.entryParams,
    ...(binding.tierValues === undefined ? {} : { tierValues: binding.tierValues }),
    read(row: PostgresRow, state: BucketState): number {
      const now = binding.read(row, state);
      state.blockedUntil = now + (row.blk_left as number);
      state.blockMs = row.blk_ms as number;
      return now;
    },
    prune: (names, batchSize) =>
      binding.prune?.(names, batchSize, {
        sql: (first) => `(block_ms = 0 OR blocked_until + $${first}::bigint <= ${storeNow})`,
        values: forget,
      }),
  };
}

/**
 * The lockout's part of the all-or-nothing statement, for the families (take-all-family.ts) of
 * a statement whose entries include a rule with a lockout. Each entry then carries `forget` (its
 * rule's memory of a block, NULL for a rule without lockout) and `blk_now` (the statement's
 * time); a family reads the block with the bucket, on the snapshot and again on the locked row,
 * and an entry whose key is blocked does not fit, so the group refuses and writes nothing. A
 * group that admits writes no block: admitted takes leave it as it was.
 */
export const takeAllLockout = {
  /** The block's columns of the table's row `alias`, after a column list. */
  read: (alias: string) => `, ${alias}.blocked_until, ${alias}.block_ms`,
  /** The snapshot's block of row `alias` as `blk_until`, `blk_last`, after a column list. */
  snapshot: (alias: string) => `, ${alias}.blocked_until AS blk_until, ${alias}.block_ms AS blk_last`,
  /**
   * The block the group decides on, after a column list: the locked row's (`locked`) when the
   * rows were locked (`whenLocked`), the snapshot's (`snapshot`) otherwise.
   */
  pick: (whenLocked: string, locked: string, snapshot: string) =>
    `, CASE WHEN ${whenLocked} THEN ${locked}.blocked_until ELSE ${snapshot}.blk_until END AS blk_until,
      CASE WHEN ${whenLocked} THEN ${locked}.block_ms ELSE ${snapshot}.blk_last END AS blk_last`,
  /** The condition that entry `entry` is not blocked by the block ending at `until`, after a condition. */
  open: (entry: string, until: string) =>
    ` AND NOT (${entry}.forget IS NOT NULL AND ${entry}.blk_now < COALESCE(${until}, 0))`,
  /** The expiry written for a decided entry `d` (with `blk_until`, `blk_last`, `forget`) whose own is `expiry`. */
  expiry: (d: string, expiry: string) =>
    `GREATEST(${expiry}, CASE WHEN ${d}.blk_last > 0 THEN ${d}.blk_until + ${d}.forget END)`,
  /** An entry source with `forget` (from the array parameter `param`, by `ord`) and `blk_now`. */
  entries: (source: string, param: number) =>
    `SELECT x.*, ($${param}::bigint[])[x.ord::int] AS forget, n.now_ms AS blk_now FROM (${source}) x CROSS JOIN n`,
  /** The answer's lockout columns of a decided entry `d`. */
  output: (d: string) => [
    `(COALESCE(${d}.blk_until, 0) - ${d}.blk_now)::float8`,
    `COALESCE(${d}.blk_last, 0)::float8`,
  ],
  /** The answer's lockout column names. */
  outputs: ['blk_left', 'blk_ms'] as const,
};
