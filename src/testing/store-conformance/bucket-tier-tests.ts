/** A token bucket's rate, period and burst given per call (a plan's tier read from data). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Decision } from '../../core/decision.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import type { SkipOption, StoreSuite } from './harness.js';

/** What a decision says, in the order the tests list it. */
const view = (d: Decision) => [
  d.allowed,
  d.limit,
  d.capacity,
  d.remaining,
  d.retryAfterMs,
  d.resetMs,
  d.windowMs,
];

/** Registers the per-call token bucket tests. */
export function bucketTierTests(suite: StoreSuite): void {
  describe("a token bucket's parameters per call (a plan's tier from data)", () => {
    const tiered =
      suite.target.tiers === false
        ? { skip: `${suite.target.name} does not take per-call token-bucket parameters` }
        : {};
    const opts = { ...suite.needs(['token-bucket']), ...tiered };
    tierTests(suite, opts);
    tieredChargeTests(suite, opts);
  });
}

/** A take decided and reported under its own tier, and changes of tier. */
function tierTests(suite: StoreSuite, opts: SkipOption): void {
  const { fresh, limiter } = suite;

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
    assert.deepEqual(view(await l.take('i', { burst: 3, cost: 4 })), [false, 10, 3, 0, Infinity, 0, 60_000]);
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
      suite.clock.advance('12s');
      assert.deepEqual([(await l.peek('k')).remaining, (await l.peek('k', pro)).remaining], [8, 80]);
    },
  );
}

/** Refunds, all-or-nothing groups and reservations under tiers. */
function tieredChargeTests(suite: StoreSuite, opts: SkipOption): void {
  const { fresh, limiter } = suite;

  it('an emptied bucket stays empty under a larger tier and refills at its rate', opts, async () => {
    await fresh();
    const l = limiter(tokenBucket({ limit: 10, period: '1m' }));
    assert.equal((await l.take('k', { cost: 10 })).remaining, 0);
    const faster = { limit: 60, period: '1m', burst: 60 } as const;
    assert.deepEqual(view(await l.take('k', faster)), [false, 60, 60, 0, 1_000, 60_000, 60_000]);
    suite.clock.advance('1s');
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
    const both = await suite.store.takeAll(
      [
        { buckets: a.buckets, key: 'k', cost: 2, limit: tier },
        { buckets: b.buckets, key: 'k', cost: 1, limit: undefined },
      ],
      suite.clock(),
    );
    assert.deepEqual(both.map(view), [
      [true, 2, 2, 0, 0, 1_000, 1_000],
      [true, 5, 5, 4, 0, 720_000, 3_600_000],
    ]);
    const refused = await suite.store.takeAll(
      [
        { buckets: a.buckets, key: 'k', cost: 1, limit: tier },
        { buckets: b.buckets, key: 'k', cost: 1, limit: undefined },
      ],
      suite.clock(),
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
      ...(suite.target.reservations === false ? { skip: `${suite.target.name} does not reserve slots` } : {}),
    },
    async () => {
      await fresh();
      const l = limiter(tokenBucket({ limit: 1, period: '1m' }));
      const tier = { limit: 2, periodMs: 1_000, burst: 1 };
      const reserve = () =>
        l.buckets.reserve!('k', 1, suite.clock(), 5_000, tier).then((d) => [
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
}
