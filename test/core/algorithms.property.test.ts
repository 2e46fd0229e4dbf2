/**
 * Property tests: random sequences of takes, costs and clock advances, compared step by step
 * with naive reference models written independently of the implementation. Every disagreement
 * is a failure (fast-check shrinks it to a minimal sequence).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MemoryStore,
  calendarQuota,
  createLimiter,
  manualClock,
  tokenBucket,
  type Decision,
} from '../../src/index.js';

/**
 * A literal token counter with fractional refill. To stay exact it counts in units of 1/period
 * of a token: a millisecond refills `limit` units, a token is `period` units.
 */
class ReferenceBucket {
  private units: number;
  private last: number;
  constructor(
    private readonly limit: number,
    private readonly period: number,
    private readonly burst: number,
    start: number,
  ) {
    this.units = burst * period;
    this.last = start;
  }
  take(
    now: number,
    cost: number,
  ): { allowed: boolean; remaining: number; retryAfterMs: number; resetMs: number } {
    const capacity = this.burst * this.period;
    this.units = Math.min(capacity, this.units + (now - this.last) * this.limit);
    this.last = now;
    const asked = cost === 0 ? 1 : cost;
    if (asked > this.burst) {
      // Refused for good without reading the bucket (no store is asked): it reports an untouched
      // one, except that nothing remains (never more than the bucket may hold).
      return { allowed: false, remaining: 0, retryAfterMs: Infinity, resetMs: 0 };
    }
    if (this.units >= asked * this.period) {
      if (cost > 0) this.units -= cost * this.period;
      return {
        allowed: true,
        remaining: Math.floor(this.units / this.period),
        retryAfterMs: 0,
        resetMs: Math.ceil((capacity - this.units) / this.limit),
      };
    }
    return {
      allowed: false,
      remaining: Math.floor(this.units / this.period),
      retryAfterMs: Math.ceil((asked * this.period - this.units) / this.limit),
      resetMs: Math.ceil((capacity - this.units) / this.limit),
    };
  }
}

/** A literal day counter: a map from the local calendar date (as the platform prints it) to a count. */
class ReferenceDayCounter {
  private readonly counts = new Map<string, number>();
  private readonly format: Intl.DateTimeFormat;
  constructor(
    private readonly limit: number,
    timeZone: string,
  ) {
    this.format = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    });
  }
  date(t: number): string {
    return this.format.format(t);
  }
  /** The first instant after `now` on another local date, by bisection over 27 hours. */
  nextDay(now: number): number {
    const today = this.date(now);
    let lo = now;
    let hi = now + 27 * 3_600_000;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.date(mid) === today) lo = mid;
      else hi = mid;
    }
    return hi;
  }
  take(
    now: number,
    cost: number,
    limit = this.limit,
  ): { allowed: boolean; remaining: number; resetMs: number } {
    const day = this.date(now);
    const used = this.counts.get(day) ?? 0;
    const asked = cost === 0 ? 1 : cost;
    const resetMs = this.nextDay(now) - now;
    // Refused for good without reading the count (no store is asked): it reports an untouched
    // day, except that nothing remains (never more than the day may have left).
    if (asked > limit) return { allowed: false, remaining: 0, resetMs };
    if (used + asked <= limit) {
      if (cost > 0) this.counts.set(day, used + cost);
      return { allowed: true, remaining: limit - used - cost, resetMs };
    }
    return { allowed: false, remaining: Math.max(0, limit - used), resetMs };
  }
}

const step = fc.record({
  advanceMs: fc.oneof(
    fc.constant(0),
    fc.integer({ min: 1, max: 1000 }),
    fc.integer({ min: 1, max: 4_000_000 }),
  ),
  cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 12 })),
});

describe('token bucket against a literal counter', () => {
  it('every decision agrees with the reference, step by step', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 7_200_000 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 0, max: 2_000_000_000_000 }),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        (limit, period, burst, start, steps) => {
          const clock = manualClock(start);
          const limiter = createLimiter({
            name: 'p',
            rule: tokenBucket({ limit, period: `${period}ms`, burst }),
            store: new MemoryStore(),
            clock,
          });
          const reference = new ReferenceBucket(limit, period, burst, start);
          for (const { advanceMs, cost } of steps) {
            if (advanceMs > 0) clock.advance(advanceMs);
            const actual: Decision = limiter.takeSync('k', { cost });
            const expected = reference.take(clock(), cost);
            assert.deepEqual(
              {
                allowed: actual.allowed,
                remaining: actual.remaining,
                retryAfterMs: actual.retryAfterMs,
                resetMs: actual.resetMs,
              },
              expected,
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('calendar quota against a literal day counter', () => {
  it('every decision agrees with the reference, across zones with DST and midnight changes', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(
          'UTC',
          'Europe/Berlin',
          'America/New_York',
          'America/Santiago',
          'America/Havana',
          'Asia/Kolkata',
          'Pacific/Chatham',
        ),
        fc.integer({ min: 1, max: 20 }),
        // Around the 2026 DST changes of the zones above, plus anywhere in 2020-2030.
        fc.oneof(
          fc.constantFrom(
            Date.UTC(2026, 2, 28, 20),
            Date.UTC(2026, 9, 24, 20),
            Date.UTC(2026, 2, 7, 20),
            Date.UTC(2026, 3, 4, 20),
            Date.UTC(2026, 8, 5, 20),
            Date.UTC(2026, 9, 31, 20),
            Date.UTC(2026, 2, 7, 23),
          ),
          fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }),
        ),
        fc.array(
          fc.record({
            advanceMs: fc.oneof(
              fc.integer({ min: 0, max: 60_000 }),
              fc.integer({ min: 0, max: 30 * 3_600_000 }),
            ),
            cost: fc.integer({ min: 0, max: 6 }),
            perCallLimit: fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        (timeZone, limit, start, steps) => {
          const clock = manualClock(start);
          const limiter = createLimiter({
            name: 'q',
            rule: calendarQuota({ limit, timeZone }),
            store: new MemoryStore(),
            clock,
          });
          const reference = new ReferenceDayCounter(limit, timeZone);
          for (const { advanceMs, cost, perCallLimit } of steps) {
            clock.advance(advanceMs + 1);
            const actual = limiter.takeSync(
              'k',
              perCallLimit === undefined ? { cost } : { cost, limit: perCallLimit },
            );
            const expected = reference.take(clock(), cost, perCallLimit);
            assert.deepEqual(
              { allowed: actual.allowed, remaining: actual.remaining, resetMs: actual.resetMs },
              expected,
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
