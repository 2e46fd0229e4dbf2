import type { SchemaNames } from '../schema-names.js';

/**
 * A table's part of the all-or-nothing statement (take-all.ts), shared by the kinds whose rows
 * live in that table, so that its rows are locked in one pass in one order whatever kinds an
 * entry list mixes (two statements locking one table's rows in different orders could deadlock).
 *
 * Its kinds' entries arrive as the rows of the CTE `<id>e`. The family then defines, in order:
 * `<id>s` (the snapshot's state of every entry, with boolean `fits`); the rows locked and decided
 * again as `<id>d` (with `fits`), locked only when every entry fit the snapshot (`sok.ok`); the
 * write `<id>w` (RETURNING 1), only when every entry fits the locked rows (`ok.ok`). A row that
 * was missing when read but inserted concurrently before the write raises
 * serialization_failure, and the store retries the statement.
 *
 * With `lockouts` (some entry's rule has a lockout: see `takeAllLockout` in lockout.ts), every
 * entry also carries `forget` and `blk_now`, a blocked entry does not fit, and `<id>d` has the
 * block it decided on as `blk_until` and `blk_last`, with `forget` and `blk_now`.
 */
export interface TakeAllFamily {
  /** The CTE prefix, e.g. `t`; unique per family. */
  readonly id: string;
  /** The CTE `<id>s`. */
  snapshot(names: SchemaNames, lockouts: boolean): string;
  /** The CTEs ending with `<id>d`. */
  decide(names: SchemaNames, lockouts: boolean): string;
  /** The CTE `<id>w`. */
  write(names: SchemaNames, lockouts: boolean): string;
  /** The answer's columns of this family's entries. */
  readonly outputs: readonly string[];
  /** The answer's values from `<id>d` (float8), one per {@link outputs} (its `ord` is `<id>d.ord`). */
  output(): readonly string[];
}
