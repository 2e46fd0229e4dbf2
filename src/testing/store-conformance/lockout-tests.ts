/** Lockouts (a rule's `block` option): the escalation ladder on every rule, and what ends a lockout. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Decision } from '../../core/decision.js';
import { fixedWindow } from '../../core/rules/fixed-window.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { calendarQuota } from '../../core/rules/calendar-quota.js';
import type { Rule } from '../../core/rules/rule.js';
import { slidingWindow } from '../../core/rules/sliding-window.js';
import { createCascade } from '../../limiter/cascade.js';
import type { Limiter } from '../../limiter/limiter.js';
import { HOUR, MINUTE, DAY, type SkipOption, type StoreSuite } from './harness.js';

// One escalation ladder for every rule: 2 hours, doubled, capped at 7; forgotten a day
// after a block ends. Each rule on its own would admit again within the hour.
const block = { duration: '2h', factor: 2, max: '7h', forgetAfter: '1d' } as const;
const ladder: [string, () => Rule][] = [
  ['token bucket', () => tokenBucket({ limit: 3, period: '1m', block })],
  ['fixed window', () => fixedWindow({ limit: 3, window: '1m', block })],
  ['sliding window', () => slidingWindow({ limit: 3, window: '1m', block })],
  ['calendar quota', () => calendarQuota({ limit: 3, per: 'hour', block })],
];

/** Takes until the first refusal (at most 10 takes) and returns it. */
async function refusal(l: Limiter, key: string): Promise<Decision> {
  for (let i = 0; i < 10; i++) {
    const d = await l.take(key);
    if (!d.allowed) return d;
  }
  throw new Error('no refusal within 10 takes');
}

/** Registers the lockout tests. */
export function lockoutTests(suite: StoreSuite): void {
  describe('lockouts', () => {
    const lockouts = suite.unless(suite.target.lockouts, 'does not keep lockouts');
    ladderTests(suite, lockouts);
    liftingTests(suite, lockouts);
  });
}

/** The same escalation ladder on every rule kind. */
function ladderTests(suite: StoreSuite, lockouts: SkipOption): void {
  const { fresh, limiter, needs } = suite;

  for (const [title, rule] of ladder) {
    it(
      `${title}: a refusal blocks for duration, a refusal soon after doubles it up to max, a later one starts over`,
      needs([rule().kind], ['hour']),
      async () => {
        if (lockouts.skip !== false) return;
        await fresh(Date.UTC(2026, 0, 15, 12, 0, 0));
        const l = limiter(rule());
        const first = await refusal(l, 'k');
        assert.deepEqual([first.allowed, first.remaining], [false, 0]);
        assert.equal(first.retryAfterMs, 2 * HOUR, 'the block ends 2 hours from now');
        suite.clock.advance(2 * HOUR - 1);
        const still = await l.take('k');
        assert.deepEqual([still.allowed, still.remaining, still.retryAfterMs], [false, 0, 1]);
        const peek = await l.peek('k');
        assert.deepEqual([peek.allowed, peek.retryAfterMs], [false, 1], 'a peek sees the block');
        suite.clock.advance(1);
        // Blocked takes were not charged: the rule admits as if they never came.
        assert.equal((await l.take('k')).allowed, true);
        const second = await refusal(l, 'k');
        assert.equal(second.retryAfterMs, 4 * HOUR, 'refused again soon after: twice as long');
        suite.clock.advance(4 * HOUR);
        assert.equal((await refusal(l, 'k')).retryAfterMs, 7 * HOUR, '8 hours, capped at max');
        suite.clock.advance(7 * HOUR);
        assert.equal((await refusal(l, 'k')).retryAfterMs, 7 * HOUR, 'stays at max');
        // Remembered until a day after the block's end: one millisecond before, it escalates…
        suite.clock.advance(7 * HOUR + DAY - 1);
        assert.equal((await refusal(l, 'k')).retryAfterMs, 7 * HOUR);
        // …and exactly a day after the end of that block, it starts over.
        suite.clock.advance(7 * HOUR + DAY);
        assert.equal((await refusal(l, 'k')).retryAfterMs, 2 * HOUR, 'forgotten: back to duration');
        assert.equal((await l.peek('other-key')).allowed, true, 'other keys are not blocked');
      },
    );
  }
}

