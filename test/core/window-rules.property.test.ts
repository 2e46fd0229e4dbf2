/**
 * Property tests of the fixed and the sliding window: random sequences of takes, peeks, per-call
 * limits and clock moves (forwards and back), compared step by step with literal reference models
 * written independently of the implementation: a map from window start to count, and the sliding
 * estimate as exact rational arithmetic in BigInt.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MAX_COUNT,
  MAX_PENALTY_COUNT,
  MemoryStore,
  createLimiter,
  fixedWindow,
  manualClock,
  slidingWindow,
  type Decision,
} from '../../src/index.js';

interface Outcome {
  allowed: boolean;
  remaining: number;
  resetMs: number;
}

/**
 * Counts per window start. `stored` is the latest window anything was charged to: a window never
 * moves backwards, so a clock reading in an earlier window counts against it.
 */
class WindowCounts {
  readonly counts = new Map<number, number>();
  stored = -Infinity;
  constructor(readonly windowMs: number) {}
  /** The window a take at `now` counts against, and how far into it `now` is (0 when behind). */
  locate(now: number): { start: number; elapsed: number } {
    const aligned = Math.floor(now / this.windowMs) * this.windowMs;
    return aligned >= this.stored
      ? { start: aligned, elapsed: now - aligned }
      : { start: this.stored, elapsed: 0 };
  }
  count(start: number): number {
    return this.counts.get(start) ?? 0;
  }
  charge(start: number, cost: number): void {
    this.counts.set(start, Math.min(this.count(start) + cost, 2 * MAX_COUNT));
    this.stored = start;
  }
}

class ReferenceFixedWindow {
  private readonly windows: WindowCounts;
  constructor(
    private readonly limit: number,
    windowMs: number,
    private readonly penalty: boolean,
  ) {
    this.windows = new WindowCounts(windowMs);
  }
  take(now: number, cost: number, perCall: number | undefined): Outcome {
    const quota = perCall ?? this.limit;
    const asked = cost === 0 ? 1 : cost;
    const { start } = this.windows.locate(now);
    const used = this.windows.count(start);
    const resetMs = start + this.windows.windowMs - now;
    const left = Math.max(0, quota - used);
    if (asked > quota) {
      // Answered before any store: an untouched window is reported, except that nothing
      // remains (never more than the window may have left).
      const untouched = Math.floor(now / this.windows.windowMs) * this.windows.windowMs;
      return { allowed: false, remaining: 0, resetMs: untouched + this.windows.windowMs - now };
    }
    if (asked <= left) {
      if (cost > 0) this.windows.charge(start, cost);
      return { allowed: true, remaining: left - cost, resetMs };
    }
    if (this.penalty && cost > 0) this.windows.charge(start, cost);
    return { allowed: false, remaining: left, resetMs };
  }
}

/** The sliding estimate `prev × (W − e) / W + cur + asked <= quota`, in exact rationals. */
class ReferenceSlidingWindow {
  private readonly windows: WindowCounts;
  constructor(
    private readonly limit: number,
    windowMs: number,
    private readonly penalty: boolean,
  ) {
    this.windows = new WindowCounts(windowMs);
  }
  take(now: number, cost: number, perCall: number | undefined): Outcome {
    const w = this.windows.windowMs;
    const quota = perCall ?? this.limit;
    const asked = cost === 0 ? 1 : cost;
    if (asked > quota) {
      // Answered before any store, as above: nothing reported remaining.
      const untouched = Math.floor(now / w) * w;
      return { allowed: false, remaining: 0, resetMs: untouched + w - now };
    }
    const { start, elapsed } = this.windows.locate(now);
    const cur = BigInt(this.windows.count(start));
    const prev = BigInt(this.windows.count(start - w));
    const W = BigInt(w);
    const weightedNumerator = prev * (W - BigInt(elapsed));
    const weightedCeil = (weightedNumerator + W - 1n) / W;
    const remaining = Math.max(0, quota - Number(cur) - Number(weightedCeil));
    const resetMs = start + w - now;
    const admitted = weightedNumerator + (cur + BigInt(asked)) * W <= BigInt(quota) * W;
    if (admitted) {
      if (cost > 0) this.windows.charge(start, cost);
      return { allowed: true, remaining: remaining - cost, resetMs };
    }
    if (this.penalty && cost > 0) this.windows.charge(start, cost);
    return { allowed: false, remaining, resetMs };
  }
}

