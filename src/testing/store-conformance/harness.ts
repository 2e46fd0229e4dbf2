/**
 * What the store conformance suite's sections share: the target a store supplies, and the suite
 * built from it (a fresh store and manual clock per test, limiters on them, and the check that
 * skips a test the store cannot run, saying why).
 */
import assert from 'node:assert/strict';
import type { CalendarUnit } from '../../core/calendar.js';
import { manualClock, type ManualClock } from '../../core/clock.js';
import type { Decision } from '../../core/decision.js';
import type { Duration } from '../../core/duration.js';
import { ruleEntries, ruleKinds } from '../../core/rules/index.js';
import type { Rule } from '../../core/rules/rule.js';
import { createLimiter, type Limiter } from '../../limiter/limiter.js';
import type { Store } from '../../stores/contract/store.js';

/**
 * What the suite needs from a store under test: how to make a fresh one, and which rules it
 * supports.
 *
 * @default every registered rule kind and calendar period; no setup, teardown or release
 * @example
 * storeConformance({ name: 'my store', create: async () => new MyStore({ timeSource: 'app' }) });
 */
export interface ConformanceTarget {
  /** Shown in test titles, e.g. "memory", "redis (ioredis)". */
  readonly name: string;
  /** `false` to run; otherwise the reason the whole suite is skipped (written, never silent). */
  readonly skip?: string | false;
  /** Runs once before the suite (connect, create a schema). */
  setup?(): Promise<void>;
  /** A store whose buckets are all empty, deciding at the caller's `now`. */
  create(): Promise<Store>;
  /** Runs once after the suite (drop keys, close connections). */
  teardown?(): Promise<void>;
  /** Per-test cleanup of a store made by `create`. */
  release?(store: Store): Promise<void>;
  /**
   * The limiters' store timeout. The suite fires 1,000 takes at once, which a remote store under
   * a loaded CI machine may not answer within the 100 ms default.
   * @default "100ms"
   */
  readonly timeout?: Duration;
  /**
   * The rule kinds the store supports (`rule.kind`, as the rule registry names them). Tests that
   * need another kind are skipped, saying so.
   * @default every kind of the rule registry
   */
  readonly kinds?: readonly string[];
  /**
   * The calendar quota periods (`per`) the store supports. Tests of other periods are skipped,
   * saying so.
   * @default ["hour", "day", "week", "month"]
   */
  readonly calendarPeriods?: readonly CalendarUnit[];
  /**
   * Whether the store keeps lockouts (a rule's `block` option). Tests of lockouts are skipped,
   * saying so, when false.
   * @default true
   */
  readonly lockouts?: boolean;
  /**
   * Whether the store settles takes after the fact (`RuleBuckets.adjust`: refunds and
   * settlements). Tests of them are skipped, saying so, when false.
   * @default true
   */
  readonly refunds?: boolean;
  /**
   * Whether the store keeps leases (concurrency limits). Tests of them are skipped, saying so,
   * when false, and for a store without `bindLeases`.
   * @default true
   */
  readonly leases?: boolean;
  /**
   * Whether the store reserves slots (`RuleBuckets.reserve`, which `limiter.takeOrWait` needs).
   * Tests of it are skipped, saying so, when false.
   * @default true
   */
  readonly reservations?: boolean;
  /**
   * Whether the store takes a token bucket's per-call rate, period and burst (a `BucketTier`:
   * `limiter.take(key, { limit, period, burst })`). Tests of them are skipped, saying so, when
   * false.
   * @default true
   */
  readonly tiers?: boolean;
}
export const HOUR = 3_600_000;
export const MINUTE = 60_000;
export const DAY = 86_400_000;
/** Every kind of the rule registry: what a target supports unless it says otherwise. */
export const allKinds: readonly string[] = ruleKinds;

/**
 * One typical rule of every registered kind (the registry's example: ten a minute or thirty a
 * day), so that the tests of every kind alike reach a kind added later without naming it.
 */
