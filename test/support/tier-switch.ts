/**
 * Random sequences of takes under a token bucket's per-call tiers, and what they may admit over
 * an interval (the most generous tier alone; the largest burst plus the fastest refill): shared by the memory property test and the replays
 * on Redis and PostgreSQL, which must decide the same sequences alike.
 */
import fc from 'fast-check';
import type { BucketTier, Decision } from '../../src/index.js';

/** The injected clock's start. */
export const SWITCH_START = Date.UTC(2026, 0, 15, 12);

/** One take: the ms waited since the last, its cost, and its tier (none: the rule's own). */
export interface SwitchStep {
  readonly wait: number;
  readonly cost: number;
  readonly tier: BucketTier | undefined;
}

/** An admitted take: when, how much, under which tier. */
export interface Admitted {
  readonly at: number;
  readonly cost: number;
  readonly tier: BucketTier;
}

/**
 * What a token bucket of this tier admits at most over a closed interval of `ms`, alone: its
 * burst, then one token per `periodMs / limit` ms (GCRA: n takes fit while n × period ≤
 * burst × period + ms × limit).
 */
export function aloneOver(tier: BucketTier, ms: number): number {
  return tier.burst + Math.floor((ms * tier.limit) / tier.periodMs);
}

/** The most any of `tiers` admits alone over `ms`. */
export function mostGenerousAlone(tiers: readonly BucketTier[], ms: number): number {
  let most = 0;
  for (const tier of tiers) {
    const alone = aloneOver(tier, ms);
    if (alone > most) most = alone;
  }
  return most;
}

/** Plans with slow and fast refills, small and large bursts, and the ones that used to multiply. */
const tier: fc.Arbitrary<BucketTier> = fc.oneof(
  fc.record({
    limit: fc.integer({ min: 1, max: 60 }),
    periodMs: fc.integer({ min: 500, max: 120_000 }),
    burst: fc.integer({ min: 1, max: 40 }),
  }),
  fc.constantFrom(
    { limit: 1_000, periodMs: 86_400_000, burst: 1_000 },
    { limit: 10, periodMs: 60_000, burst: 10 },
    { limit: 100, periodMs: 3_600_000, burst: 200 },
    { limit: 7, periodMs: 3_001, burst: 3 },
  ),
);

/**
 * Two to four plans, and up to 60 takes each under one of them or the rule's own (10 a minute,
 * burst 10), with waits from none to a few minutes and costs from 1 to past most bursts.
 */
export const tierSequence: fc.Arbitrary<SwitchStep[]> = fc
  .array(tier, { minLength: 2, maxLength: 4 })
  .chain((plans) =>
    fc.array(
      fc.record({
        wait: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 1, max: 10_000 }),
          fc.integer({ min: 1, max: 300_000 }),
        ),
        cost: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 1_000 })),
        tier: fc.oneof(fc.constantFrom(...plans), fc.constant(undefined)),
      }),
      { maxLength: 60 },
    ),
  );

/** What a replay compares, decision by decision. */
export type SwitchView = readonly [boolean, number, number, number, number, number];

/** The take a replay needs of a store's bound rule (memory, Redis, PostgreSQL alike). */
export interface SwitchBuckets {
  take(key: string, cost: number, now: number, limit: BucketTier | undefined): Decision | Promise<Decision>;
}

/**
 * Runs the steps on one key of bound buckets with the clock the steps give (from
 * {@link SWITCH_START}), and answers every decision's allowed, limit, capacity, remaining,
 * retryAfterMs and resetMs, and the admitted takes.
 */
export async function replaySteps(
  buckets: SwitchBuckets,
  key: string,
  steps: readonly SwitchStep[],
  own: BucketTier,
): Promise<{ views: SwitchView[]; admitted: Admitted[] }> {
  let now = SWITCH_START;
  const views: SwitchView[] = [];
  const admitted: Admitted[] = [];
  for (const step of steps) {
    now += step.wait;
    const d = await buckets.take(key, step.cost, now, step.tier);
    views.push([d.allowed, d.limit, d.capacity, d.remaining, d.retryAfterMs, d.resetMs]);
    if (d.allowed) admitted.push({ at: now, cost: step.cost, tier: step.tier ?? own });
  }
  return { views, admitted };
}

/**
 * The largest burst of `tiers` plus what the fastest of them refills over `ms`: the bound the
 * migration keeps over any interval (see {@link overAdmitted}).
 */
export function largestBurstFastestRate(tiers: readonly BucketTier[], ms: number): number {
  let burst = 0;
  let refill = 0;
  for (const tier of tiers) {
    if (tier.burst > burst) burst = tier.burst;
    const refilled = Math.floor((ms * tier.limit) / tier.periodMs);
    if (refilled > refill) refill = refilled;
  }
  return burst + refill;
}

/**
 * The first interval (between two admitted takes) where more was admitted than the largest
 * burst of the tiers admitted in it plus what the fastest of them refills over it.
 */
export function overAdmitted(admitted: readonly Admitted[]): string | undefined {
  for (let i = 0; i < admitted.length; i++) {
    let sum = 0;
    const tiers: BucketTier[] = [];
    for (let j = i; j < admitted.length; j++) {
      const take = admitted[j]!;
      sum += take.cost;
      tiers.push(take.tier);
      const bound = largestBurstFastestRate(tiers, take.at - admitted[i]!.at);
      if (sum > bound)
        return `${sum} admitted from take ${i} to ${j}, more than the largest burst and fastest refill, ${bound}`;
    }
  }
  return undefined;
}
