/**
 * The anchored window (src/core/rules/anchored-window.ts): exact decisions on a manual clock
 * (where a key's window starts and ends, refusals, penalties, per-call limits, refunds and
 * charges, its horizon, a clock stepped back, a lockout), its options, and a property test
 * against a literal model: a log of the key's charged takes since its window started.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MemoryStore,
  anchoredWindow,
  createLimiter,
  isSluiceError,
  manualClock,
  type BucketState,
} from '../../src/index.js';

/** 12:00:07.250 UTC: off every grid a window could be aligned to. */
const START = Date.UTC(2026, 0, 15, 12, 0, 7, 250);
const MINUTE = 60_000;

const fresh = (now: number): BucketState => anchoredWindow({ limit: 1, window: '1s' }).initialState(now);

describe('anchored window: decisions on a manual clock', () => {
  it("starts each key's window at its first take and ends it a window later, not on the clock's grid", () => {
    const clock = manualClock(START);
    const limiter = createLimiter({
      name: 'login',
      rule: anchoredWindow({ limit: 3, window: '1m' }),
      store: new MemoryStore(),
      clock,
    });
    const first = limiter.takeSync('user:1');
    assert.equal(first.allowed, true);
    assert.equal(first.remaining, 2);
    assert.equal(first.resetMs, MINUTE);
    assert.equal(first.windowMs, MINUTE);
    clock.advance(10_000);
    assert.equal(limiter.takeSync('user:1').resetMs, 50_000);
    // Another key's window starts at its own first take.
    assert.equal(limiter.takeSync('user:2').resetMs, MINUTE);
    assert.equal(limiter.takeSync('user:1').remaining, 0);
    clock.advance(49_999);
    const refused = limiter.takeSync('user:1');
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, 1);
    assert.equal(refused.resetMs, 1);
    // The window's end: the count is spent and the next take starts a window of its own.
    clock.advance(1);
    const next = limiter.takeSync('user:1');
    assert.equal(next.allowed, true);
    assert.equal(next.remaining, 2);
    assert.equal(next.resetMs, MINUTE);
  });

  it('a peek and a refusal start no window; a take of more than the limit is refused for good', () => {
    const rule = anchoredWindow({ limit: 2, window: '10s' });
    const state = rule.initialState(START);
    const peek = rule.decide(state, {
      now: START + 5,
      epoch: 0,
      name: 'r',
      cost: 0,
      limit: undefined,
      commit: true,
    });
    assert.deepEqual([peek.allowed, peek.remaining, peek.resetMs], [true, 2, 10_000]);
    assert.deepEqual(state, fresh(START));
    const tooMuch = rule.decide(state, {
      now: START + 9,
      epoch: 0,
      name: 'r',
      cost: 3,
      limit: undefined,
      commit: true,
    });
    assert.deepEqual([tooMuch.allowed, tooMuch.retryAfterMs, tooMuch.resetMs], [false, Infinity, 10_000]);
    assert.deepEqual(state, fresh(START));
    assert.equal(
      rule.decide(state, { now: START + 20, epoch: 0, name: 'r', cost: 2, limit: undefined, commit: true })
        .resetMs,
      10_000,
    );
    assert.deepEqual([state.window, state.value], [START + 20, 2]);
  });

  it('under penalty counts refusals in the running window without moving its end', () => {
    const rule = anchoredWindow({ limit: 2, window: '10s', penalty: true });
    const state = rule.initialState(START);
    rule.decide(state, { now: START, epoch: 0, name: 'r', cost: 2, limit: undefined, commit: true });
    const refused = rule.decide(state, {
      now: START + 4_000,
      epoch: 0,
      name: 'r',
      cost: 1,
      limit: undefined,
      commit: true,
    });
    assert.deepEqual([refused.allowed, refused.retryAfterMs, refused.remaining], [false, 6_000, 0]);
    assert.deepEqual([state.window, state.value], [START, 3]);
    // Without penalty the same refusal charges nothing.
    const lenient = anchoredWindow({ limit: 2, window: '10s' });
    const kept = lenient.initialState(START);
    lenient.decide(kept, { now: START, epoch: 0, name: 'r', cost: 2, limit: undefined, commit: true });
    lenient.decide(kept, {
      now: START + 4_000,
      epoch: 0,
      name: 'r',
      cost: 1,
      limit: undefined,
      commit: true,
    });
    assert.deepEqual([kept.window, kept.value], [START, 2]);
    // The window ends where it started plus its length, and the count with it.
    const after = rule.decide(state, {
      now: START + 10_000,
      epoch: 0,
      name: 'r',
      cost: 1,
      limit: undefined,
      commit: true,
    });
    assert.deepEqual(
      [after.allowed, after.remaining, state.window, state.value],
      [true, 1, START + 10_000, 1],
    );
  });

  it('a per-call limit replaces the rule’s, the count already spent staying spent', () => {
    const rule = anchoredWindow({ limit: 5, window: '1m' });
    const state = rule.initialState(START);
    rule.decide(state, { now: START, epoch: 0, name: 'r', cost: 4, limit: undefined, commit: true });
    assert.equal(
      rule.decide(state, { now: START + 1, epoch: 0, name: 'r', cost: 1, limit: 10, commit: true }).remaining,
      5,
    );
    const lower = rule.decide(state, {
      now: START + 2,
      epoch: 0,
      name: 'r',
      cost: 1,
      limit: 5,
      commit: true,
    });
    assert.deepEqual([lower.allowed, lower.limit, lower.remaining], [false, 5, 0]);
    assert.equal(rule.limitFor(7), 7);
    assert.equal(rule.capacityFor(undefined), 5);
  });

  it('a clock stepped back inside the window counts against it, which ends where it did', () => {
    const rule = anchoredWindow({ limit: 2, window: '10s' });
    const state = rule.initialState(START);
    rule.decide(state, { now: START, epoch: 0, name: 'r', cost: 1, limit: undefined, commit: true });
    const behind = rule.decide(state, {
      now: START - 3_000,
      epoch: 0,
      name: 'r',
      cost: 1,
      limit: undefined,
      commit: true,
    });
    assert.deepEqual([behind.allowed, behind.remaining, behind.resetMs], [true, 0, 13_000]);
    assert.deepEqual([state.window, state.value], [START, 2]);
  });

  it('its horizon is the running window’s end, 0 once the count is 0 or the window over', () => {
    const rule = anchoredWindow({ limit: 3, window: '10s' });
    const state = rule.initialState(START);
    assert.equal(rule.horizonMs(state, START), 0);
    rule.decide(state, { now: START, epoch: 0, name: 'r', cost: 2, limit: undefined, commit: true });
    assert.equal(rule.horizonMs(state, START + 4_000), 6_000);
    assert.equal(rule.horizonMs(state, START + 10_000), 0);
    rule.adjust(state, { now: START + 5_000, epoch: 0, delta: -2, takenAt: START, until: START + 10_000 });
    assert.equal(state.value, 0);
    assert.equal(rule.horizonMs(state, START + 5_000), 0);
    assert.equal(rule.floorValue(), 0);
  });
});

