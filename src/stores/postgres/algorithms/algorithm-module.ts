import type { CallLimit, Rule } from '../../../core/rules/rule.js';
import type { BucketState } from '../../../core/state.js';
import type { SchemaNames } from '../schema-names.js';
import type { PostgresRow } from '../client.js';
import type { TakeAllFamily } from './take-all-family.js';

/**
 * The SQL of one rule's statements, as the statement builder (statements.ts) assembles them:
 * one statement reads each bucket's row, decides whether the take(s) charge, upserts the rows
 * that do and answers the state every take saw. Every fragment reads the per-take inputs as
 * `s.bucket`, `s.cost`, `s.n` (takes coalesced on the row), `s.quota` (the per-call or the rule's
 * limit), and the per-statement values of {@link prelude} as `s.<column>`.
 */
export interface RuleSql {
  /** The qualified table holding the rule's rows, keyed by (rule, bucket). */
  readonly table: string;
  /** How many parameters the rule's own values take ($1 is the rule's name), before the per-take ones. */
  readonly ruleParams: number;
  /** Per-statement values from the statement's time `now` (a SQL expression in ms). */
  prelude(now: string): string;
  /**
   * Per-take inputs of the algorithm's own beside bucket, cost, n and quota (a token bucket's
   * per-call tier), read as `s.<name>`: sent after the quota, as scalars or arrays like it, with
   * the values of {@link AlgorithmBinding.tierValues}. None when absent.
   */
  readonly takeColumns?: readonly { readonly name: string; readonly type: string }[];
  /** The columns holding the state, in the order {@link next} answers them. */
  readonly stateColumns: readonly string[];
  /** The columns a write keeps the replaced state in, one per state column. */
  readonly wasColumns: readonly string[];
  /**
   * Values derived from a stored state (`old`: one expression per state column, NULL when the
   * bucket was never seen) as a FROM-less SELECT list; decided on the snapshot and again on the
   * row a write locked.
   */
  derive(old: readonly string[]): string;
  /** Whether the take(s) charge, from derived values under the alias `d`. */
  writes(d: string): string;
  /**
   * Whether a take is one the rule can ever admit: not a peek, and not a cost beyond what the
   * rule holds (a refusal "for good"), from derived values under the alias `d`. Only such a take
   * is charged, and only its refusal starts a lockout.
   */
  chargeable(d: string): string;
  /** How many takes of `s.cost` fit the stored state now, one after the other (a bigint, at least 0). */
  fitting(d: string): string;
  /**
   * The new state (one expression per state column) from derived values under the alias `d`,
   * after `n` takes in order (a bigint expression; the takes coalesced on the row, `s.n`, unless
   * a lockout stops them earlier).
   */
  next(d: string, n?: string): readonly string[];
  /**
   * The state column holding the row's expiry (ms since the Unix epoch), when the table is
   * pruned by it whatever the rule: a lockout pushes it out to the end of what it remembers.
   */
  readonly expiry?: number;
  /** The answer's columns (`AS` named, float8) from the state the take saw. */
  output(state: readonly string[]): string;
  /** The refund and settlement statement's part (the same for a rule with a lockout). */
  readonly adjust: AdjustSql;
}

/**
 * The SQL of a refund or settlement (`RuleBuckets.adjust`), as the statement builder assembles
 * it: one statement locks the bucket's row and writes the state the core rule's `adjust` would
 * leave, inserting a row only for a charge (a refund of a bucket never seen gives nothing back).
 * A lockout's columns are never read nor written: a refund does not lift a block.
 *
 * Every fragment reads the call's inputs as `s.delta` (units: below 0 a refund, above 0 a
 * charge), `s.taken_ms` (the take's time, ms on the statement's clock), `s.left_ms` (ms from the
 * statement's time to the take's `until`), and the per-statement values of {@link prelude} as
 * `s.<column>`.
 */
export interface AdjustSql {
  /** How many parameters the rule's own values take ($1 is the rule's name), before the per-call ones. */
  readonly params: number;
  /** Per-statement values from the statement's time `now` (a SQL expression in ms). */
  prelude(now: string): string;
  /** The state columns the statement writes (bigint), in the order {@link derive} answers them. */
  readonly columns: readonly string[];
  /**
   * The state after the refund or charge, from a stored state (`old`: one expression per
   * column, NULL when the bucket has no row), as a FROM-less SELECT list: columns `n0`, `n1`, …
   * (one per {@link columns}, never NULL) and `changed`, whether the state moves (not true when
   * nothing is to be given back: then nothing is written).
   */
  derive(old: readonly string[]): string;
}

/**
 * What binding a rule to a store makes: the values a statement sends for it and how a returned
 * row reads back as the core's state.
 */