const steps = fc.array(
  fc.record({
    // Mostly forwards, sometimes back (a stepped clock, or another node's clock).
    moveMs: fc.oneof(
      { weight: 5, arbitrary: fc.integer({ min: 0, max: 2_000 }) },
      { weight: 3, arbitrary: fc.integer({ min: 0, max: 200_000 }) },
      { weight: 1, arbitrary: fc.integer({ min: -100_000, max: -1 }) },
    ),
    cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 8 })),
    perCall: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined, freq: 4 }),
  }),
  { minLength: 1, maxLength: 60 },
);

function outcome(d: Decision): Outcome {
  return { allowed: d.allowed, remaining: d.remaining, resetMs: d.resetMs };
}

for (const [title, make, Reference] of [
  ['fixed window against a map from window start to count', fixedWindow, ReferenceFixedWindow],
  ['sliding window against the literal estimate in exact rationals', slidingWindow, ReferenceSlidingWindow],
] as const) {
  describe(title, () => {
    it('every decision agrees with the reference, step by step (per-call limits, peeks, penalty, clock moved back)', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 10 }),
          fc.integer({ min: 1, max: 100_000 }),
          fc.boolean(),
          fc.integer({ min: 0, max: 2_000_000_000_000 }),
          steps,
          (limit, windowMs, penalty, start, moves) => {
            const clock = manualClock(start);
            const limiter = createLimiter({
              name: 'w',
              rule: make({ limit, window: `${windowMs}ms`, penalty }),
              store: new MemoryStore(),
              clock,
            });
            const reference = new Reference(limit, windowMs, penalty);
            for (const { moveMs, cost, perCall } of moves) {
              clock.set(Math.max(0, clock() + moveMs));
              const actual = limiter.takeSync(
                'k',
                perCall === undefined ? { cost } : { cost, limit: perCall },
              );
              assert.deepEqual(outcome(actual), reference.take(clock(), cost, perCall));
            }
          },
        ),
        { numRuns: 400 },
      );
    });
  });
}

describe('fixed window against envoyproxy/ratelimit', () => {
  /** Envoy's fixed window: epoch-aligned blocks in seconds; a refused hit still counts. */
  class EnvoyWindow {
    private readonly counts = new Map<number, number>();
    constructor(
      private readonly limit: number,
      private readonly divider: number,
    ) {}
    hit(nowS: number, hits: number): { over: boolean; remaining: number; resetS: number } {
      const key = Math.floor(nowS / this.divider) * this.divider;
      const after = (this.counts.get(key) ?? 0) + hits;
      this.counts.set(key, after);
      return {
        over: after > this.limit,
        remaining: Math.max(0, this.limit - after),
        resetS: this.divider - (nowS % this.divider),
      };
    }
  }
  const dividers = {
    SECOND: 1,
    MINUTE: 60,
    HOUR: 3600,
    DAY: 86_400,
    WEEK: 604_800,
    MONTH: 2_592_000,
    YEAR: 31_536_000,
  };

  for (const [unit, divider] of Object.entries(dividers)) {
    it(`ENVOY_UNIT_WINDOWS.${unit} with penalty admits exactly what Envoy admits, hits of 1..limit at whole seconds`, async () => {
      const { ENVOY_UNIT_WINDOWS } = await import('../../src/index.js');
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 12 }),
          fc.integer({ min: 1_500_000_000, max: 2_000_000_000 }),
          fc.array(
            fc.record({
              advanceS: fc.oneof(
                { weight: 4, arbitrary: fc.integer({ min: 0, max: 3 }) },
                { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 * divider }) },
              ),
              share: fc.double({ min: 0, max: 1, noNaN: true }),
            }),
            { minLength: 1, maxLength: 50 },
          ),
          (limit, startS, hits) => {
            const clock = manualClock(startS * 1000);
            const window = ENVOY_UNIT_WINDOWS[unit as keyof typeof ENVOY_UNIT_WINDOWS];
            const limiter = createLimiter({
              name: 'envoy',
              rule: fixedWindow({ limit, window, penalty: true }),
              store: new MemoryStore(),
              clock,
            });
            const envoy = new EnvoyWindow(limit, divider);
            let nowS = startS;
            for (const { advanceS, share } of hits) {
              nowS += advanceS;
              clock.set(nowS * 1000);
              const cost = 1 + Math.min(limit - 1, Math.floor(share * limit));
              const d = limiter.takeSync('k', { cost });
              const e = envoy.hit(nowS, cost);
              assert.equal(d.allowed, !e.over);
              assert.equal(d.resetMs, e.resetS * 1000);
              if (d.allowed) assert.equal(d.remaining, e.remaining);
            }
          },
        ),
        { numRuns: 150 },
      );
    });
  }
});

