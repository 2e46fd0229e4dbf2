/**
 * Switching a key between a token bucket's per-call tiers (a plan's rate, period and burst from
 * data) never adds tokens: over any interval, a key is never admitted more than the largest burst
 * of the tiers it was admitted under in that interval plus what the fastest of them refills in
 * that time. (Not the most generous tier alone: a bucket refilled under a fast tier moves to a
 * slow one as refilled, since the state keeps no history.) Checked by property over random sequences
 * of tiers, costs and waits on the memory store with an injected clock, and on the plan switch
 * that used to multiply a bucket (a big daily plan alternating with a small per-minute one).
 * test/stores/redis-tier-switch.test.ts and postgres-tier-switch.test.ts replay the same kind of
 * sequences on the shared stores and expect the memory store's decisions, exactly.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MemoryStore, createLimiter, tokenBucket, type BucketTier } from '../../src/index.js';
import {
  SWITCH_START,
  mostGenerousAlone,
  overAdmitted,
  replaySteps,
  tierSequence,
  type Admitted,
} from '../support/tier-switch.js';

/** The rule's own parameters: 10 a minute, burst 10. */
const own: BucketTier = { limit: 10, periodMs: 60_000, burst: 10 };

describe('token bucket: switching tiers never adds tokens', () => {
  it('over any interval a key is admitted no more than the largest burst of its tiers plus the fastest refill', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), tierSequence, async (penalty, steps) => {
        const buckets = new MemoryStore().bind('plans', tokenBucket({ limit: 10, period: '1m', penalty }));
        const { admitted } = await replaySteps(buckets, 'key', steps, own);
        assert.equal(overAdmitted(admitted), undefined);
      }),
      { numRuns: 300 },
    );
  });

  it('alternating 900 takes under a daily plan with one take under a per-minute plan every 61 s admits no more in an hour than the daily plan alone', () => {
    let now = SWITCH_START;
    const limiter = createLimiter({
      name: 'plans',
      rule: tokenBucket({ limit: 10, period: '1m' }),
      store: new MemoryStore(),
      clock: () => now,
    });
    const daily = { limit: 1_000, period: '1d', burst: 1_000 } as const;
    const minute = { limit: 10, period: '1m', burst: 10 } as const;
    const admitted: Admitted[] = [];
    for (; now - SWITCH_START <= 3_600_000; now += 61_000) {
      for (let i = 0; i < 900; i++) {
        if (limiter.takeSync('key', daily).allowed)
          admitted.push({ at: now, cost: 1, tier: { limit: 1_000, periodMs: 86_400_000, burst: 1_000 } });
      }
      if (limiter.takeSync('key', minute).allowed)
        admitted.push({ at: now, cost: 1, tier: { limit: 10, periodMs: 60_000, burst: 10 } });
    }
    // The daily plan alone over the same hour (59 rounds of 61 s): its burst of 1,000, then one
    // every 86.4 s.
    const alone = mostGenerousAlone([{ limit: 1_000, periodMs: 86_400_000, burst: 1_000 }], 59 * 61_000);
    assert.equal(alone, 1_041);
    assert.equal(admitted.length, alone, 'the daily plan alone, and nothing from the switches');
    assert.equal(overAdmitted(admitted), undefined);
  });
});
