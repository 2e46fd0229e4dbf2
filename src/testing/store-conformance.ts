/**
 * The store conformance suite: every Store passes it with exact numbers, whichever process or
 * server holds the counts. It registers its tests with `node:test` (`describe` / `it`, with
 * `before` and `after` for the target's setup and teardown) and asserts with `node:assert`: run
 * it under `node --test`.
 *
 * A target supplies fresh stores that decide at the `now` they are given (the caller's clock),
 * so that the suite can move time with a manual clock instead of sleeping. A store that
 * normally uses its own clock offers a caller-clock mode for this; its own tests prove the
 * store-clock mode separately.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_COUNT, MAX_TOKEN_RATE } from '../core/bounds.js';
import type { CalendarUnit } from '../core/calendar.js';
import { manualClock, type ManualClock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import type { Duration } from '../core/duration.js';
import { isSluiceError } from '../core/errors.js';
import { fixedWindow } from '../core/rules/fixed-window.js';
import { tokenBucket } from '../core/rules/token-bucket.js';
import { calendarQuota } from '../core/rules/calendar-quota.js';
import type { Rule } from '../core/rules/rule.js';
import { slidingWindow } from '../core/rules/sliding-window.js';
import { createCascade } from '../limiter/cascade.js';
import { createLimiter, type Limiter } from '../limiter/limiter.js';
import type { Store } from '../stores/contract/store.js';
import { leaseConformance } from './lease-conformance.js';

/**
 * What the suite needs from a store under test: how to make a fresh one, and which rules it
 * supports.
 *
 * @default every built-in rule kind and calendar period; no setup, teardown or release
 * @example
 * storeConformance({ name: 'my store', create: async () => new MyStore({ timeSource: 'app' }) });
 */
export interface ConformanceTarget {
  /** Shown in test titles, e.g. "memory", "redis (ioredis)". */
  readonly name: string;
  /** `false` to run; otherwise the reason the whole suite is skipped (written, never silent). */
  readonly skip?: string | false;
  /** Runs once before the suite (connect, create a schema). */
  setup?(): Promise<void>;
  /** A store whose buckets are all empty, deciding at the caller's `now`. */
  create(): Promise<Store>;
  /** Runs once after the suite (drop keys, close connections). */
  teardown?(): Promise<void>;
  /** Per-test cleanup of a store made by `create`. */
  release?(store: Store): Promise<void>;
  /**
   * The limiters' store timeout. The suite fires 1,000 takes at once, which a remote store under
   * a loaded CI machine may not answer within the 100 ms default.
   * @default "100ms"
   */
  readonly timeout?: Duration;
  /**
   * The rule kinds the store supports (`rule.kind`: `'token-bucket'`, `'fixed-window'`,
   * `'sliding-window'`, `'calendar-quota'`). Tests that need another kind are skipped, saying so.
   * @default every built-in kind
   */
  readonly kinds?: readonly string[];
  /**
   * The calendar quota periods (`per`) the store supports. Tests of other periods are skipped,
   * saying so.
   * @default ["hour", "day", "week", "month"]
   */
  readonly calendarPeriods?: readonly CalendarUnit[];
  /**
   * Whether the store keeps lockouts (a rule's `block` option). Tests of lockouts are skipped,
   * saying so, when false.
   * @default true
   */
  readonly lockouts?: boolean;
  /**
   * Whether the store settles takes after the fact (`RuleBuckets.adjust`: refunds and
   * settlements). Tests of them are skipped, saying so, when false.
   * @default true
   */
  readonly refunds?: boolean;
  /**
   * Whether the store keeps leases (concurrency limits). Tests of them are skipped, saying so,
   * when false, and for a store without `bindLeases`.
   * @default true
   */
  readonly leases?: boolean;
  /**
   * Whether the store reserves slots (`RuleBuckets.reserve`, which `limiter.takeOrWait` needs).
   * Tests of it are skipped, saying so, when false.
   * @default true
   */
  readonly reservations?: boolean;
  /**
   * Whether the store takes a token bucket's per-call rate, period and burst (a `BucketTier`:
   * `limiter.take(key, { limit, period, burst })`). Tests of them are skipped, saying so, when
   * false.
   * @default true
   */
  readonly tiers?: boolean;
}

const HOUR = 3_600_000;
const MINUTE = 60_000;
const DAY = 86_400_000;
const allKinds = ['token-bucket', 'fixed-window', 'sliding-window', 'calendar-quota'];
const allPeriods: readonly CalendarUnit[] = ['hour', 'day', 'week', 'month'];

/**
 * Registers the store conformance suite for one store, as `node:test` tests inside one
 * `describe` named after the target. Call it at the top level of a test file run by
 * `node --test`.
 *
 * @example
 * import { storeConformance } from 'sluice/testing';
 * storeConformance({ name: 'my store', create: async () => new MyStore() });
 */