/** A sliding state in the shapes a store can hold: a window, its count, the count before it. */
const slidingCase = fc
  .record({
    limit: fc.integer({ min: 1, max: 1_000_000 }),
    windowMs: fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 400_000_000 })),
    windowIndex: fc.integer({ min: 1_000, max: 100_000 }),
    valueShare: fc.double({ min: 0, max: 1.2, noNaN: true }),
    previousShare: fc.double({ min: 0, max: 2.2, noNaN: true }),
    offsetShare: fc.double({ min: -1.5, max: 3, noNaN: true }),
    askedShare: fc.double({ min: 0, max: 1, noNaN: true }),
  })
  .map(({ limit, windowMs, windowIndex, valueShare, previousShare, offsetShare, askedShare }) => ({
    limit,
    windowMs,
    state: {
      window: windowIndex * windowMs,
      value: Math.floor(valueShare * limit),
      previous: Math.floor(previousShare * limit),
      blockedUntil: 0,
      blockMs: 0,
    },
    now: windowIndex * windowMs + Math.floor(offsetShare * windowMs),
    asked: 1 + Math.floor(askedShare * (limit - 1)),
  }));

describe('sliding window: what it promises', () => {
  it('retryAfterMs is the least wait: admitted at now + d, refused at now + d − 1', () => {
    fc.assert(
      fc.property(slidingCase, ({ limit, windowMs, state, now, asked }) => {
        const rule = slidingWindow({ limit, window: `${windowMs}ms` });
        const refused = rule.decide(
          { ...state },
          { now, epoch: 0, name: 's', cost: asked, limit: undefined, commit: false },
        );
        if (refused.allowed) return;
        const d = refused.retryAfterMs;
        assert.ok(Number.isSafeInteger(d) && d > 0, `a finite positive wait, got ${d}`);
        assert.equal(
          rule.decide(
            { ...state },
            { now: now + d, epoch: 0, name: 's', cost: asked, limit: undefined, commit: false },
          ).allowed,
          true,
        );
        assert.equal(
          rule.decide(
            { ...state },
            { now: now + d - 1, epoch: 0, name: 's', cost: asked, limit: undefined, commit: false },
          ).allowed,
          false,
        );
      }),
      { numRuns: 3000 },
    );
  });

  it('never more than `limit` within one aligned window, at most 2 × `limit` within any window length', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.array(
          fc.record({ advanceMs: fc.integer({ min: 0, max: 3_000 }), cost: fc.integer({ min: 1, max: 4 }) }),
          {
            minLength: 1,
            maxLength: 120,
          },
        ),
        (limit, windowMs, takes) => {
          const clock = manualClock(1_000_000_000);
          const limiter = createLimiter({
            name: 's',
            rule: slidingWindow({ limit, window: `${windowMs}ms` }),
            store: new MemoryStore(),
            clock,
          });
          const admitted: { at: number; cost: number }[] = [];
          for (const { advanceMs, cost } of takes) {
            clock.advance(advanceMs);
            if (limiter.takeSync('k', { cost }).allowed) admitted.push({ at: clock(), cost });
          }
          const perWindow = new Map<number, number>();
          for (const { at, cost } of admitted) {
            const start = Math.floor(at / windowMs) * windowMs;
            perWindow.set(start, (perWindow.get(start) ?? 0) + cost);
          }
          for (const total of perWindow.values()) assert.ok(total <= limit);
          for (const { at } of admitted) {
            const inSpan = admitted.filter((a) => a.at >= at && a.at < at + windowMs);
            assert.ok(inSpan.reduce((sum, a) => sum + a.cost, 0) <= 2 * limit);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('equals the literal formula computed as doubles in the stated order', () => {
    fc.assert(
      fc.property(slidingCase, ({ limit, windowMs, state, now, asked }) => {
        const rule = slidingWindow({ limit, window: `${windowMs}ms` });
        const d = rule.decide(
          { ...state },
          { now, epoch: 0, name: 's', cost: asked, limit: undefined, commit: false },
        );
        const w = windowMs;
        const aligned = Math.floor(now / w) * w;
        let cur = 0;
        let prev = 0;
        let e = now - aligned;
        if (state.window > aligned) [cur, prev, e] = [state.value, state.previous, 0];
        else if (state.window === aligned) [cur, prev] = [state.value, state.previous];
        else if (state.window === aligned - w) prev = state.value;
        const weighted = prev === 0 ? 0 : Math.ceil((prev * (w - e)) / w);
        const left = Math.max(0, limit - cur - weighted);
        assert.equal(d.allowed, asked <= left);
        assert.equal(d.remaining, d.allowed ? left - asked : left);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('fixed and sliding windows: charges', () => {
  for (const make of [fixedWindow, slidingWindow]) {
    it(`${make.name}: a refusal charges nothing without penalty; a peek changes nothing`, () => {
      const rule = make({ limit: 3, window: '1m' });
      const state = rule.initialState(60_000);
      for (let i = 0; i < 3; i++)
        assert.equal(
          rule.decide(state, { now: 60_000, epoch: 0, name: 'w', cost: 1, limit: undefined, commit: true })
            .allowed,
          true,
        );
      const before = { ...state };
      assert.equal(
        rule.decide(state, { now: 60_001, epoch: 0, name: 'w', cost: 1, limit: undefined, commit: true })
          .allowed,
        false,
      );
      assert.equal(
        rule.decide(state, { now: 60_002, epoch: 0, name: 'w', cost: 0, limit: undefined, commit: true })
          .allowed,
        false,
      );
      assert.deepEqual({ ...state }, before);
      const fresh = rule.initialState(0);
      const untouched = { ...fresh };
      assert.equal(
        rule.decide(fresh, { now: 5, epoch: 0, name: 'w', cost: 0, limit: undefined, commit: true })
          .remaining,
        3,
      );
      assert.deepEqual({ ...fresh }, untouched);
    });

    it(`${make.name}: penalty counts saturate at 2 × MAX_COUNT and stay exact`, () => {
      const rule = make({ limit: MAX_COUNT, window: '1h', penalty: true });
      const state = rule.initialState(0);
      assert.equal(
        rule.decide(state, { now: 0, epoch: 0, name: 'w', cost: MAX_COUNT, limit: undefined, commit: true })
          .allowed,
        true,
      );
      for (let i = 0; i < 5; i++)
        assert.equal(
          rule.decide(state, { now: 1, epoch: 0, name: 'w', cost: MAX_COUNT, limit: undefined, commit: true })
            .allowed,
          false,
        );
      assert.equal(state.value, MAX_PENALTY_COUNT);
      assert.equal(MAX_PENALTY_COUNT, 2 * MAX_COUNT);
    });

    it(`${make.name}: a clock stepped back never moves the window backwards`, () => {
      const rule = make({ limit: 4, window: '1m' });
      const state = rule.initialState(120_000);
      assert.equal(
        rule.decide(state, { now: 120_000, epoch: 0, name: 'w', cost: 3, limit: undefined, commit: true })
          .remaining,
        1,
      );
      const back = rule.decide(state, {
        now: 119_999,
        epoch: 0,
        name: 'w',
        cost: 1,
        limit: undefined,
        commit: true,
      });
      assert.deepEqual([back.allowed, back.remaining, back.resetMs], [true, 0, 60_001]);
      assert.equal(state.window, 120_000);
      assert.equal(
        rule.decide(state, { now: 100_000, epoch: 0, name: 'w', cost: 1, limit: undefined, commit: true })
          .allowed,
        false,
      );
    });
  }

  it('calendarQuota: penalty counts saturate at 2 × MAX_COUNT', async () => {
    const { calendarQuota } = await import('../../src/index.js');
    const rule = calendarQuota({ limit: MAX_COUNT, per: 'hour', penalty: true });
    const state = rule.initialState(0);
    rule.decide(state, { now: 0, epoch: 0, name: 'q', cost: MAX_COUNT, limit: undefined, commit: true });
    for (let i = 0; i < 5; i++)
      rule.decide(state, { now: 1, epoch: 0, name: 'q', cost: MAX_COUNT, limit: undefined, commit: true });
    assert.equal(state.value, MAX_PENALTY_COUNT);
  });
});