describe('anchored window: refunds and charges', () => {
  const rule = anchoredWindow({ limit: 5, window: '10s' });
  const running = (): BucketState => {
    const state = rule.initialState(START);
    rule.decide(state, { now: START, epoch: 0, name: 'r', cost: 3, limit: undefined, commit: true });
    return state;
  };

  it('a refund of a take made in the running window comes off its count, never below 0', () => {
    const state = running();
    assert.equal(
      rule.adjust(state, {
        now: START + 2_000,
        epoch: 0,
        delta: -2,
        takenAt: START + 1_000,
        until: START + 10_000,
      }),
      true,
    );
    assert.deepEqual([state.window, state.value], [START, 1]);
    assert.equal(
      rule.adjust(state, { now: START + 2_000, epoch: 0, delta: -4, takenAt: START, until: START + 10_000 }),
      true,
    );
    assert.equal(state.value, 0);
    assert.equal(
      rule.adjust(state, { now: START + 2_000, epoch: 0, delta: -1, takenAt: START, until: START + 10_000 }),
      false,
    );
  });

  it('a refund gives nothing back once the window is over, or for a take outside it', () => {
    const over = running();
    assert.equal(
      rule.adjust(over, { now: START + 10_000, epoch: 0, delta: -1, takenAt: START, until: START + 10_000 }),
      false,
    );
    assert.equal(over.value, 3);
    const before = running();
    assert.equal(
      rule.adjust(before, {
        now: START + 1_000,
        epoch: 0,
        delta: -1,
        takenAt: START - 1,
        until: START + 9_999,
      }),
      false,
    );
    // A take of an earlier window of the key, refunded in the next one.
    const later = running();
    rule.decide(later, { now: START + 12_000, epoch: 0, name: 'r', cost: 1, limit: undefined, commit: true });
    assert.equal(
      rule.adjust(later, {
        now: START + 13_000,
        epoch: 0,
        delta: -1,
        takenAt: START + 500,
        until: START + 10_500,
      }),
      false,
    );
    assert.deepEqual([later.window, later.value], [START + 12_000, 1]);
  });

  it('a charge goes to the running window, or starts one now', () => {
    const state = running();
    assert.equal(
      rule.adjust(state, { now: START + 4_000, epoch: 0, delta: 2, takenAt: START, until: START + 10_000 }),
      true,
    );
    assert.deepEqual([state.window, state.value], [START, 5]);
    assert.equal(
      rule.adjust(state, { now: START + 30_000, epoch: 0, delta: 4, takenAt: START, until: START + 10_000 }),
      true,
    );
    assert.deepEqual([state.window, state.value], [START + 30_000, 4]);
    assert.equal(rule.horizonMs(state, START + 30_000), 10_000);
    assert.equal(
      rule.adjust(state, { now: START + 30_000, epoch: 0, delta: 0, takenAt: START, until: START }),
      false,
    );
  });
});

