/**
 * A synchronous take of a key alone on the memory store skips the layers it cannot need (the
 * refusal cache, the capacity check, the breaker, the store's error path). These tests hold it to
 * the full take step: the same decisions, the same errors, the same events, in every mode.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  DecisionEvents,
  MemoryStore,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  slidingWindow,
  tokenBucket,
  type Decision,
  type LimiterMode,
  type Rule,
} from '../../src/index.js';

const START = Date.UTC(2026, 0, 15, 12);

const rules: Record<string, () => Rule> = {
  token: () => tokenBucket({ limit: 3, period: '10s', burst: 4 }),
  fixed: () => fixedWindow({ limit: 3, window: '10s' }),
  sliding: () => slidingWindow({ limit: 3, window: '10s' }),
};

/** Two limiters on their own stores and one clock: `plain` is asked `takeSync(key)`, `full` with options. */
function pair(rule: () => Rule, mode: LimiterMode) {
  const clock = manualClock(START);
  const make = () => createLimiter({ name: 'p', rule: rule(), store: new MemoryStore(), clock, mode });
  return { clock, plain: make(), full: make() };
}

describe('a plain synchronous take', () => {
  it('decides as the full take step, on every rule and in both modes (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(rules)),
        fc.constantFrom<LimiterMode>('enforce', 'shadow'),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 4_000 })), {
          maxLength: 40,
        }),
        (kind, mode, steps) => {
          const { clock, plain, full } = pair(rules[kind]!, mode);
          for (const [key, advanceMs] of steps) {
            clock.advance(advanceMs);
            const expected: Decision = full.takeSync(key, { cost: 1 });
            assert.deepEqual(plain.takeSync(key), expected);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses in enforce mode and admits in shadow mode, as the full step does', () => {
    for (const mode of ['enforce', 'shadow'] as const) {
      const { plain } = pair(rules.fixed!, mode);
      const allowed = [1, 2, 3, 4].map(() => plain.takeSync('k').allowed);
      assert.deepEqual(allowed, mode === 'enforce' ? [true, true, true, false] : [true, true, true, true]);
    }
  });

  it('checks its key and its limiter as the full step does', async () => {
    const { plain } = pair(rules.token!, 'enforce');
    assert.throws(
      () => plain.takeSync(''),
      (e: unknown) => isSluiceError(e, 'SLUICE_KEY_MISSING'),
    );
    plain.takeSync('k');
    await plain.close();
    assert.throws(
      () => plain.takeSync('k'),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /is closed/.test(e.message),
    );
  });

  it('is reported to a listener as the full step is', () => {
    const events = new DecisionEvents();
    const limiter = createLimiter({
      name: 'p',
      rule: rules.fixed!(),
      store: new MemoryStore(),
      clock: manualClock(START),
      events,
    });
    const outcomes: string[] = [];
    const off = events.subscribe((event) => outcomes.push(event.outcome));
    for (let i = 0; i < 4; i++) limiter.takeSync('k');
    off();
    limiter.takeSync('k');
    assert.deepEqual(outcomes, ['admitted', 'admitted', 'admitted', 'refused']);
  });
});