/** What lifts a block, what decides while it holds, and what never blocks. */
function liftingTests(suite: StoreSuite, lockouts: SkipOption): void {
  const { fresh, limiter, takeMany, needs } = suite;

  it(
    'unblock lifts the block and forgets the escalation; other keys stay blocked',
    needs(['token-bucket']),
    async () => {
      if (lockouts.skip !== false) return;
      await fresh();
      const l = limiter(tokenBucket({ limit: 2, period: '1h', block }));
      assert.equal((await refusal(l, 'a')).retryAfterMs, 2 * HOUR);
      suite.clock.advance(2 * HOUR);
      assert.equal((await refusal(l, 'a')).retryAfterMs, 4 * HOUR);
      assert.equal((await refusal(l, 'b')).retryAfterMs, 2 * HOUR);
      await l.unblock('a');
      assert.equal((await l.peek('a')).remaining, 2, 'a new key: full bucket');
      assert.equal((await refusal(l, 'a')).retryAfterMs, 2 * HOUR, 'the first duration again');
      assert.equal((await l.peek('b')).allowed, false);
      await l.unblock('never-seen');
    },
  );

  it(
    'the bucket decides when it refuses longer than the block; retryAfterMs is when a take is admitted',
    needs(['fixed-window']),
    async () => {
      if (lockouts.skip !== false) return;
      await fresh(Date.UTC(2026, 0, 15, 12, 0, 0));
      const l = limiter(fixedWindow({ limit: 2, window: '1h', block: { duration: '5m' } }));
      const refused = await refusal(l, 'k');
      assert.equal(refused.retryAfterMs, HOUR, 'the window ends after the 5-minute block');
      suite.clock.advance(5 * MINUTE);
      const after = await l.take('k');
      assert.deepEqual([after.allowed, after.retryAfterMs], [false, 55 * MINUTE]);
      // That refusal blocked again (factor 1: 5 minutes), still inside the window's wait.
      suite.clock.advance(55 * MINUTE);
      assert.equal((await l.take('k')).allowed, true);
    },
  );

  it(
    'a peek, a cost beyond capacity and a penalty: only a committed refusal blocks; a penalty still charges',
    needs(['token-bucket']),
    async () => {
      if (lockouts.skip !== false) return;
      await fresh();
      const l = limiter(tokenBucket({ limit: 2, period: '1m', block: { duration: '10m' } }));
      assert.equal((await l.take('k', { cost: 3 })).retryAfterMs, Infinity);
      await takeMany(l, 'k', 2);
      assert.equal((await l.peek('k')).allowed, false);
      suite.clock.advance('30s');
      assert.equal((await l.take('k')).allowed, true, 'neither blocked');
      const penalised = limiter(
        tokenBucket({ limit: 2, period: '1m', penalty: true, block: { duration: '10s' } }),
      );
      await takeMany(penalised, 'k', 2);
      assert.equal((await penalised.take('k')).retryAfterMs, 30_000, 'the wait outlasts the 10-second block');
      // The refused take was charged too: a minute passes before one more fits.
      suite.clock.advance('59s');
      assert.equal((await penalised.peek('k')).allowed, false);
      suite.clock.advance('1s');
      assert.equal((await penalised.take('k')).allowed, true);
    },
  );

  it(
    'all-or-nothing: a blocked key refuses the group; a group that refuses charges nothing and blocks nothing',
    needs(['token-bucket', 'fixed-window']),
    async () => {
      if (lockouts.skip !== false) return;
      await fresh(Date.UTC(2026, 0, 15, 12, 0, 0));
      const wide = limiter(fixedWindow({ limit: 5, window: '1h', block: { duration: '10m' } }));
      const narrow = limiter(tokenBucket({ limit: 1, period: '1h', block: { duration: '10m' } }));
      const group = createCascade([wide, narrow], { mode: 'all-or-nothing' });
      assert.equal((await group.take('k')).allowed, true);
      const refused = await group.take('k');
      assert.deepEqual(refused.refusedBy, [narrow.name]);
      assert.equal((await narrow.peek('k')).retryAfterMs, HOUR, 'not blocked, only empty');
      assert.equal((await wide.peek('k')).remaining, 4);
      // A single take's refusal blocks; the bucket's hour outlasts the 10-minute block.
      assert.equal((await narrow.take('k')).retryAfterMs, HOUR);
      suite.clock.advance(HOUR);
      assert.equal((await wide.take('k')).allowed, true);
      const blocked = limiter(fixedWindow({ limit: 1, window: '1m', block: { duration: '10m' } }));
      await refusal(blocked, 'k');
      suite.clock.advance('1m');
      const both = await createCascade([blocked, wide], { mode: 'all-or-nothing' }).take('k');
      assert.deepEqual([both.allowed, both.refusedBy], [false, [blocked.name]]);
      assert.equal(both.decisive.retryAfterMs, 9 * MINUTE);
      assert.equal((await wide.peek('k')).remaining, 4, 'the blocked group charged nothing');
    },
  );
}
