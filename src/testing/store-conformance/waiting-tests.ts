/** Waiting for a slot (`RuleBuckets.reserve`, what `limiter.takeOrWait` needs). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../core/errors.js';
import { ruleEntries } from '../../core/rules/index.js';
import type { Rule } from '../../core/rules/rule.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { allKinds, type StoreSuite } from './harness.js';

/** Registers the tests of waiting for a slot. */
export function waitingTests(suite: StoreSuite): void {
  const { fresh, limiter, needs } = suite;

  describe('waiting for a slot', () => {
    const waits =
      suite.target.reservations === false ? { skip: `${suite.target.name} does not reserve slots` } : {};
    const configError = (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG');

    it(
      'a token bucket reserves slots in order, each with its wait; one beyond maxWait is refused and charges nothing',
      { ...needs(['token-bucket']), ...waits },
      async () => {
        await fresh();
        const l = limiter(tokenBucket({ limit: 1, period: '1s' }));
        const reserve = (maxWaitMs: number, cost = 1) =>
          l.buckets.reserve!('k', cost, suite.clock(), maxWaitMs).then((d) => [d.allowed, d.retryAfterMs]);
        assert.deepEqual(await reserve(5_000), [true, 0]);
        assert.deepEqual(await reserve(5_000), [true, 1_000]);
        assert.deepEqual(await reserve(5_000), [true, 2_000]);
        assert.deepEqual(await reserve(1_500), [false, 3_000], 'the slot is 3 s away');
        assert.deepEqual(await reserve(3_000), [true, 3_000], 'the refusal took no slot');
        assert.deepEqual(await reserve(5_000, 2), [false, Infinity], 'more than the burst');
        suite.clock.advance('1s');
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
          l.buckets.reserve!('k', cost, suite.clock(), maxWaitMs).then((d) => [
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
        const probe = await l.buckets.reserve!('k', 1, suite.clock(), 300_000);
        assert.deepEqual([probe.allowed, probe.retryAfterMs], [true, 120_000]);
        second.abort();
        await assert.rejects(behind, (e) => e instanceof Error && e.name === 'AbortError');
        const aborted = new AbortController();
        aborted.abort();
        await assert.rejects(l.takeOrWait('k', { maxWait: '5m', signal: aborted.signal }));
        const after = await l.buckets.reserve!('k', 1, suite.clock(), 300_000);
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
        for (const rule of unreservable()) {
          const l = limiter(rule);
          await assert.rejects(l.takeOrWait('k', { maxWait: '1s' }), configError);
          await assert.rejects(l.buckets.reserve!('k', 1, suite.clock(), 1_000), configError);
          assert.equal((await l.peek('k')).remaining, rule.limit, 'nothing charged');
        }
      },
    );
  });
}

/**
 * A rule of every registered kind that cannot reserve: its example when the kind keeps no
 * schedule (a window, a quota), and under a lockout, which a reservation would jump, when it does
 * (a token bucket).
 */
function unreservable(): Rule[] {
  return ruleEntries.map((entry) => {
    const rule = entry.create(entry.example);
    return rule.reserve === undefined ? rule : entry.create({ ...entry.example, block: { duration: '1h' } });
  });
}