export interface AlgorithmBinding {
  /** The rule's parameters for a statement deciding at `now` (ms): $1 is always the rule's name. */
  ruleParams(now: number): unknown[];
  /**
   * The rule's parameters for a refund or settlement ({@link AdjustSql}) deciding at `now` of a
   * take made at `takenAt` (both ms, as the statement is expected to see them) under the per-call
   * `limit` (a token bucket's tier): $1 is always the rule's name. A lockout adds none.
   */
  adjustParams(now: number, takenAt: number, limit?: CallLimit): unknown[];
  /**
   * The rule's parameters for a reservation ({@link AlgorithmModule.reserveSql}) deciding at
   * `now` with a longest wait of `maxWaitMs`: $1 is always the rule's name. Present when the
   * module reserves.
   */
  reserveParams?(now: number, maxWaitMs: number): unknown[];
  /**
   * The kind's own values of an all-or-nothing entry (after ord, rule, bucket, cost, limit)
   * under the entry's per-call `limit`.
   */
  entryParams(now: number, limit?: CallLimit): readonly unknown[];
  /**
   * A take's values of the columns {@link RuleSql.takeColumns} under its per-call `limit`
   * (checked by the store). Present exactly when the algorithm's SQL has such columns.
   */
  tierValues?(limit: CallLimit | undefined): readonly unknown[];
  /**
   * Writes the state a returned row reports into `state` and answers the time to decide at, in
   * the frame `rule.decide` reads that state in (the store passes epoch 0).
   */
  read(row: PostgresRow, state: BucketState): number;
  /**
   * The rule's table, for pruning: one statement and its values that deletes at most `batchSize`
   * rows the rule no longer needs, or undefined when the kind's family prunes its table whole.
   * `keep`, when given, is a condition every deleted row must also meet (a lockout's: its block
   * is forgotten), reading its own values from parameter `first` on. Absent, as undefined: a
   * kind whose family prunes its table whole (`window_counters`) needs none.
   */
  prune?(names: SchemaNames, batchSize: number, keep?: PruneCondition): PruneStatement | undefined;
  /**
   * The time zone in whose days the migration that moved calendar quotas to the window table
   * carries this rule's earlier counts: a daily calendar quota's zone; absent for every other
   * rule.
   */
  readonly carriedTimeZone?: string;
}

/** A prune statement and its values. */
export interface PruneStatement {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** A condition on a row to delete, added to a rule's prune statement. */
export interface PruneCondition {
  /** The SQL condition, its values numbered from `first`. */
  sql(first: number): string;
  readonly values: readonly unknown[];
}

/** One algorithm on PostgreSQL, found by the rule's `kind`. */
export interface AlgorithmModule {
  readonly kind: string;
  /**
   * Checks that the store can keep `rule` exactly and makes its binding.
   * @throws SluiceError `SLUICE_CONFIG` for a rule of this kind the store cannot keep exactly
   */
  bind(name: string, rule: Rule): AlgorithmBinding;
  /** The SQL of the rule's statements. */
  ruleSql(names: SchemaNames): RuleSql;
  /**
   * The SQL of a reservation (`RuleBuckets.reserve`) as a take's statement: a take of one bucket
   * admitted with its slot up to the longest wait ahead, a refusal charging nothing. Only a
   * module whose rule reserves (the token bucket) has it; never with a lockout.
   */
  reserveSql?(names: SchemaNames): RuleSql;
  /**
   * A leaner statement for the most common take: one bucket, the rule's own parameters, no
   * lockout, no account. It decides as the take statement does on a state kept in the rule's own
   * parameters, and answers `retry` true where it cannot (a state another take left under a
   * per-call tier): the store then sends the take statement instead. Parameters: the rule's
   * (`ruleSql`'s `ruleParams` of them), then bucket, cost, count of takes; the store numbers what
   * follows and hands over its SQL: `now`, the time the statement decides at, and `onTime`, the
   * deadline's check (true, or the statement fails), to run once the write is done. Answers one
   * row as the take statement, with `retry`. Only a module that has it (the token bucket).
   */
  plainTakeSql?(names: SchemaNames, now: string, onTime: string): string;
  /** The table family this kind's rows live in, for the all-or-nothing statement. */
  readonly family: TakeAllFamily;
  /** SQL types of {@link AlgorithmBinding.entryParams}, each sent as an array. */
  readonly entryTypes: readonly string[];
  /**
   * The kind's entries of an all-or-nothing take as the family's rows: a SELECT over
   * `unnest` of the arrays from parameter `first` (ord, rule, bucket, cost, limit, then
   * {@link entryTypes}), with the statement's time as `n.now_ms`.
   */
  entrySource(first: number, names: SchemaNames): string;
}
