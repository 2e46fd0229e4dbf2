/**
 * Settling a take after the fact (`rule.adjust`), on every algorithm: a refund makes the state
 * decide as if the take had never happened (while its window counts), never better; a
 * settlement at the real cost decides as a take of the real cost would have. The stores hold
 * their translations to these by the conformance suite and their differential tests.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  calendarQuota,
  fixedWindow,
  slidingWindow,
  tokenBucket,
  type BucketState,
  type Decision,
  type Rule,
} from '../../src/index.js';

const START = Date.UTC(2026, 0, 15, 12);

const rules: [string, () => Rule][] = [
  // 6 per minute: a token is exactly 10 s, so a decision's `resetMs` is exact to the millisecond.
  ['token bucket', () => tokenBucket({ limit: 6, period: '1m', burst: 12 })],
  ['fixed window', () => fixedWindow({ limit: 12, window: '1m' })],
  ['sliding window', () => slidingWindow({ limit: 12, window: '1m' })],
  ['calendar quota', () => calendarQuota({ limit: 12, per: 'hour' })],
];

/** A state reached by a few admitted takes spread over time, from a new key at START. */
function history(
  rule: Rule,
  steps: readonly { wait: number; cost: number }[],
): { state: BucketState; now: number } {
  let now = START;
  const state = rule.initialState(now, START);
  for (const step of steps) {
    now += step.wait;
    rule.decide(state, { now, epoch: START, name: 'r', cost: step.cost, limit: undefined, commit: true });
  }
  return { state, now };
}

const steps = fc.array(
  fc.record({ wait: fc.integer({ min: 0, max: 40_000 }), cost: fc.integer({ min: 1, max: 5 }) }),
  {
    maxLength: 8,
  },
);
const peek = (rule: Rule, state: BucketState, now: number) => {
  const d = rule.decide(
    { ...state },
    { now, epoch: START, name: 'r', cost: 0, limit: undefined, commit: false },
  );
  return [d.allowed, d.remaining, d.retryAfterMs];
};
const windowOf = (rule: Rule, t: number) =>
  rule.kind === 'calendar-quota' ? Math.floor(t / 3_600_000) : Math.floor(t / 60_000);

/** Gives back at `at` all of `decision`, a take made at `takenAt`. */
const refund = (rule: Rule, state: BucketState, at: number, takenAt: number, decision: Decision) =>
  rule.adjust(state, {
    now: at,
    epoch: START,
    delta: -decision.cost,
    takenAt,
    until: takenAt + decision.resetMs,
  });

for (const [title, make] of rules) {
  describe(`${title}: adjust`, () => {
    it('a refund decides as if the take never happened while its window counts, and changes no decision once it is over', () => {
      fc.assert(
        fc.property(
          steps,
          fc.integer({ min: 1, max: 12 }),
          fc.integer({ min: 0, max: 150_000 }),
          (before, cost, later) => {
            const rule = make();
            const { state, now } = history(rule, before);
            const untouched = { ...state };
            const decision = rule.decide(state, {
              now,
              epoch: START,
              name: 'r',
              cost,
              limit: undefined,
              commit: true,
            });
            if (!decision.allowed) return;
            const taken = { ...state };
            const at = now + later;
            refund(rule, state, at, now, decision);
            const sameWindow = windowOf(rule, at) === windowOf(rule, now);
            if (rule.kind === 'token-bucket' || sameWindow)
              assert.deepEqual(peek(rule, state, at), peek(rule, untouched, at));
            else if (rule.kind !== 'sliding-window')
              assert.deepEqual(
                peek(rule, state, at),
                peek(rule, taken, at),
                'the window is over: no decision changes',
              );
            // Never better than without the take, whatever the window.
            const [, refunded] = peek(rule, state, at);
            const [, without] = peek(rule, untouched, at);
            assert.ok((refunded as number) <= (without as number));
          },
        ),
        { numRuns: 300 },
      );
    });

    it('a refund never gives back what later takes charged: taken, another take later, refunded equals the later take alone', () => {
      fc.assert(
        fc.property(
          steps,
          fc.integer({ min: 1, max: 12 }),
          fc.integer({ min: 0, max: 150_000 }),
          fc.integer({ min: 1, max: 5 }),
          (before, cost, later, next) => {
            const rule = make();
            const { state, now } = history(rule, before);
            const without = { ...state };
            const decision = rule.decide(state, {
              now,
              epoch: START,
              name: 'r',
              cost,
              limit: undefined,
              commit: true,
            });
            if (!decision.allowed) return;
            const at = now + later;
            // Only histories where the later take is admitted in both worlds compare.
            const admitsLater = (world: typeof state) =>
              rule.decide(world, {
                now: at,
                epoch: START,
                name: 'r',
                cost: next,
                limit: undefined,
                commit: true,
              }).allowed;
            if (!admitsLater(state) || !admitsLater(without)) return;
            refund(rule, state, at, now, decision);
            const [, refunded] = peek(rule, state, at);
            const [, alone] = peek(rule, without, at);
            if (rule.kind === 'sliding-window') assert.ok((refunded as number) <= (alone as number));
            else assert.equal(refunded, alone);
          },
        ),
        { numRuns: 400 },
      );
    });

    it('settling an estimate at the real cost decides as a take of the real cost would have', () => {
      fc.assert(
        fc.property(
          steps,
          fc.integer({ min: 1, max: 12 }),
          fc.integer({ min: 0, max: 12 }),
          (before, estimate, actual) => {
            const rule = make();
            const { state, now } = history(rule, before);
            const direct = { ...state };
            const decision = rule.decide(state, {
              now,
              epoch: START,
              name: 'r',
              cost: estimate,
              limit: undefined,
              commit: true,
            });
            if (!decision.allowed) return;
            rule.adjust(state, {
              now,
              epoch: START,
              delta: actual - estimate,
              takenAt: now,
              until: now + decision.resetMs,
            });
            const admitted =
              actual === 0 ||
              rule.decide(direct, {
                now,
                epoch: START,
                name: 'r',
                cost: actual,
                limit: undefined,
                commit: true,
              }).allowed;
            if (admitted) assert.deepEqual(peek(rule, state, now), peek(rule, direct, now));
            // A real cost beyond what was left is charged anyway (the work is done): nothing is left.
            else assert.equal(peek(rule, state, now)[1], 0);
          },
        ),
        { numRuns: 300 },
      );
    });
  });
}
