/**
 * The cases every shared store runs for refunds after a reset: a receipt from before its key's
 * last reset refunds nothing (limit 5, one reset, one instant: 10 admitted, where refunding the 5
 * old receipts admitted 15), and a receipt taken after the reset still refunds. The store's own
 * test file supplies how it makes a limiter and adds what is its own.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import {
  calendarQuota,
  fixedWindow,
  manualClock,
  slidingWindow,
  tokenBucket,
  type Limiter,
  type ManualClock,
  type Rule,
} from '../../src/index.js';

export const RESET_START = Date.UTC(2026, 0, 15, 12);

/** Every algorithm at limit 5, by title. */
export const resetRules: [string, () => Rule][] = [
  ['token bucket', () => tokenBucket({ limit: 5, period: '1h' })],
  ['fixed window', () => fixedWindow({ limit: 5, window: '1h' })],
  ['sliding window', () => slidingWindow({ limit: 5, window: '1h' })],
  ['calendar quota', () => calendarQuota({ limit: 5, per: 'day' })],
];

/** Takes 5 with receipts, resets, takes until refused, refunds the 5, takes again: the count. */
export async function admittedAroundReset(limiter: Limiter, key = 'k'): Promise<number> {
  const old = [];
  let admitted = 0;
  for (let i = 0; i < 5; i++) {
    const { decision, receipt } = await limiter.takeWithReceipt(key);
    if (decision.allowed) admitted++;
    old.push(receipt!);
  }
  await limiter.reset(key);
  for (let i = 0; i < 20 && (await limiter.take(key)).allowed; i++) admitted++;
  for (const receipt of old) await limiter.refund(receipt);
  for (let i = 0; i < 20 && (await limiter.take(key)).allowed; i++) admitted++;
  return admitted;
}

/**
 * Registers, for every algorithm on the application's time, the two cases; `limiterFor` makes a
 * limiter of `rule` on a fresh store on the app's time with `clock`; `also` adds `clock`-free
 * cases on the store's own time (its algorithms' first two, the token bucket and fixed window).
 */
export function refundAfterResetCases(
  limiterFor: (rule: Rule, clock: ManualClock | undefined) => Limiter,
): void {
  for (const [title, rule] of resetRules) {
    it(`${title}, application's time: limit 5 and one reset in one instant admit 10, not 15`, async () => {
      assert.equal(await admittedAroundReset(limiterFor(rule(), manualClock(RESET_START))), 10);
    });

    it(`${title}, application's time: a receipt taken after the reset still refunds`, async () => {
      const clock = manualClock(RESET_START);
      const limiter = limiterFor(rule(), clock);
      await limiter.takeWithReceipt('k');
      await limiter.reset('k');
      clock.advance(1);
      const { receipt } = await limiter.takeWithReceipt('k');
      assert.equal((await limiter.peek('k')).remaining, 4);
      await limiter.refund(receipt!);
      assert.equal((await limiter.peek('k')).remaining, 5, 'a charge made after the reset is given back');
    });
  }
  for (const [title, rule] of resetRules.slice(0, 2)) {
    it(`${title}, store's time: limit 5 and one reset in one instant admit 10, not 15`, async () => {
      assert.equal(await admittedAroundReset(limiterFor(rule(), undefined)), 10);
    });
  }
}

/**
 * Registers the case of a take under a per-call tier that refills more slowly than the store
 * remembers a reset (10 a day: a token refills in 2.4 h, longer than the rule's refund horizon of
 * about an hour): once the store has forgotten the reset (`forgetReset`, as its expiry or
 * prune() would), an old receipt still refunds nothing. `limiterFor` makes a limiter of
 * `tokenBucket({ limit: 10, period: '1m' })` on the app's time with `clock`.
 */
export function forgottenResetCase(
  title: string,
  limiterFor: (rule: Rule, clock: ManualClock) => Limiter,
  forgetReset: (limiter: Limiter) => Promise<void>,
): void {
  it(title, async () => {
    const clock = manualClock(RESET_START);
    const limiter = limiterFor(tokenBucket({ limit: 10, period: '1m' }), clock);
    const tier = { limit: 10, period: '1d', burst: 10 } as const;
    const old = [];
    for (let i = 0; i < 10; i++) old.push((await limiter.takeWithReceipt('k', tier)).receipt!);
    await limiter.reset('k');
    let admitted = 0;
    for (let i = 0; i < 20 && (await limiter.take('k', tier)).allowed; i++) admitted++;
    assert.equal(admitted, 10);
    clock.advance('2h');
    await forgetReset(limiter);
    for (const receipt of old) await limiter.refund(receipt);
    assert.equal((await limiter.take('k', tier)).allowed, false, 'no token given back, none refilled yet');
  });
}