export function exampleRules(): Rule[] {
  return ruleEntries.map((entry) => entry.create(entry.example));
}
const allPeriods: readonly CalendarUnit[] = ['hour', 'day', 'week', 'month'];

/** The `skip` option of a test (`false` to run it), or of a group of tests alike. */
export interface SkipOption {
  readonly skip?: string | false;
}

/**
 * What every section of the suite works with. `store` and `clock` are the running test's: each
 * test calls `fresh()` first, which replaces both.
 */
export interface StoreSuite {
  readonly target: ConformanceTarget;
  readonly store: Store;
  readonly clock: ManualClock;
  /** A fresh store and clock (at `start`), so that no state leaks between tests. */
  fresh(start?: number): Promise<void>;
  /** Hands the last test's store to the target's `release`. */
  release(): Promise<void>;
  /** A limiter on the fresh store and clock, under a limit name no other test used. */
  limiter(rule: Rule, name?: string, on?: ManualClock | (() => number)): Limiter;
  /** `n` takes one after another. */
  takeMany(l: Limiter, key: string, n: number, cost?: number): Promise<Decision[]>;
  allowedCount(ds: readonly Decision[]): number;
  /** The skip option of a test that needs these rule kinds and calendar periods. */
  needs(required: readonly string[], per?: readonly CalendarUnit[]): { skip: string | false };
  /**
   * The skip option of tests of something the target may turn off: skipped (saying that the
   * target `lacks` it) when `supported` is false, run when it is true or left out.
   */
  unless(supported: boolean | undefined, lacks: string): { skip: string | false };
  /** A number no other limit name of the suite used. */
  nextId(): number;
}

/**
 * Builds the suite's state for one target (inside its `describe`).
 *
 * @example
 * const suite = createStoreSuite(target);
 * tokenBucketTests(suite);
 */
export function createStoreSuite(target: ConformanceTarget): StoreSuite {
  let store: Store | undefined;
  let clock: ManualClock;
  let counter = 0;
  const current = (): Store => {
    assert.ok(store !== undefined, 'each test calls fresh() before it uses the store');
    return store;
  };
  // A test that needs a rule kind or a calendar period the store does not support is skipped
  // with the reason written out, never silently.
  const kinds = target.kinds ?? allKinds;
  const periods = target.calendarPeriods ?? allPeriods;
  return {
    target,
    get store() {
      return current();
    },
    get clock() {
      return clock;
    },
    fresh: async (start = Date.UTC(2026, 0, 15, 12)) => {
      await release();
      store = await target.create();
      clock = manualClock(start);
    },
    release,
    // Without a target timeout the limiter takes the store's own bound (or 100 ms without one).
    limiter: (rule, name = `r${++counter}`, on = clock) =>
      createLimiter({
        name,
        rule,
        store: current(),
        clock: on,
        ...(target.timeout === undefined ? {} : { timeout: target.timeout }),
      }),
    takeMany: async (l, key, n, cost = 1) => {
      const out: Decision[] = [];
      for (let i = 0; i < n; i++) out.push(await l.take(key, { cost }));
      return out;
    },
    allowedCount: (ds) => ds.filter((d) => d.allowed).length,
    needs: (required, per = []) => {
      const missing = required.filter((kind) => !kinds.includes(kind));
      if (missing.length > 0) return { skip: `${target.name} does not support ${missing.join(', ')} rules` };
      const missingPeriods = per.filter((unit) => !periods.includes(unit));
      if (missingPeriods.length > 0)
        return { skip: `${target.name} does not support calendar quotas per ${missingPeriods.join(', ')}` };
      return { skip: false };
    },
    unless: (supported, lacks) => ({ skip: supported === false ? `${target.name} ${lacks}` : false }),
    nextId: () => ++counter,
  };

  async function release(): Promise<void> {
    if (store !== undefined) await target.release?.(store);
  }
}