export function storeConformance(target: ConformanceTarget): void {
  describe(`store conformance: ${target.name}`, { skip: target.skip ?? false }, () => {
    let store: Store;
    let clock: ManualClock;
    let counter = 0;

    before(async () => {
      await target.setup?.();
    });
    after(async () => {
      await target.teardown?.();
    });

    // Each test gets a fresh store and fresh limit names, so no state leaks between tests.
    async function fresh(start = Date.UTC(2026, 0, 15, 12)): Promise<void> {
      if (store !== undefined) await target.release?.(store);
      store = await target.create();
      clock = manualClock(start);
    }
    // Without a target timeout the limiter takes the store's own bound (or 100 ms without one).
    function limiter(rule: Rule, name = `r${++counter}`, on: ManualClock | (() => number) = clock): Limiter {
      return createLimiter({
        name,
        rule,
        store,
        clock: on,
        ...(target.timeout === undefined ? {} : { timeout: target.timeout }),
      });
    }
    async function takeMany(l: Limiter, key: string, n: number, cost = 1): Promise<Decision[]> {
      const out: Decision[] = [];
      for (let i = 0; i < n; i++) out.push(await l.take(key, { cost }));
      return out;
    }
    const allowedCount = (ds: readonly Decision[]) => ds.filter((d) => d.allowed).length;
    // A test that needs a rule kind or a calendar period the store does not support is skipped
    // with the reason written out, never silently.
    const kinds = target.kinds ?? allKinds;
    const periods = target.calendarPeriods ?? allPeriods;
    function needs(required: readonly string[], per: readonly CalendarUnit[] = []): { skip: string | false } {
      const missing = required.filter((kind) => !kinds.includes(kind));
      if (missing.length > 0) return { skip: `${target.name} does not support ${missing.join(', ')} rules` };
      const missingPeriods = per.filter((unit) => !periods.includes(unit));
      if (missingPeriods.length > 0)
        return { skip: `${target.name} does not support calendar quotas per ${missingPeriods.join(', ')}` };
      return { skip: false };
    }

    after(async () => {
      if (store !== undefined) await target.release?.(store);
    });

    describe('token bucket', () => {
      it('a full bucket admits exactly `burst` at once, burst defaults to the limit (5 per hour -> 5)', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 5, period: '1h' }));
        const ds = await takeMany(l, 'ip-1', 6);
        assert.deepEqual(
          ds.map((d) => d.allowed),
          [true, true, true, true, true, false],
        );
        assert.deepEqual(
          ds.map((d) => d.remaining),
          [4, 3, 2, 1, 0, 0],
        );
        // Each admitted take pushes "full again" out by one interval (12 minutes).
        assert.deepEqual(
          ds.slice(0, 5).map((d) => d.resetMs),
          [12, 24, 36, 48, 60].map((m) => m * MINUTE),
        );
        const refused = ds[5]!;
        assert.equal(refused.retryAfterMs, 12 * MINUTE);
        assert.equal(refused.retryAfterSeconds, 720);
        assert.equal(refused.limit, 5);
        assert.equal(refused.capacity, 5);
        assert.equal(refused.name, l.name);
        assert.equal(refused.windowMs, HOUR, "a decision carries its window: makeDecision's 9th argument");
        assert.equal(refused.source, 'store');
      });

      it('an explicit burst caps what is taken at once; then the refill rate governs (30/min, burst 10)', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 30, period: '1m', burst: 10 }));
        assert.equal(allowedCount(await takeMany(l, 'u', 15)), 10);
        const refused = await l.take('u');
        assert.equal(refused.allowed, false);
        assert.equal(refused.retryAfterMs, 2000);
        clock.advance(1999);
        assert.equal((await l.take('u')).allowed, false);
        clock.advance(1);
        assert.equal((await l.take('u')).allowed, true);
        assert.equal((await l.take('u')).allowed, false);
        // One minute refills 30 tokens, but the bucket holds at most 10.
        clock.advance('1m');
        assert.equal(allowedCount(await takeMany(l, 'u', 12)), 10);
      });

      it('an idle bucket fills up to burst, never more', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 10, period: '10m' }));
        clock.advance('1d');
        const ds = await takeMany(l, 'k', 12);
        assert.equal(allowedCount(ds), 10);
        assert.equal(ds[0]!.remaining, 9);
        clock.advance('100d');
        assert.equal((await l.peek('k')).remaining, 10);
        assert.equal((await l.peek('k')).resetMs, 0);
      });

      it('refill is exact for periods that do not divide by the limit (7 per hour)', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 7, period: '1h' }));
        assert.equal(allowedCount(await takeMany(l, 'k', 8)), 7);
        // One token every 3,600,000 / 7 = 514,285.714… ms: not yet at 514,285, admitted at 514,286.
        const refused = await l.take('k');
        assert.equal(refused.retryAfterMs, 514_286);
        clock.advance(514_285);
        assert.equal((await l.take('k')).allowed, false);
        clock.advance(1);
        assert.equal((await l.take('k')).allowed, true);
        // Seven intervals make exactly one hour: after it the bucket is full again.
        clock.set(Date.UTC(2026, 0, 15, 12) + HOUR + 514_286);
        const peek = await l.peek('k');
        assert.equal(peek.remaining, 7);
      });

      it('weighted costs take several tokens at once', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 10, period: '10s' }));
        const first = await l.take('k', { cost: 3 });
        assert.equal(first.allowed, true);
        assert.equal(first.remaining, 7);
        assert.equal(first.cost, 3);
        assert.equal((await l.take('k', { cost: 7 })).remaining, 0);
        const refused = await l.take('k', { cost: 4 });
        assert.equal(refused.allowed, false);
        assert.equal(refused.retryAfterMs, 4000);
        clock.advance(4000);
        assert.equal((await l.take('k', { cost: 4 })).allowed, true);
      });

      it('a cost larger than burst is refused for good, and charges nothing', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 10, period: '10s', burst: 5 }));
        const d = await l.take('k', { cost: 6 });
        assert.equal(d.allowed, false);
        assert.equal(d.retryAfterMs, Infinity);
        // The bucket is not read: nothing is reported remaining, never more than it may hold.
        assert.equal(d.remaining, 0);
        assert.equal((await l.peek('k')).remaining, 5);
      });

      it('refusals consume nothing: hammering an empty bucket does not delay the next token', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 10, period: '10m' }));
        await takeMany(l, 'k', 10);
        const refusals = await takeMany(l, 'k', 100);
        assert.equal(allowedCount(refusals), 0);
        assert.ok(refusals.every((d) => d.retryAfterMs === MINUTE));
        clock.advance('1m');
        assert.equal((await l.take('k')).allowed, true);
      });

      it('a rule with penalty charges refusals, capped at one extra refill', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 10, period: '10m', penalty: true }));
        await takeMany(l, 'k', 10);
        const refused = await l.take('k');
        assert.equal(refused.allowed, false);
        assert.equal(refused.retryAfterMs, MINUTE);
        // The refused take was charged: the next one waits two intervals.
        assert.equal((await l.take('k')).retryAfterMs, 2 * MINUTE);
        await takeMany(l, 'k', 50);
        // Debt never exceeds one extra full refill: at most 10 minutes beyond empty.
        const capped = await l.take('k');
        assert.equal(capped.retryAfterMs, 10 * MINUTE + MINUTE);
        clock.advance('11m');
        assert.equal((await l.take('k')).allowed, true);
      });

      it('a peek (cost 0) reports what a take of 1 would get and charges nothing', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 2, period: '1m' }));
        const p0 = await l.peek('k');
        assert.equal(p0.allowed, true);
        assert.equal(p0.remaining, 2);
        assert.equal(p0.cost, 0);
        assert.equal((await l.take('k', { cost: 0 })).remaining, 2);
        await takeMany(l, 'k', 2);
        const p1 = await l.peek('k');
        assert.equal(p1.allowed, false);
        assert.equal(p1.remaining, 0);
        assert.equal(p1.retryAfterMs, 30_000);
        assert.equal(p1.resetMs, MINUTE);
        clock.advance('30s');
        assert.equal((await l.take('k')).allowed, true);
      });

      it('retryAfterSeconds rounds up and is at least 1', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 1, period: '1500ms' }));
        await l.take('k');
        const d = await l.take('k');
        assert.equal(d.retryAfterMs, 1500);
        assert.equal(d.retryAfterSeconds, 2);
        clock.advance(1499);
        const soon = await l.take('k');
        assert.equal(soon.retryAfterMs, 1);
        assert.equal(soon.retryAfterSeconds, 1);
      });
    });

    describe('calendar quota', () => {
      it('N per UTC day; the count resets exactly at midnight', async () => {
        await fresh(Date.UTC(2026, 4, 1, 23, 59, 59, 0));
        const l = limiter(calendarQuota({ limit: 10 }));
        const ds = await takeMany(l, 'acct', 11);
        assert.equal(allowedCount(ds), 10);
        assert.equal(ds[9]!.remaining, 0);
        assert.equal(ds[10]!.retryAfterMs, 1000);
        assert.equal(ds[10]!.resetMs, 1000);
        clock.advance(999);
        assert.equal((await l.take('acct')).allowed, false);
        clock.advance(1);
        const next = await l.take('acct');
        assert.equal(next.allowed, true);
        assert.equal(next.remaining, 9);
        assert.equal(next.resetMs, 24 * HOUR);
      });

      it('a per-call limit from data (api_keys.daily_limit) applies to that call', async () => {
        await fresh();
        const l = limiter(calendarQuota({ limit: 10 }));
        const ds: Decision[] = [];
        for (let i = 0; i < 4; i++) ds.push(await l.take('key-a', { limit: 3 }));
        assert.deepEqual(
          ds.map((d) => [d.allowed, d.limit, d.remaining]),
          [
            [true, 3, 2],
            [true, 3, 1],
            [true, 3, 0],
            [false, 3, 0],
          ],
        );
        // A raised limit (the key was upgraded) counts what was used today.
        assert.equal((await l.take('key-a', { limit: 5 })).remaining, 1);
        assert.equal((await l.take('key-b')).remaining, 9);
      });

      it('weighted costs and refusals without debt', async () => {
        await fresh();
        const l = limiter(calendarQuota({ limit: 10 }));
        assert.equal((await l.take('k', { cost: 8 })).remaining, 2);
        const refused = await l.take('k', { cost: 3 });
        assert.equal(refused.allowed, false);
        assert.equal(refused.remaining, 2);
        assert.equal((await l.take('k', { cost: 2 })).allowed, true);
        const never = await l.take('k', { cost: 11 });
        assert.equal(never.retryAfterMs, Infinity);
      });

      it('local days in Europe/Berlin: the count spans UTC midnight and resets at local midnight', async () => {
        // 21:30 UTC on 10 June is 23:30 in Berlin (UTC+2): half an hour to local midnight.
        await fresh(Date.UTC(2026, 5, 10, 21, 30));
        const l = limiter(calendarQuota({ limit: 2, timeZone: 'Europe/Berlin' }));
        assert.equal((await l.take('k')).resetMs, 30 * MINUTE);
        clock.set(Date.UTC(2026, 5, 10, 22, 0)); // local midnight
        assert.equal((await l.take('k')).remaining, 1);
        clock.set(Date.UTC(2026, 5, 11, 0, 30)); // UTC day changed, local day did not
        assert.equal((await l.take('k')).remaining, 0);
        assert.equal((await l.take('k')).allowed, false);
      });

      for (const [zone, date, hours] of [
        ['Europe/Berlin', [2026, 2, 29], 23],
        ['Europe/Berlin', [2026, 9, 25], 25],
        ['America/New_York', [2026, 2, 8], 23],
        ['America/New_York', [2026, 10, 1], 25],
      ] as const) {
        it(`${zone} ${date[0]}-${date[1] + 1}-${date[2]} lasts ${hours} hours (DST)`, async () => {
          const offset = zone === 'Europe/Berlin' ? (date[1] === 2 ? 1 : 2) : date[1] === 2 ? -5 : -4;
          const localMidnight = Date.UTC(date[0], date[1], date[2]) - offset * HOUR;
          await fresh(localMidnight);
          const l = limiter(calendarQuota({ limit: 1, timeZone: zone }));
          const first = await l.take('k');
          assert.equal(first.resetMs, hours * HOUR);
          assert.equal(first.windowMs, hours * HOUR, 'a quota decision carries the length of its day');
          clock.advance(hours * HOUR - 1);
          const last = await l.take('k');
          assert.equal(last.allowed, false);
          assert.equal(last.retryAfterMs, 1);
          clock.advance(1);
          assert.equal((await l.take('k')).allowed, true);
        });
      }

      it('a clock stepped back across midnight counts against the stored day: 5 a day admits exactly 5', async () => {
        const midnight = Date.UTC(2026, 4, 2);
        await fresh(midnight + 500);
        const l = limiter(calendarQuota({ limit: 5 }));
        assert.equal(allowedCount(await takeMany(l, 'acct', 3)), 3);
        clock.set(midnight - 500); // the clock steps back one second, into the day before
        const behind = await takeMany(l, 'acct', 5);
        assert.deepEqual(
          behind.map((d) => [d.allowed, d.remaining]),
          [
            [true, 1],
            [true, 0],
            [false, 0],
            [false, 0],
            [false, 0],
          ],
        );
        // Measured from now to the end of the stored day, which is 24 hours long.
        assert.equal(behind[0]!.resetMs, 24 * HOUR + 500);
        assert.equal(behind[0]!.windowMs, 24 * HOUR);
        assert.equal(behind[2]!.retryAfterMs, 24 * HOUR + 500);
        const peek = await l.peek('acct');
        assert.equal(peek.allowed, false);
        assert.equal(peek.remaining, 0);
        clock.set(midnight + 1000); // forward again: still the same day, still spent
        assert.equal(allowedCount(await takeMany(l, 'acct', 5)), 0);
        clock.set(midnight + 24 * HOUR); // the next day starts fresh
        assert.equal(allowedCount(await takeMany(l, 'acct', 6)), 5);
      });

      it('two nodes whose clocks are 1 s apart across midnight share one day: 5 a day admits exactly 5', async () => {
        const midnight = Date.UTC(2026, 4, 2);
        await fresh(midnight);
        // Two nodes on one bucket look to the store like one limit whose clock readings alternate
        // between theirs: node A reads 00:00:00.250, node B (1 s behind) 23:59:59.250.
        let reading = 0;
        const nodes = () => reading;
        const l = limiter(calendarQuota({ limit: 5 }), undefined, nodes);
        const ds: Decision[] = [];
        for (let i = 0; i < 10; i++) {
          reading = i % 2 === 0 ? midnight + 250 : midnight - 750;
          ds.push(await l.take('acct'));
        }
        assert.equal(allowedCount(ds), 5);
        assert.deepEqual(
          ds.slice(0, 5).map((d) => d.remaining),
          [4, 3, 2, 1, 0],
        );
        reading = midnight + 2000;
        assert.equal((await l.take('acct')).allowed, false);
        reading = midnight - 2000;
        assert.equal((await l.take('acct')).allowed, false);
      });

      it('bounds: a limit and a cost of MAX_COUNT are counted exactly', async () => {
        await fresh();
        const q = limiter(calendarQuota({ limit: MAX_COUNT }));
        const all = await q.take('k', { cost: MAX_COUNT });
        assert.equal(all.allowed, true);
        assert.equal(all.remaining, 0);
        assert.equal((await q.take('k')).allowed, false);
        const perCall = await q.take('other', { cost: MAX_COUNT - 1, limit: MAX_COUNT });
        assert.equal(perCall.remaining, 1);
      });
    });

    describe('fixed window', () => {
      const fixed = ['fixed-window'];
      // 12:00:30 UTC: half-way through an aligned minute.
      const halfway = Date.UTC(2026, 0, 15, 12, 0, 30);

      it(
        'admits exactly `limit` per aligned window; the next window starts from zero',
        needs(fixed),
        async () => {
          await fresh(halfway);
          const l = limiter(fixedWindow({ limit: 5, window: '1m' }));
          const ds = await takeMany(l, 'k', 6);
          assert.deepEqual(
            ds.map((d) => [d.allowed, d.remaining]),
            [
              [true, 4],
              [true, 3],
              [true, 2],
              [true, 1],
              [true, 0],
              [false, 0],
            ],
          );
          const refused = ds[5]!;
          assert.equal(refused.retryAfterMs, 30_000);
          assert.equal(refused.resetMs, 30_000);
          assert.equal(refused.windowMs, MINUTE);
          assert.equal(refused.limit, 5);
          clock.advance(29_999);
          assert.equal((await l.take('k')).allowed, false);
          clock.advance(1);
          const next = await l.take('k');
          assert.deepEqual([next.allowed, next.remaining, next.resetMs], [true, 4, MINUTE]);
        },
      );

      it(
        'weighted costs, a per-call limit, a cost beyond the limit refused for good',
        needs(fixed),
        async () => {
          await fresh(halfway);
          const l = limiter(fixedWindow({ limit: 5, window: '1m' }));
          assert.equal((await l.take('k', { cost: 3 })).remaining, 2);
          const refused = await l.take('k', { cost: 3 });
          assert.deepEqual([refused.allowed, refused.remaining, refused.retryAfterMs], [false, 2, 30_000]);
          const raised = await l.take('k', { cost: 3, limit: 8 });
          assert.deepEqual([raised.allowed, raised.limit, raised.remaining], [true, 8, 2]);
          const never = await l.take('other', { cost: 3, limit: 2 });
          assert.deepEqual([never.allowed, never.retryAfterMs], [false, Infinity]);
          assert.equal((await l.peek('other')).remaining, 5, 'nothing was charged');
        },
      );

      it('refusals charge nothing by default; with penalty they count', needs(fixed), async () => {
        await fresh(halfway);
        const plain = limiter(fixedWindow({ limit: 3, window: '1m' }));
        const strict = limiter(fixedWindow({ limit: 3, window: '1m', penalty: true }));
        for (const l of [plain, strict]) {
          assert.equal(allowedCount(await takeMany(l, 'k', 5)), 3);
          // A raised per-call limit shows what was counted: 3 without penalty, 5 with it.
        }
        assert.equal((await plain.take('k', { limit: 6 })).remaining, 2);
        assert.equal((await strict.take('k', { limit: 6 })).remaining, 0);
        clock.advance('30s');
        assert.equal((await strict.take('k')).remaining, 2, 'a new window forgets the penalty');
      });

      it('reset(key) empties that key only', needs(fixed), async () => {
        await fresh(halfway);
        const l = limiter(fixedWindow({ limit: 3, window: '1m' }));
        await takeMany(l, 'a', 3);
        await takeMany(l, 'b', 3);
        await l.reset('a');
        assert.equal((await l.peek('a')).remaining, 3);
        assert.equal((await l.peek('b')).remaining, 0);
      });

      it(
        'a clock stepped back counts against the stored window, which never moves back',
        needs(fixed),
        async () => {
          const minute = Date.UTC(2026, 0, 15, 12, 1);
          await fresh(minute + 500);
          const l = limiter(fixedWindow({ limit: 5, window: '1m' }));
          assert.equal(allowedCount(await takeMany(l, 'k', 3)), 3);
          clock.set(minute - 500);
          const behind = await takeMany(l, 'k', 3);
          assert.deepEqual(
            behind.map((d) => [d.allowed, d.remaining]),
            [
              [true, 1],
              [true, 0],
              [false, 0],
            ],
          );
          assert.equal(behind[0]!.resetMs, MINUTE + 500);
          clock.set(minute + MINUTE);
          assert.equal(allowedCount(await takeMany(l, 'k', 6)), 5);
        },
      );

      it('a limit and costs of MAX_COUNT are counted exactly, with penalty too', needs(fixed), async () => {
        await fresh(halfway);
        const l = limiter(fixedWindow({ limit: MAX_COUNT, window: '1h', penalty: true }));
        assert.equal((await l.take('k', { cost: MAX_COUNT })).remaining, 0);
        for (let i = 0; i < 3; i++) assert.equal((await l.take('k', { cost: MAX_COUNT })).allowed, false);
        const peek = await l.peek('k');
        assert.deepEqual([peek.allowed, peek.remaining], [false, 0]);
        const other = await l.take('j', { cost: MAX_COUNT - 1 });
        assert.equal(other.remaining, 1);
      });
    });

    describe('sliding window', () => {
      const sliding = ['sliding-window'];
      // 12:00:00 UTC: the start of an aligned minute.
      const aligned = Date.UTC(2026, 0, 15, 12);

      it(
        'the previous window weighs by the time left of it: exact counts and waits',
        needs(sliding),
        async () => {
          await fresh(aligned);
          const l = limiter(slidingWindow({ limit: 10, window: '1m' }));
          const ds = await takeMany(l, 'k', 11);
          assert.equal(allowedCount(ds), 10);
          assert.deepEqual(
            ds.slice(8).map((d) => [d.remaining, d.resetMs, d.windowMs]),
            [
              [1, MINUTE, MINUTE],
              [0, MINUTE, MINUTE],
              [0, MINUTE, MINUTE],
            ],
          );
          // Ten in the previous window weigh ceil(10 × (60 − e) / 60): at most 9 once e >= 6 s.
          assert.equal(ds[10]!.retryAfterMs, 66_000);
          clock.advance(65_999);
          assert.equal((await l.take('k')).allowed, false);
          clock.advance(1);
          const first = await l.take('k');
          assert.deepEqual([first.allowed, first.remaining], [true, 0]);
          clock.set(aligned + 90_000); // half-way: 10 weigh 5, plus the 1 just taken
          assert.equal((await l.peek('k')).remaining, 4);
          assert.equal((await l.take('k', { cost: 4 })).allowed, true);
          assert.equal((await l.take('k')).allowed, false);
          clock.set(aligned + 3 * MINUTE); // two windows on, nothing weighs
          assert.equal((await l.peek('k')).remaining, 10);
        },
      );

      it('weighted costs and a per-call limit', needs(sliding), async () => {
        await fresh(aligned);
        const l = limiter(slidingWindow({ limit: 10, window: '1m' }));
        assert.equal((await l.take('k', { cost: 4 })).remaining, 6);
        const refused = await l.take('k', { cost: 2, limit: 5 });
        assert.deepEqual([refused.allowed, refused.limit, refused.remaining], [false, 5, 1]);
        // Next window: the 4 weigh ceil(4 × (60 − e) / 60) <= 3 from e = 15 s.
        assert.equal(refused.retryAfterMs, 75_000);
        const never = await l.take('k', { cost: 6, limit: 5 });
        assert.deepEqual([never.allowed, never.retryAfterMs], [false, Infinity]);
        assert.equal((await l.take('k', { cost: 6 })).remaining, 0);
      });

      it(
        'refusals charge nothing by default; with penalty they weigh on the next window',
        needs(sliding),
        async () => {
          await fresh(aligned);
          const plain = limiter(slidingWindow({ limit: 2, window: '1m' }));
          const strict = limiter(slidingWindow({ limit: 2, window: '1m', penalty: true }));
          for (const l of [plain, strict]) assert.equal(allowedCount(await takeMany(l, 'k', 3)), 2);
          clock.set(aligned + 90_000); // half-way through the next window: 2 weigh 1, 3 weigh 2
          assert.equal((await plain.take('k')).allowed, true);
          assert.equal((await strict.take('k')).allowed, false);
          // Three quarters: the 3 weigh 1, and the refusal just charged counts 1 in this window.
          clock.set(aligned + 105_000);
          assert.equal((await strict.take('k')).allowed, false);
          clock.set(aligned + 3 * MINUTE);
          assert.equal((await strict.take('k')).allowed, true);
        },
      );

      it('reset(key) empties that key only, both windows', needs(sliding), async () => {
        await fresh(aligned);
        const l = limiter(slidingWindow({ limit: 3, window: '1m' }));
        await takeMany(l, 'a', 3);
        await takeMany(l, 'b', 3);
        clock.advance('1m');
        await l.reset('a');
        assert.equal((await l.peek('a')).remaining, 3);
        assert.equal((await l.peek('b')).remaining, 0);
      });

      it(
        'a clock stepped back counts against the stored window with the previous one in full',
        needs(sliding),
        async () => {
          await fresh(aligned + 500);
          const l = limiter(slidingWindow({ limit: 5, window: '1m' }));
          assert.equal(allowedCount(await takeMany(l, 'k', 3)), 3);
          clock.set(aligned - 500);
          const behind = await takeMany(l, 'k', 3);
          assert.deepEqual(
            behind.map((d) => [d.allowed, d.remaining]),
            [
              [true, 1],
              [true, 0],
              [false, 0],
            ],
          );
          assert.equal(behind[0]!.resetMs, MINUTE + 500);
          clock.set(aligned + MINUTE); // the next window: all 5 weigh in full
          assert.equal((await l.take('k')).allowed, false);
          clock.set(aligned + 2 * MINUTE);
          assert.equal(allowedCount(await takeMany(l, 'k', 6)), 5);
        },
      );

      it('a limit and costs of MAX_COUNT are counted exactly, with penalty too', needs(sliding), async () => {
        await fresh(aligned);
        const l = limiter(slidingWindow({ limit: MAX_COUNT, window: '1m', penalty: true }));
        assert.equal((await l.take('k', { cost: MAX_COUNT })).remaining, 0);
        for (let i = 0; i < 3; i++) assert.equal((await l.take('k', { cost: MAX_COUNT })).allowed, false);
        clock.set(aligned + 90_000); // the saturated count weighs 2 × MAX_COUNT / 2
        assert.equal((await l.peek('k')).remaining, 0);
        const q = limiter(slidingWindow({ limit: MAX_COUNT, window: '1m' }));
        await q.take('k', { cost: MAX_COUNT });
        clock.set(aligned + 150_000);
        assert.equal((await q.peek('k')).remaining, MAX_COUNT / 2);
      });
    });

    describe('fixed and sliding windows alike', () => {
      for (const [kind, make] of [
        ['fixed-window', fixedWindow],
        ['sliding-window', slidingWindow],
      ] as const) {
        it(
          `${kind}: 1,000 simultaneous takes on one key admit exactly the limit`,
          needs([kind]),
          async () => {
            await fresh();
            const l = limiter(make({ limit: 100, window: '1h' }));
            const ds = await Promise.all(Array.from({ length: 1000 }, () => l.take('hot')));
            assert.equal(allowedCount(ds), 100);
          },
        );
      }
    });

    describe('calendar quota per hour, week and month', () => {
      const quota = ['calendar-quota'];

      it('Asia/Kolkata hours run from UTC :30 to UTC :30', needs(quota, ['hour']), async () => {
        await fresh(Date.UTC(2026, 0, 15, 10, 29)); // 15:59 IST
        const l = limiter(calendarQuota({ limit: 2, per: 'hour', timeZone: 'Asia/Kolkata' }));
        const ds = await takeMany(l, 'k', 3);
        assert.deepEqual(
          ds.map((d) => [d.allowed, d.resetMs, d.windowMs]),
          [
            [true, MINUTE, HOUR],
            [true, MINUTE, HOUR],
            [false, MINUTE, HOUR],
          ],
        );
        assert.equal(ds[2]!.retryAfterMs, MINUTE);
        clock.advance('1m');
        assert.equal((await l.take('k')).remaining, 1);
      });

      it(
        'Europe/Berlin: the hour repeated when clocks go back has a quota of its own',
        needs(quota, ['hour']),
        async () => {
          await fresh(Date.UTC(2026, 9, 25, 0, 30)); // 02:30 CEST
          const l = limiter(calendarQuota({ limit: 1, per: 'hour', timeZone: 'Europe/Berlin' }));
          assert.equal((await l.take('k')).allowed, true);
          const refused = await l.take('k');
          assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 30 * MINUTE]);
          clock.set(Date.UTC(2026, 9, 25, 1, 30)); // 02:30 CET, an hour later
          assert.equal((await l.take('k')).allowed, true);
        },
      );

      it(
        'weeks from Sunday in America/New_York; a DST week is an hour short',
        needs(quota, ['week']),
        async () => {
          // Saturday 17 January 2026, 23:59 in New York (UTC-5).
          await fresh(Date.UTC(2026, 0, 18, 4, 59));
          const l = limiter(
            calendarQuota({ limit: 3, per: 'week', weekStart: 7, timeZone: 'America/New_York' }),
          );
          const ds = await takeMany(l, 'k', 4);
          assert.equal(allowedCount(ds), 3);
          assert.deepEqual([ds[3]!.retryAfterMs, ds[3]!.windowMs], [MINUTE, 7 * DAY]);
          clock.advance('1m');
          assert.equal((await l.take('k')).remaining, 2);
          clock.set(Date.UTC(2026, 2, 9, 12)); // the week of Sunday 8 March, when clocks go forward
          assert.equal((await l.take('k')).windowMs, 7 * DAY - HOUR);
        },
      );

      it('months from local day 1, 28 to 31 days long', needs(quota, ['month']), async () => {
        await fresh(Date.UTC(2026, 0, 31, 23, 59, 59, 999));
        const l = limiter(calendarQuota({ limit: 2, per: 'month' }));
        const jan = await l.take('k', { cost: 2 });
        assert.deepEqual([jan.remaining, jan.resetMs, jan.windowMs], [0, 1, 31 * DAY]);
        assert.equal((await l.take('k')).retryAfterMs, 1);
        clock.advance(1);
        const feb = await l.take('k');
        assert.deepEqual([feb.allowed, feb.remaining, feb.windowMs], [true, 1, 28 * DAY]);
      });

      it('a clock stepped back counts against the stored hour', needs(quota, ['hour']), async () => {
        const hour = Date.UTC(2026, 0, 15, 13);
        await fresh(hour + 500);
        const l = limiter(calendarQuota({ limit: 3, per: 'hour' }));
        await takeMany(l, 'k', 2);
        clock.set(hour - 500);
        const behind = await takeMany(l, 'k', 2);
        assert.deepEqual(
          behind.map((d) => [d.allowed, d.resetMs]),
          [
            [true, HOUR + 500],
            [false, HOUR + 500],
          ],
        );
      });
    });

    describe('all-or-nothing across every rule', () => {
      it(
        'one refusal charges nothing anywhere: token bucket, fixed and sliding windows, quotas per hour, week and month',
        needs(allKinds, ['hour', 'week', 'month']),
        async () => {
          await fresh(Date.UTC(2026, 0, 15, 12, 0, 30));
          const bucket = limiter(tokenBucket({ limit: 5, period: '1h' }));
          const fixed = limiter(fixedWindow({ limit: 3, window: '1m' }));
          const sliding = limiter(slidingWindow({ limit: 4, window: '1m' }));
          const hourly = limiter(calendarQuota({ limit: 10, per: 'hour', timeZone: 'Europe/Berlin' }));
          const weekly = limiter(calendarQuota({ limit: 10, per: 'week' }));
          const monthly = limiter(calendarQuota({ limit: 10, per: 'month', timeZone: 'Asia/Kolkata' }));
          const all = [bucket, fixed, sliding, hourly, weekly, monthly];
          const cascade = createCascade(all, { mode: 'all-or-nothing' });
          for (let i = 0; i < 3; i++) assert.equal((await cascade.take('k')).allowed, true);
          const refused = await cascade.take('k');
          assert.equal(refused.allowed, false);
          assert.deepEqual(refused.refusedBy, [fixed.name]);
          const left = await Promise.all(all.map((l) => l.peek('k')));
          assert.deepEqual(
            left.map((d) => d.remaining),
            [2, 0, 1, 7, 7, 7],
          );
          // The next minute the fixed window is fresh and the sliding one's 3 still weigh 3: one
          // more take fits everywhere, the one after is refused by the sliding window alone.
          clock.advance('30s');
          assert.equal((await cascade.take('k')).allowed, true);
          assert.deepEqual((await cascade.take('k')).refusedBy, [sliding.name]);
          assert.deepEqual(
            (await Promise.all(all.map((l) => l.peek('k')))).map((d) => d.remaining),
            [1, 2, 0, 6, 6, 6],
          );
        },
      );
    });

    describe('lockouts', () => {
      const lockouts =
        target.lockouts === false
          ? { skip: `${target.name} does not keep lockouts` }
          : { skip: false as const };
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
            clock.advance(2 * HOUR - 1);
            const still = await l.take('k');
            assert.deepEqual([still.allowed, still.remaining, still.retryAfterMs], [false, 0, 1]);
            const peek = await l.peek('k');
            assert.deepEqual([peek.allowed, peek.retryAfterMs], [false, 1], 'a peek sees the block');
            clock.advance(1);
            // Blocked takes were not charged: the rule admits as if they never came.
            assert.equal((await l.take('k')).allowed, true);
            const second = await refusal(l, 'k');
            assert.equal(second.retryAfterMs, 4 * HOUR, 'refused again soon after: twice as long');
            clock.advance(4 * HOUR);
            assert.equal((await refusal(l, 'k')).retryAfterMs, 7 * HOUR, '8 hours, capped at max');
            clock.advance(7 * HOUR);
            assert.equal((await refusal(l, 'k')).retryAfterMs, 7 * HOUR, 'stays at max');
            // Remembered until a day after the block's end: one millisecond before, it escalates…
            clock.advance(7 * HOUR + DAY - 1);
            assert.equal((await refusal(l, 'k')).retryAfterMs, 7 * HOUR);
            // …and exactly a day after the end of that block, it starts over.
            clock.advance(7 * HOUR + DAY);
            assert.equal((await refusal(l, 'k')).retryAfterMs, 2 * HOUR, 'forgotten: back to duration');
            assert.equal((await l.peek('other-key')).allowed, true, 'other keys are not blocked');
          },
        );
      }

      it(
        'unblock lifts the block and forgets the escalation; other keys stay blocked',
        needs(['token-bucket']),
        async () => {
          if (lockouts.skip !== false) return;
          await fresh();
          const l = limiter(tokenBucket({ limit: 2, period: '1h', block }));
          assert.equal((await refusal(l, 'a')).retryAfterMs, 2 * HOUR);
          clock.advance(2 * HOUR);
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
          clock.advance(5 * MINUTE);
          const after = await l.take('k');
          assert.deepEqual([after.allowed, after.retryAfterMs], [false, 55 * MINUTE]);
          // That refusal blocked again (factor 1: 5 minutes), still inside the window's wait.
          clock.advance(55 * MINUTE);
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
          clock.advance('30s');
          assert.equal((await l.take('k')).allowed, true, 'neither blocked');
          const penalised = limiter(
            tokenBucket({ limit: 2, period: '1m', penalty: true, block: { duration: '10s' } }),
          );
          await takeMany(penalised, 'k', 2);
          assert.equal(
            (await penalised.take('k')).retryAfterMs,
            30_000,
            'the wait outlasts the 10-second block',
          );
          // The refused take was charged too: a minute passes before one more fits.
          clock.advance('59s');
          assert.equal((await penalised.peek('k')).allowed, false);
          clock.advance('1s');
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
          clock.advance(HOUR);
          assert.equal((await wide.take('k')).allowed, true);
          const blocked = limiter(fixedWindow({ limit: 1, window: '1m', block: { duration: '10m' } }));
          await refusal(blocked, 'k');
          clock.advance('1m');
          const both = await createCascade([blocked, wide], { mode: 'all-or-nothing' }).take('k');
          assert.deepEqual([both.allowed, both.refusedBy], [false, [blocked.name]]);
          assert.equal(both.decisive.retryAfterMs, 9 * MINUTE);
          assert.equal((await wide.peek('k')).remaining, 4, 'the blocked group charged nothing');
        },
      );
    });

    describe('refunds and settlements', () => {
      const refunds =
        target.refunds === false
          ? { skip: `${target.name} does not settle takes` }
          : { skip: false as const };
      const open = (l: Limiter, key: string, cost = 1) =>
        l.takeWithReceipt(key, { cost }).then(({ decision, receipt }) => {
          assert.equal(decision.allowed, true);
          assert.ok(receipt !== undefined);
          return receipt;
        });
      const argumentError = (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT');

      it(
        'token bucket: a refund gives the cost back, never past full; a receipt settles once, on its own limiter',
        needs(['token-bucket']),
        async () => {
          if (refunds.skip !== false) return;
          await fresh();
          const l = limiter(tokenBucket({ limit: 5, period: '1m' }));
          const three = await open(l, 'k', 3);
          assert.deepEqual([three.cost, three.key, three.rule, three.at], [3, 'k', l.name, clock()]);
          await l.refund(three);
          assert.equal((await l.peek('k')).remaining, 5);
          await assert.rejects(l.refund(three), argumentError, 'a receipt settles once');
          const all = await open(l, 'k', 5);
          clock.advance('36s'); // three tokens back
          await l.refund(all);
          assert.equal((await l.peek('k')).remaining, 5, 'full, not 8');
          const other = limiter(tokenBucket({ limit: 5, period: '1m' }));
          const theirs = await open(other, 'k');
          await assert.rejects(l.refund(theirs), argumentError, "another limiter's receipt");
          await assert.rejects(l.refund({ ...theirs }), argumentError, 'a copy is not the receipt');
          await assert.rejects(
            other.refund({
              rule: other.name,
              key: 'k',
              cost: 1,
              at: clock(),
              until: clock(),
              limit: undefined,
              generation: undefined,
            }),
            argumentError,
          );
          assert.equal((await other.peek('k')).remaining, 4, 'nothing was given back');
          const refused = await l.takeWithReceipt('k', { cost: 6 });
          assert.deepEqual([refused.decision.allowed, refused.receipt], [false, undefined]);
          assert.equal((await l.takeWithReceipt('k', { cost: 0 })).receipt, undefined, 'a peek has none');
        },
      );

      it(
        "a refund of a take made before its key's last reset gives nothing back; one made after it does",
        needs(['token-bucket', 'fixed-window']),
        async () => {
          if (refunds.skip !== false) return;
          await fresh(Date.UTC(2026, 0, 15, 12, 0, 0));
          for (const rule of [
            tokenBucket({ limit: 5, period: '1h' }),
            fixedWindow({ limit: 5, window: '1h' }),
          ]) {
            const l = limiter(rule);
            // Limit 5 and one reset in one instant: 10 admitted, not 15.
            const old = [];
            for (let i = 0; i < 5; i++) old.push(await open(l, 'k'));
            await l.reset('k');
            let admitted = 0;
            for (let i = 0; i < 10 && (await l.take('k')).allowed; i++) admitted++;
            for (const receipt of old) await l.refund(receipt);
            for (let i = 0; i < 10 && (await l.take('k')).allowed; i++) admitted++;
            assert.equal(admitted, 5, `${rule.kind}: the old receipts gave nothing back`);
            // A take a millisecond after a reset refunds (in the same millisecond a store may
            // count it as before the reset: the safe side).
            await l.reset('k');
            clock.advance(1);
            await l.refund(await open(l, 'k'));
            assert.equal((await l.peek('k')).remaining, 5, `${rule.kind}: a take after the reset refunds`);
          }
        },
      );

      it(
        'settle: less than the estimate gives the rest back, more charges it whatever is left',
        needs(['fixed-window']),
        async () => {
          if (refunds.skip !== false) return;
          await fresh(Date.UTC(2026, 0, 15, 12, 0, 0));
          const l = limiter(fixedWindow({ limit: 100, window: '1h' }));
          await l.settle(await open(l, 'k', 10), 4);
          assert.equal((await l.peek('k')).remaining, 96);
          await l.settle(await open(l, 'k', 10), 25);
          assert.equal((await l.peek('k')).remaining, 71);
          await l.settle(await open(l, 'k', 70), 150);
          const over = await l.take('k');
          assert.deepEqual([over.allowed, over.remaining, over.retryAfterMs], [false, 0, 3_600_000]);
          const same = await open(l, 'j', 5);
          await l.settle(same, 5);
          await assert.rejects(l.settle(same, 1), argumentError, 'settled already');
          await assert.rejects(l.settle(await open(l, 'j'), -1), argumentError, 'a negative cost');
        },
      );

      it(
        "windows: a refund counts only while the take's window does; a sliding window takes it off the previous count",
        needs(['fixed-window', 'sliding-window', 'calendar-quota']),
        async () => {
          if (refunds.skip !== false) return;
          await fresh(Date.UTC(2026, 0, 15, 12, 0, 59));
          const fixed = limiter(fixedWindow({ limit: 5, window: '1m' }));
          const sliding = limiter(slidingWindow({ limit: 10, window: '1m' }));
          const daily = limiter(calendarQuota({ limit: 5 }));
          const late = await open(fixed, 'k', 2);
          const slid = await open(sliding, 'k', 6);
          const today = await open(daily, 'k', 3);
          clock.advance('1s'); // 12:01:00: a new minute, the same day
          await open(fixed, 'k', 1);
          await fixed.refund(late);
          assert.equal((await fixed.peek('k')).remaining, 4, 'the minute of the take is over');
          await open(sliding, 'k', 1); // the state rolls: the 6 are the previous count now
          assert.equal((await sliding.peek('k')).remaining, 3, '10 − 1 − 6 weighed in full');
          await sliding.refund(slid);
          assert.equal((await sliding.peek('k')).remaining, 9);
          await daily.refund(today);
          assert.equal((await daily.peek('k')).remaining, 5);
        },
      );

      it('a refund does not lift a lockout', needs(['token-bucket']), async () => {
        if (refunds.skip !== false || target.lockouts === false) return;
        await fresh();
        const l = limiter(tokenBucket({ limit: 2, period: '1m', block: { duration: '1h' } }));
        const first = await open(l, 'k');
        await open(l, 'k');
        assert.equal((await l.take('k')).retryAfterMs, 3_600_000);
        await l.refund(first);
        const still = await l.peek('k');
        assert.deepEqual([still.allowed, still.retryAfterMs], [false, 3_600_000]);
      });
    });

    describe("a token bucket's parameters per call (a plan's tier from data)", () => {
      const tiered =
        target.tiers === false
          ? { skip: `${target.name} does not take per-call token-bucket parameters` }
          : {};
      const opts = { ...needs(['token-bucket']), ...tiered };
      const view = (d: Decision) => [
        d.allowed,
        d.limit,
        d.capacity,
        d.remaining,
        d.retryAfterMs,
        d.resetMs,
        d.windowMs,
      ];

      it('a take under its own rate, period and burst: decided and reported under them', opts, async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 10, period: '1m' }));
        assert.deepEqual(view(await l.take('k', { limit: 100 })), [true, 100, 100, 99, 0, 600, 60_000]);
        assert.deepEqual(view(await l.take('j', { limit: 2, period: '1s', burst: 5 })), [
          true,
          2,
          5,
          4,
          0,
          500,
          1_000,
        ]);
        assert.deepEqual(view(await l.take('j', { limit: 2, period: '1s', burst: 5, cost: 4 })), [
          true,
          2,
          5,
          0,
          0,
          2_500,
          1_000,
        ]);
        assert.deepEqual(view(await l.take('j', { limit: 2, period: '1s', burst: 5 })), [
          false,
          2,
          5,
          0,
          500,
          2_500,
          1_000,
        ]);
        // More than the tier's burst: refused before the store, nothing reported remaining.
        assert.deepEqual(view(await l.take('i', { burst: 3, cost: 4 })), [
          false,
          10,
          3,
          0,
          Infinity,
          0,
          60_000,
        ]);
        const own = await l.take('i');
        assert.deepEqual(
          [own.limit, own.capacity, own.remaining],
          [10, 10, 9],
          'the rule itself for a call without',
        );
      });

      it(
        'a change of tier keeps the fraction of the bucket in use (and its time until full): neither refilled nor counted twice',
        opts,
        async () => {
          await fresh();
          const l = limiter(tokenBucket({ limit: 10, period: '1m' }));
          const pro = { limit: 100 };
          assert.equal((await l.take('k', { cost: 3 })).remaining, 7);
          // 3 of 10 in use is 30 of 100.
          const upgraded = await l.peek('k', pro);
          assert.deepEqual([upgraded.remaining, upgraded.resetMs], [70, 18_000]);
          assert.deepEqual(view(await l.take('k', { ...pro, cost: 10 })), [
            true,
            100,
            100,
            60,
            0,
            24_000,
            60_000,
          ]);
          // 40 of 100 in use is 4 of 10, and the bucket is full at the same instant under either.
          const back = await l.peek('k');
          assert.deepEqual([back.remaining, back.resetMs], [6, 24_000]);
          clock.advance('12s');
          assert.deepEqual([(await l.peek('k')).remaining, (await l.peek('k', pro)).remaining], [8, 80]);
        },
      );

      it('an emptied bucket stays empty under a larger tier and refills at its rate', opts, async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 10, period: '1m' }));
        assert.equal((await l.take('k', { cost: 10 })).remaining, 0);
        const faster = { limit: 60, period: '1m', burst: 60 } as const;
        assert.deepEqual(view(await l.take('k', faster)), [false, 60, 60, 0, 1_000, 60_000, 60_000]);
        clock.advance('1s');
        assert.deepEqual(view(await l.take('k', faster)), [true, 60, 60, 0, 0, 60_000, 60_000]);
        // A smaller tier: the same fraction (all) of a smaller bucket, a token an hour.
        const slower = await l.take('k', { limit: 1, period: '1h', burst: 2 });
        assert.deepEqual([slower.allowed, slower.remaining, slower.retryAfterMs], [false, 0, 3_600_000]);
      });

      it('a refund gives back in the units of the tier the take was made under', opts, async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 10, period: '1m' }));
        const taken = await l.takeWithReceipt('k', { limit: 100, cost: 50 });
        assert.equal(taken.decision.remaining, 50);
        assert.equal((await l.peek('k')).remaining, 5, 'half the bucket under the rule too');
        await l.refund(taken.receipt!);
        assert.deepEqual(
          [(await l.peek('k', { limit: 100 })).remaining, (await l.peek('k')).remaining],
          [100, 10],
        );
        const estimated = await l.takeWithReceipt('k', { limit: 100, cost: 20 });
        await l.settle(estimated.receipt!, 30);
        assert.equal((await l.peek('k', { limit: 100 })).remaining, 70);
      });

      it('all or nothing with tiered entries: each decided under its own parameters', opts, async () => {
        await fresh();
        const a = limiter(tokenBucket({ limit: 10, period: '1m' }));
        const b = limiter(tokenBucket({ limit: 5, period: '1h' }));
        const tier = { limit: 2, periodMs: 1_000, burst: 2 };
        const both = await store.takeAll(
          [
            { buckets: a.buckets, key: 'k', cost: 2, limit: tier },
            { buckets: b.buckets, key: 'k', cost: 1, limit: undefined },
          ],
          clock(),
        );
        assert.deepEqual(both.map(view), [
          [true, 2, 2, 0, 0, 1_000, 1_000],
          [true, 5, 5, 4, 0, 720_000, 3_600_000],
        ]);
        const refused = await store.takeAll(
          [
            { buckets: a.buckets, key: 'k', cost: 1, limit: tier },
            { buckets: b.buckets, key: 'k', cost: 1, limit: undefined },
          ],
          clock(),
        );
        assert.deepEqual(
          refused.map((d) => [d.allowed, d.retryAfterMs]),
          [
            [false, 500],
            [true, 0],
          ],
        );
        assert.equal((await b.peek('k')).remaining, 4, 'nothing charged when one refuses');
      });

      it(
        'a reservation queues under its tier',
        {
          ...opts,
          ...(target.reservations === false ? { skip: `${target.name} does not reserve slots` } : {}),
        },
        async () => {
          await fresh();
          const l = limiter(tokenBucket({ limit: 1, period: '1m' }));
          const tier = { limit: 2, periodMs: 1_000, burst: 1 };
          const reserve = () =>
            l.buckets.reserve!('k', 1, clock(), 5_000, tier).then((d) => [
              d.allowed,
              d.retryAfterMs,
              d.limit,
            ]);
          assert.deepEqual(await reserve(), [true, 0, 2]);
          assert.deepEqual(await reserve(), [true, 500, 2]);
          assert.deepEqual(await reserve(), [true, 1_000, 2]);
          const waited = await l.takeOrWait('j', { maxWait: '1s', limit: 2, period: '1s', burst: 1 });
          assert.deepEqual([waited.decision.allowed, waited.waitedMs, waited.decision.limit], [true, 0, 2]);
        },
      );
    });

    describe('waiting for a slot', () => {
      const waits = target.reservations === false ? { skip: `${target.name} does not reserve slots` } : {};
      const configError = (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG');

      it(
        'a token bucket reserves slots in order, each with its wait; one beyond maxWait is refused and charges nothing',
        { ...needs(['token-bucket']), ...waits },
        async () => {
          await fresh();
          const l = limiter(tokenBucket({ limit: 1, period: '1s' }));
          const reserve = (maxWaitMs: number, cost = 1) =>
            l.buckets.reserve!('k', cost, clock(), maxWaitMs).then((d) => [d.allowed, d.retryAfterMs]);
          assert.deepEqual(await reserve(5_000), [true, 0]);
          assert.deepEqual(await reserve(5_000), [true, 1_000]);
          assert.deepEqual(await reserve(5_000), [true, 2_000]);
          assert.deepEqual(await reserve(1_500), [false, 3_000], 'the slot is 3 s away');
          assert.deepEqual(await reserve(3_000), [true, 3_000], 'the refusal took no slot');
          assert.deepEqual(await reserve(5_000, 2), [false, Infinity], 'more than the burst');
          clock.advance('1s');
          const peek = await l.peek('k');
          assert.deepEqual([peek.allowed, peek.remaining, peek.retryAfterMs], [false, 0, 3_000]);
          assert.deepEqual(await reserve(0), [false, 3_000], 'a take finds the queue');
        },
      );

      it(
        'a reservation whose wait ends between two milliseconds keeps the exact arrival time: the next decision sees the bucket full in whole time',
        { ...needs(['token-bucket']), ...waits },
        async () => {
          await fresh();
          // A token every 3333⅓ ms: the second reservation waits 3333⅓ ms (reported 3,334), and
          // the six tokens taken then refill in exactly 20 s.
          const l = limiter(tokenBucket({ limit: 3, period: '10s', burst: 5 }));
          const reserve = (cost: number, maxWaitMs: number) =>
            l.buckets.reserve!('k', cost, clock(), maxWaitMs).then((d) => [
              d.allowed,
              d.retryAfterMs,
              d.resetMs,
            ]);
          assert.deepEqual(await reserve(3, 0), [true, 0, 10_000]);
          assert.deepEqual(await reserve(3, 30_000), [true, 3_334, 20_000]);
          assert.deepEqual(await reserve(1, 0), [false, 6_667, 20_000]);
          const peek = await l.peek('k');
          assert.deepEqual([peek.remaining, peek.resetMs], [0, 20_000]);
        },
      );

      it(
        'takeOrWait: at once when the bucket has room, refused at once beyond maxWait; an aborted wait gives back exactly its reservation',
        { ...needs(['token-bucket']), ...waits },
        async () => {
          await fresh();
          const l = limiter(tokenBucket({ limit: 1, period: '1m' }));
          const now = await l.takeOrWait('k', { maxWait: '5m' });
          assert.deepEqual([now.decision.allowed, now.waitedMs, now.receipt?.cost], [true, 0, 1]);
          const refused = await l.takeOrWait('k', { maxWait: '30s' });
          assert.deepEqual(
            [refused.decision.allowed, refused.decision.retryAfterMs, refused.receipt, refused.waitedMs],
            [false, 60_000, undefined, 0],
          );
          const first = new AbortController();
          const second = new AbortController();
          // Both reservations must have landed before the first wait is aborted: on a store with a
          // pool of connections the two travel on different ones, in no fixed order.
          let reported = 0;
          let bothReserved!: () => void;
          const reserved = new Promise<void>((resolve) => (bothReserved = resolve));
          const unsubscribe = l.events.subscribe(() => {
            if (++reported === 2) bothReserved();
          });
          const waiting = l.takeOrWait('k', { maxWait: '5m', signal: first.signal });
          const behind = l.takeOrWait('k', { maxWait: '5m', signal: second.signal });
          await reserved;
          unsubscribe();
          const reason = new Error('client left');
          first.abort(reason);
          await assert.rejects(waiting, (e) => e === reason);
          // The slot at 60 s is given back: a newcomer queues behind the one at 60 s left.
          const probe = await l.buckets.reserve!('k', 1, clock(), 300_000);
          assert.deepEqual([probe.allowed, probe.retryAfterMs], [true, 120_000]);
          second.abort();
          await assert.rejects(behind, (e) => e instanceof Error && e.name === 'AbortError');
          const aborted = new AbortController();
          aborted.abort();
          await assert.rejects(l.takeOrWait('k', { maxWait: '5m', signal: aborted.signal }));
          const after = await l.buckets.reserve!('k', 1, clock(), 300_000);
          assert.equal(after.retryAfterMs, 120_000, 'an aborted signal reserves nothing; the probe is kept');
        },
      );

      it(
        'takeOrWait resolves once its slot arrives, with the decision as of then',
        { ...needs(['token-bucket']), ...waits },
        async () => {
          await fresh();
          const l = limiter(tokenBucket({ limit: 1, period: '20ms' }));
          await l.take('k');
          const waited = await l.takeOrWait('k', { maxWait: '1s' });
          const { decision } = waited;
          assert.deepEqual(
            [decision.allowed, decision.retryAfterMs, decision.remaining, decision.resetMs, waited.waitedMs],
            [true, 0, 0, 20, 20],
          );
          assert.ok(waited.receipt !== undefined);
        },
      );

      it(
        'windows, calendar quotas and lockouts cannot reserve: SLUICE_CONFIG',
        { ...needs(allKinds), ...waits },
        async () => {
          await fresh();
          for (const rule of [
            fixedWindow({ limit: 5, window: '1m' }),
            slidingWindow({ limit: 5, window: '1m' }),
            calendarQuota({ limit: 5 }),
            tokenBucket({ limit: 5, period: '1m', block: { duration: '1h' } }),
          ]) {
            const l = limiter(rule);
            await assert.rejects(l.takeOrWait('k', { maxWait: '1s' }), configError);
            await assert.rejects(l.buckets.reserve!('k', 1, clock(), 1_000), configError);
            assert.equal((await l.peek('k')).remaining, 5, 'nothing charged');
          }
        },
      );
    });

    describe('shadow mode', () => {
      it(
        'a shadow limit is charged as enforcement would be and never refuses; switching it to enforce keeps its buckets',
        needs(['token-bucket', 'sliding-window']),
        async () => {
          await fresh(Date.UTC(2026, 0, 15, 12, 0, 30));
          for (const rule of [
            () => tokenBucket({ limit: 3, period: '1m' }),
            () => slidingWindow({ limit: 3, window: '1m' }),
          ]) {
            const name = `shadowed${++counter}`;
            const timeout = target.timeout === undefined ? {} : { timeout: target.timeout };
            const trial = createLimiter({ name, rule: rule(), store, clock, mode: 'shadow', ...timeout });
            const twin = limiter(rule());
            assert.equal(trial.mode, 'shadow');
            for (const step of [1, 1, 2, 1, 0, 1, 3, 1]) {
              if (step === 0) clock.advance('20s');
              const cost = step === 0 ? 1 : step;
              const [shadowed, enforced] = [await trial.take('k', { cost }), await twin.take('k', { cost })];
              assert.equal(shadowed.allowed, true, 'never refuses');
              assert.equal(shadowed.source, enforced.allowed ? 'store' : 'shadow');
              assert.deepEqual(
                [shadowed.remaining, shadowed.retryAfterMs, shadowed.resetMs],
                [enforced.remaining, enforced.retryAfterMs, enforced.resetMs],
                'what enforcement would have said',
              );
            }
            // The buckets hold what enforcement's would: a peek sees the same state. (Switching the
            // name to enforce binds these very buckets on a store that keeps them after unbind.)
            const [seen, expected] = [await trial.peek('k'), await twin.peek('k')];
            assert.deepEqual(
              [seen.remaining, seen.retryAfterMs, seen.resetMs],
              [expected.remaining, expected.retryAfterMs, expected.resetMs],
            );
            trial.close();
          }
        },
      );
    });

    describe('bounds', () => {
      it('a cost of MAX_COUNT beyond the rule is refused for good, not an error', async () => {
        await fresh();
        const tb = limiter(tokenBucket({ limit: 5, period: '1h' }));
        const q = limiter(calendarQuota({ limit: 5 }));
        for (const l of [tb, q]) {
          const d = await l.take('k', { cost: MAX_COUNT });
          assert.equal(d.allowed, false);
          assert.equal(d.retryAfterMs, Infinity);
          assert.equal((await l.peek('k')).remaining, 5, 'nothing was charged');
        }
      });

      it('a token bucket at MAX_TOKEN_RATE with a burst of MAX_COUNT is exact', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: MAX_TOKEN_RATE, period: '1s', burst: MAX_COUNT }));
        const all = await l.take('k', { cost: MAX_COUNT });
        assert.equal(all.allowed, true);
        assert.equal(all.remaining, 0);
        const refused = await l.take('k');
        assert.equal(refused.allowed, false);
        assert.equal(refused.retryAfterMs, 1);
        clock.advance(1); // one millisecond refills 1,000 tokens
        assert.equal((await l.take('k', { cost: 1000 })).allowed, true);
        assert.equal((await l.take('k')).allowed, false);
      });
    });

    describe('keys, resets and independence', () => {
      it('reset(key) gives a full bucket to that key only', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 3, period: '1h' }));
        await takeMany(l, 'a', 3);
        await takeMany(l, 'b', 3);
        await l.reset('a');
        assert.equal((await l.peek('a')).remaining, 3);
        assert.equal((await l.peek('b')).remaining, 0);
        const q = limiter(calendarQuota({ limit: 2 }));
        await takeMany(q, 'a', 2);
        await q.reset('a');
        assert.equal((await q.take('a')).remaining, 1);
        await l.reset('never-seen');
      });

      it('two limits keep their own counters even when keys are equal', async () => {
        await fresh();
        const wide = limiter(tokenBucket({ limit: 3, period: '1h' }));
        const narrow = limiter(tokenBucket({ limit: 3, period: '1h' }));
        await takeMany(wide, 'same', 3);
        assert.equal((await narrow.take('same')).remaining, 2);
        assert.equal((await wide.take('same')).allowed, false);
      });

      it('any string is a safe key: prototype names, unicode, separators, 1 MB', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 1, period: '1h' }));
        const big = 'x'.repeat(1 << 20);
        const keys = [
          '__proto__',
          'constructor',
          'hasOwnProperty',
          '🦀 ümlaut',
          'a:b',
          'a',
          'a:',
          ':a',
          big,
          `${big}y`,
          ' ',
        ];
        for (const key of keys)
          assert.equal((await l.take(key)).allowed, true, `first take of ${key.slice(0, 20)}`);
        for (const key of keys)
          assert.equal((await l.take(key)).allowed, false, `second take of ${key.slice(0, 20)}`);
      });
    });

    describe('atomicity', () => {
      it('1,000 simultaneous takes on one key with burst 100 admit exactly 100', async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 100, period: '1h' }));
        const ds = await Promise.all(Array.from({ length: 1000 }, () => l.take('hot')));
        assert.equal(allowedCount(ds), 100);
        const q = limiter(calendarQuota({ limit: 100 }));
        const qs = await Promise.all(Array.from({ length: 1000 }, () => q.take('hot')));
        assert.equal(allowedCount(qs), 100);
      });

      it('an all-or-nothing cascade charges every limit or none', async () => {
        await fresh();
        const a = limiter(tokenBucket({ limit: 5, period: '1h' }));
        const b = limiter(tokenBucket({ limit: 2, period: '1h' }));
        const q = limiter(calendarQuota({ limit: 10 }));
        const cascade = createCascade([a, b, q], { mode: 'all-or-nothing' });
        assert.equal((await cascade.take(['ip', 'ip+nick', 'acct'])).allowed, true);
        assert.equal((await cascade.take(['ip', 'ip+nick', 'acct'])).allowed, true);
        const refused = await cascade.take(['ip', 'ip+nick', 'acct']);
        assert.equal(refused.allowed, false);
        assert.deepEqual(refused.refusedBy, [b.name]);
        assert.equal(refused.decisive.name, b.name);
        assert.equal(refused.decisions.length, 3);
        // Nothing was charged by the refused cascade.
        assert.equal((await a.peek('ip')).remaining, 3);
        assert.equal((await q.peek('acct')).remaining, 8);
        // Concurrent cascades on a shared narrow limit: exactly its capacity gets through, and
        // the wide limit is charged exactly that often.
        const c = limiter(tokenBucket({ limit: 50, period: '1h' }));
        const d = limiter(tokenBucket({ limit: 20, period: '1h' }));
        const both = createCascade([c, d], { mode: 'all-or-nothing' });
        const results = await Promise.all(Array.from({ length: 200 }, () => both.take('k')));
        assert.equal(results.filter((r) => r.allowed).length, 20);
        assert.equal((await c.peek('k')).remaining, 30);
      });

      it('an all-or-nothing take naming one bucket twice is SLUICE_ARGUMENT and charges nothing', async () => {
        await fresh();
        const a = limiter(tokenBucket({ limit: 5, period: '1h' }));
        const b = limiter(calendarQuota({ limit: 5 }));
        const entry = (l: Limiter, key: string) => ({ buckets: l.buckets, key, cost: 1, limit: undefined });
        await assert.rejects(
          store.takeAll([entry(a, 'k'), entry(b, 'k'), entry(a, 'k')], clock()),
          (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'),
        );
        assert.equal((await a.peek('k')).remaining, 5);
        assert.equal((await b.peek('k')).remaining, 5);
        // The same key under two rules, or two keys under one rule, are distinct buckets.
        const ok = await store.takeAll([entry(a, 'k'), entry(b, 'k'), entry(a, 'j')], clock());
        assert.deepEqual(
          ok.map((d) => d.remaining),
          [4, 4, 4],
        );
      });

      it('first-refusal cascade: the first refusal stops the chain, later limits are not charged', async () => {
        await fresh();
        const wide = limiter(tokenBucket({ limit: 2, period: '1h' }));
        const narrow = limiter(tokenBucket({ limit: 5, period: '1h' }));
        const cascade = createCascade([wide, narrow]);
        await cascade.take('k');
        await cascade.take('k');
        const refused = await cascade.take('k');
        assert.equal(refused.allowed, false);
        assert.equal(refused.decisions.length, 1);
        assert.deepEqual(refused.refusedBy, [wide.name]);
        assert.equal((await narrow.peek('k')).remaining, 3);
      });
    });

    leaseConformance({
      name: target.name,
      skip: target.leases === false ? `${target.name} keeps no leases` : false,
      timeout: target.timeout,
      fresh: () => fresh(),
      store: () => store,
      clock: () => clock,
      nextName: () => `r${++counter}`,
    });
  });
}
