/**
 * A token bucket's per-call parameters (a plan's tier from data): a state charged under one tier
 * and read under another keeps both the fraction of its capacity in use and its time until full,
 * to one scaled unit; a spent bucket stays spent and a full one stays full under any tier; and
 * the memory store, which folds
 * forgotten buckets into a summary of one scale, never hands a tiered key back looser than it left.
 * The shared stores hold their translations to the same rule by the conformance suite and their
 * differential tests.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MemoryStore,
  createLimiter,
  tokenBucket,
  type BucketState,
  type BucketTier,
} from '../../src/index.js';
import { MAX_MIGRATED_QUEUE } from '../../src/core/rules/token-bucket.js';

const START = Date.UTC(2026, 0, 15, 12);

/** Tiers with rates, periods and bursts whose products need rounding, and a few large ones. */
const tier: fc.Arbitrary<BucketTier> = fc.record({
  limit: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.constantFrom(997, 1_000_000)),
  periodMs: fc.oneof(fc.integer({ min: 1, max: 120_000 }), fc.constantFrom(3_600_000, 86_400_000)),
  burst: fc.oneof(fc.integer({ min: 1, max: 60 }), fc.constantFrom(1_000, 1_000_000)),
});
const takes = fc.array(
  fc.record({ wait: fc.integer({ min: 0, max: 90_000 }), cost: fc.integer({ min: 1, max: 8 }) }),
  { maxLength: 10 },
);

describe('token bucket: per-call tiers', () => {
  it('a state read under other parameters keeps both the fraction in use and the time until full, to one scaled unit (rounded up, in doubles)', () => {
    // The migration itself (private to the rule): every store repeats its arithmetic.
    type Migrating = {
      queuedUnder(
        s: BucketState,
        now: number,
        epoch: number,
        scale: { rate: number; tolerance: number },
      ): number;
    };
    fc.assert(
      fc.property(tier, tier, takes, fc.boolean(), (a, b, steps, penalty) => {
        const rule = tokenBucket({ limit: 7, period: '1m', burst: 11, penalty });
        const state = rule.initialState(START, START);
        let now = START;
        for (const step of steps) {
          now += step.wait;
          rule.decide(state, { now, epoch: START, name: 'r', cost: step.cost, limit: a, commit: true });
        }
        const tagged = state.window !== 0;
        const rate = tagged ? state.window : 7;
        const tolerance = tagged ? state.previous : 11 * 60_000;
        const queued = Math.max(0, state.value - (now - START) * rate);
        const to = b.burst * b.periodMs;
        const moved = (rule as unknown as Migrating).queuedUnder(state, now, START, {
          rate: b.limit,
          tolerance: to,
        });
        if (tolerance === to && rate === b.limit) {
          assert.equal(moved, queued, 'the same scale: nothing to migrate');
          return;
        }
        // moved/to against queued/tolerance (the fraction in use) and moved/b.limit against
        // queued/rate (the time until full), exactly: rounded up, so not looser than either, at
        // most one scaled unit above the stricter (a product beyond 2^53 rounds in its last bit,
        // which can carry a whole fraction past an integer), and never past the longest queue a
        // migration carries.
        const m = BigInt(moved);
        const byFraction = BigInt(queued) * BigInt(to);
        const byTime = BigInt(queued) * BigInt(b.limit);
        assert.ok(m <= BigInt(MAX_MIGRATED_QUEUE), 'no longer than a store holds exactly');
        if (m < BigInt(MAX_MIGRATED_QUEUE)) {
          assert.ok((m + 1n) * BigInt(tolerance) >= byFraction, 'not looser than the fraction');
          assert.ok((m + 1n) * BigInt(rate) >= byTime, 'not looser than the time until full');
        }
        const stricter = (m - 1n) * BigInt(tolerance) <= byFraction || (m - 1n) * BigInt(rate) <= byTime;
        assert.ok(stricter, 'at most one unit stricter than the stricter of the two');
      }),
      { numRuns: 400 },
    );
  });

  it('a spent bucket is spent and a full one full under any tier; a tier equal to the rule is the rule', () => {
    fc.assert(
      fc.property(tier, tier, fc.integer({ min: 0, max: 10_000 }), (a, b, later) => {
        const rule = tokenBucket({ limit: 5, period: '10s', burst: 9 });
        const state: BucketState = rule.initialState(START, START);
        const full = rule.decide(state, {
          now: START,
          epoch: START,
          name: 'r',
          cost: 0,
          limit: b,
          commit: false,
        });
        assert.deepEqual([full.allowed, full.remaining], [true, b.burst], 'a new key is full under any tier');
        assert.equal(
          rule.decide(state, { now: START, epoch: START, name: 'r', cost: a.burst, limit: a, commit: true })
            .allowed,
          true,
        );
        const spent = rule.decide(
          { ...state },
          { now: START, epoch: START, name: 'r', cost: 0, limit: b, commit: false },
        );
        assert.deepEqual([spent.allowed, spent.remaining], [false, 0], 'spent under A is spent under B');
        // Full again under A once A's time to full has passed: full under B too.
        const refilled = START + Math.ceil((a.burst * a.periodMs) / a.limit) + later;
        const again = rule.decide(
          { ...state },
          { now: refilled, epoch: START, name: 'r', cost: 0, limit: b, commit: false },
        );
        assert.deepEqual([again.allowed, again.remaining], [true, b.burst]);
        const same = { limit: 5, periodMs: 10_000, burst: 9 };
        const copy = { ...state };
        assert.deepEqual(
          rule.decide(copy, { now: START, epoch: START, name: 'r', cost: 1, limit: same, commit: true }),
          rule.decide(
            { ...state },
            { now: START, epoch: START, name: 'r', cost: 1, limit: undefined, commit: true },
          ),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('the memory store never hands a tiered key back looser than it left when a flood of keys pushes it out', () => {
    fc.assert(
      fc.property(
        tier,
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 30_000 }),
        (a, cost, later) => {
          let now = START;
          const clock = () => now;
          const rule = tokenBucket({ limit: 20, period: '1m' });
          const kept = createLimiter({ name: 'tiered', rule, store: new MemoryStore(), clock });
          const flooded = createLimiter({
            name: 'tiered',
            rule,
            store: new MemoryStore({
              maxKeysPerGeneration: 16,
              summaryWidth: 16,
              rememberForgotten: ['tiered'],
            }),
            clock,
          });
          const params = { limit: a.limit, period: `${a.periodMs}ms` as const, burst: a.burst };
          const options = { ...params, cost: Math.min(cost, a.burst) };
          assert.deepEqual(kept.takeSync('victim', options), flooded.takeSync('victim', options));
          for (let i = 0; i < 64; i++) flooded.takeSync(`flood-${i}`);
          now += later;
          for (const under of [params, undefined]) {
            const truth = kept.peekSync('victim', under);
            const recalled = flooded.peekSync('victim', under);
            assert.ok(recalled.remaining <= truth.remaining, 'no more room than the key had');
            if (!truth.allowed) assert.equal(recalled.allowed, false, 'refused where the key was refused');
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
