/**
 * Shadow mode: a limit that decides and charges as enforcement would, never refuses, and reports
 * its would-be refusals. How it behaves on every store is in the store conformance suite ("shadow
 * mode"); in every adapter, in the HTTP conformance suite.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  DecisionEvents,
  MemoryStore,
  createCascade,
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  tokenBucket,
  type DecisionOutcome,
} from '../../src/index.js';
import { FailingStore } from '../../src/testing/index.js';

const START = Date.UTC(2026, 0, 15, 12);

describe('shadow mode', () => {
  it('is "enforce" by default; a mode that is neither is SLUICE_CONFIG, as is a failure policy other than open', () => {
    const store = new MemoryStore();
    const rule = tokenBucket({ limit: 1, period: '1m' });
    assert.equal(createLimiter({ name: 'a', rule, store }).mode, 'enforce');
    const shadow = createLimiter({ name: 'b', rule, store, mode: 'shadow' });
    assert.deepEqual([shadow.mode, shadow.failure], ['shadow', 'open']);
    const config = (make: () => unknown, pattern: RegExp) =>
      assert.throws(make, (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && pattern.test(e.message));
    config(
      () => createLimiter({ name: 'c', rule, store, mode: 'dry-run' as never }),
      /mode must be "enforce" or "shadow"$/,
    );
    config(
      () => createLimiter({ name: 'd', rule, store, mode: 'shadow', failure: 'closed' }),
      /failure must be "open"/,
    );
    config(
      () => createLimiter({ name: 'e', rule, store, mode: 'shadow', failure: 'insurance' }),
      /failure must be "open"/,
    );
  });

  it('admits every take, sync and async; a would-be refusal keeps what enforcement would have said and is reported as shadow-refused', async () => {
    const clock = manualClock(START);
    const events = new DecisionEvents();
    const outcomes: DecisionOutcome[] = [];
    events.subscribe((event) => void outcomes.push(event.outcome));
    const trial = createLimiter({
      name: 'trial',
      rule: tokenBucket({ limit: 2, period: '1m' }),
      store: new MemoryStore(),
      clock,
      mode: 'shadow',
      events,
    });
    trial.takeSync('k');
    trial.takeSync('k');
    const would = trial.takeSync('k');
    assert.deepEqual(
      [would.allowed, would.source, would.remaining, would.retryAfterMs, would.retryAfterSeconds],
      [true, 'shadow', 0, 30_000, 0],
    );
    assert.equal((await trial.take('k')).source, 'shadow');
    assert.equal(trial.peekSync('k').source, 'shadow', 'a peek answers as a take would');
    const never = trial.takeSync('k', { cost: 3 });
    assert.deepEqual([never.allowed, never.source, never.retryAfterMs], [true, 'shadow', Infinity]);
    assert.deepEqual(outcomes, [
      'admitted',
      'admitted',
      'shadow-refused',
      'shadow-refused',
      'shadow-refused',
    ]);
  });

  it('a failing store admits (fail-open), never a 503', async () => {
    const store = new FailingStore();
    const trial = createLimiter({
      name: 'trial',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      mode: 'shadow',
    });
    store.mode = 'reject';
    const decision = await trial.take('k');
    assert.deepEqual([decision.allowed, decision.source], [true, 'fail-open']);
  });

  it('a first-refusal cascade goes on past a shadow limit; an all-or-nothing cascade refuses one at setup', () => {
    const store = new MemoryStore();
    const clock = manualClock(START);
    const trial = createLimiter({
      name: 'trial',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      clock,
      mode: 'shadow',
    });
    const enforced = createLimiter({
      name: 'enforced',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store,
      clock,
    });
    const chain = createCascade([trial, enforced]);
    chain.takeSync('k');
    const second = chain.takeSync('k');
    assert.deepEqual([second.allowed, second.refusedBy, second.decisions.length], [true, [], 2]);
    assert.equal(enforced.peekSync('k').remaining, 3, 'the enforcing limit was charged both times');
    assert.throws(
      () => createCascade([trial, enforced], { mode: 'all-or-nothing' }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /shadow mode cannot veto/.test(e.message),
    );
  });

  it('property: for any sequence of takes, peeks and time steps, a shadow limit holds what an enforcing twin holds', () => {
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('take' as const),
        cost: fc.integer({ min: 0, max: 6 }),
        key: fc.integer({ min: 0, max: 2 }),
      }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 90_000 }) }),
    );
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.boolean(),
        fc.array(step, { maxLength: 60 }),
        (windowed, penalty, steps) => {
          const clock = manualClock(START);
          const rule = () =>
            windowed
              ? fixedWindow({
                  limit: 4,
                  window: '1m',
                  penalty,
                  block: { duration: '30s', factor: 2, max: '5m' },
                })
              : tokenBucket({ limit: 4, period: '1m', penalty });
          const trial = createLimiter({
            name: 't',
            rule: rule(),
            store: new MemoryStore(),
            clock,
            mode: 'shadow',
          });
          const twin = createLimiter({ name: 't', rule: rule(), store: new MemoryStore(), clock });
          for (const s of steps) {
            if (s.kind === 'wait') {
              clock.advance(s.ms);
              continue;
            }
            const key = `k${s.key}`;
            const shadowed = trial.takeSync(key, { cost: s.cost });
            const enforced = twin.takeSync(key, { cost: s.cost });
            assert.equal(shadowed.allowed, true);
            assert.equal(shadowed.source === 'shadow', !enforced.allowed);
            assert.deepEqual(
              [shadowed.remaining, shadowed.retryAfterMs, shadowed.resetMs, shadowed.limit],
              [enforced.remaining, enforced.retryAfterMs, enforced.resetMs, enforced.limit],
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