describe('anchored window: lockout and options', () => {
  it('a refusal under a lockout blocks the key, and waits for the later of the block and the window', () => {
    const rule = anchoredWindow({ limit: 1, window: '10s', block: { duration: '3s' } });
    const state = rule.initialState(START);
    rule.decide(state, { now: START, epoch: 0, name: 'r', cost: 1, limit: undefined, commit: true });
    const refused = rule.decide(state, {
      now: START + 1_000,
      epoch: 0,
      name: 'r',
      cost: 1,
      limit: undefined,
      commit: true,
    });
    assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 9_000]);
    assert.deepEqual([state.blockedUntil, state.blockMs], [START + 4_000, 3_000]);
    // The horizon keeps the block until it is forgotten (its default memory: its length).
    assert.equal(rule.horizonMs(state, START + 9_000), 1_000);
    assert.equal(rule.horizonMs(state, START + 5_000), 5_000);
    const blocked = anchoredWindow({ limit: 1, window: '1s', block: { duration: '3s' } });
    const short = blocked.initialState(START);
    blocked.decide(short, { now: START, epoch: 0, name: 'r', cost: 1, limit: undefined, commit: true });
    assert.equal(
      blocked.decide(short, {
        now: START + 500,
        epoch: 0,
        name: 'r',
        cost: 1,
        limit: undefined,
        commit: true,
      }).retryAfterMs,
      3_000,
    );
    assert.equal(
      blocked.decide(short, {
        now: START + 2_000,
        epoch: 0,
        name: 'r',
        cost: 1,
        limit: undefined,
        commit: true,
      }).allowed,
      false,
    );
    assert.equal(
      blocked.decide(short, {
        now: START + 3_500,
        epoch: 0,
        name: 'r',
        cost: 1,
        limit: undefined,
        commit: true,
      }).allowed,
      true,
    );
  });

  it('has no windowMs (kept for windows on the epoch grid) and says its kind and shape', () => {
    const rule = anchoredWindow({ limit: 100, window: '15m' });
    assert.equal(rule.kind, 'anchored-window');
    assert.equal(rule.shape, 'window-count');
    assert.equal(rule.periodMs, 900_000);
    assert.equal('windowMs' in rule, false);
    assert.equal(rule.acceptsCallLimit, true);
  });

  it('refuses bad options naming the option, never the value', () => {
    const bad: [unknown, RegExp][] = [
      [{ limit: 0, window: '1m' }, /anchoredWindow limit/],
      [{ limit: 1, window: 60_000 }, /anchoredWindow window/],
      [{ limit: 1, window: '367d' }, /anchoredWindow window/],
      [{ limit: 1, window: '1m', penalty: 'yes' }, /anchoredWindow penalty/],
      [{ limit: 1, window: '1m', block: { duration: 'soon' } }, /anchoredWindow block duration/],
      [{ limit: 1, window: '1m', windowMs: 5 }, /anchoredWindow/],
    ];
    for (const [options, message] of bad)
      assert.throws(
        () => anchoredWindow(options as never),
        (e: unknown) => isSluiceError(e) && e.code === 'SLUICE_CONFIG' && message.test(e.message),
      );
  });
});

/** The literal model: the key's window start and the costs charged in it. */
class ChargeLog {
  start = 0;
  charged: number[] = [];
  constructor(
    readonly windowMs: number,
    readonly limit: number,
    readonly penalty: boolean,
  ) {}
  take(now: number, cost: number): { allowed: boolean; remaining: number; resetMs: number } {
    let count = this.charged.reduce((a, b) => a + b, 0);
    if (count === 0 || now >= this.start + this.windowMs) {
      // No window runs: this take would start one.
      count = 0;
      if (cost > 0 && cost <= this.limit) {
        this.start = now;
        this.charged = [];
      }
    }
    const start = count === 0 ? now : this.start;
    const resetMs = start + this.windowMs - now;
    const left = Math.max(0, this.limit - count);
    if ((cost === 0 ? 1 : cost) > this.limit) return { allowed: false, remaining: left, resetMs };
    if (cost === 0) return { allowed: left >= 1, remaining: left, resetMs };
    if (cost <= left) {
      this.charged.push(cost);
      return { allowed: true, remaining: left - cost, resetMs };
    }
    if (this.penalty) this.charged.push(cost);
    return { allowed: false, remaining: left, resetMs };
  }
}

describe('anchored window against a log of charged takes', () => {
  it('every decision agrees with the model, step by step', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(1_000, 7_000, 60_000),
        fc.boolean(),
        fc.array(
          fc.record({ wait: fc.integer({ min: 0, max: 15_000 }), cost: fc.integer({ min: 0, max: 7 }) }),
          { maxLength: 40 },
        ),
        (limit, windowMs, penalty, steps) => {
          const rule = anchoredWindow({ limit, window: `${windowMs}ms`, penalty });
          const model = new ChargeLog(windowMs, limit, penalty);
          let now = START;
          const state = rule.initialState(now);
          for (const { wait, cost } of steps) {
            now += wait;
            const d = rule.decide(state, { now, epoch: 0, name: 'r', cost, limit: undefined, commit: true });
            const want = model.take(now, cost);
            assert.deepEqual({ allowed: d.allowed, remaining: d.remaining, resetMs: d.resetMs }, want);
            if (!d.allowed) assert.equal(d.retryAfterMs, cost > limit ? Infinity : want.resetMs);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
