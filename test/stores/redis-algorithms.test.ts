/**
 * The Redis store's algorithm modules (src/stores/redis/algorithms/) against the core rules they
 * translate: the same random traffic — takes with weighted costs and per-call limits, peeks,
 * resets, all-or-nothing takes mixing every kind, time stepping forwards and back around DST
 * changes and month ends — must give the very same decisions on Redis (deciding at the app's
 * time) as on the memory store (which runs the core rules themselves). Also: how the registry
 * refuses what it has no module for.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import {
  MemoryStore,
  calendarQuota,
  fixedWindow,
  isSluiceError,
  slidingWindow,
  tokenBucket,
  type Decision,
  type Rule,
  type RuleBuckets,
  type Store,
  type TakeEntry,
} from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { redisAlgorithms } from '../../src/stores/redis/algorithms/index.js';
import { MAX_COUNT, MAX_PENALTY_COUNT } from '../../src/core/bounds.js';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefixRoot = `sluice-test:${runId}:alg:`;

/** Every kind, with and without penalties, calendars in zones with odd offsets and DST. */
function rules(): Record<string, Rule> {
  return {
    tb: tokenBucket({ limit: 3, period: '10s', burst: 5 }),
    tbp: tokenBucket({ limit: 2, period: '7s', penalty: true }),
    fw: fixedWindow({ limit: 5, window: '10s' }),
    fwp: fixedWindow({ limit: 4, window: '7s', penalty: true }),
    sw: slidingWindow({ limit: 6, window: '10s' }),
    swp: slidingWindow({ limit: 5, window: '3s', penalty: true }),
    qh: calendarQuota({ limit: 4, per: 'hour', timeZone: 'Australia/Lord_Howe' }),
    qd: calendarQuota({ limit: 6, per: 'day', timeZone: 'Europe/Berlin', penalty: true }),
    qw: calendarQuota({ limit: 7, per: 'week', weekStart: 7, timeZone: 'America/New_York' }),
    qm: calendarQuota({ limit: 8, per: 'month', timeZone: 'Asia/Kathmandu' }),
  };
}
const names = Object.keys(rules());
const keys = ['a', 'b', 'c'];

/** Instants just before a change: Berlin's and New York's DST, a month's end in Kathmandu, Lord Howe's half-hour DST. */
const bases = [
  Date.UTC(2026, 2, 29, 0, 30),
  Date.UTC(2026, 10, 1, 5, 30),
  Date.UTC(2026, 1, 28, 17, 50),
  Date.UTC(2026, 9, 3, 15, 10),
];

type Command =
  | { op: 'take'; rule: number; key: number; cost: number; limit: number | undefined }
  | { op: 'all'; entries: { rule: number; key: number; cost: number; limit: number | undefined }[] }
  | { op: 'reset'; rule: number; key: number }
  | { op: 'step'; ms: number };

/**
 * Commands on a few rules of the list (drawn per run): traffic spread over every rule and key
 * would seldom hit one bucket twice, and it is the second hit that tests a state.
 */
function commandOn(focus: readonly number[]): fc.Arbitrary<Command> {
  const rule = fc.constantFrom(...focus);
  const key = fc.nat(keys.length - 1);
  const entry = fc.record({
    rule,
    key,
    cost: fc.oneof(fc.constant(1), fc.nat(6)),
    limit: fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined, freq: 3 }),
  });
  return fc.oneof(
    { weight: 6, arbitrary: entry.map((e) => ({ op: 'take' as const, ...e })) },
    {
      weight: 2,
      arbitrary: fc
        .uniqueArray(entry, { minLength: 2, maxLength: 4, selector: (e) => `${e.rule}/${e.key}` })
        .map((entries) => ({ op: 'all' as const, entries })),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), rule, key }) },
    {
      weight: 4,
      arbitrary: fc
        .oneof(fc.integer({ min: -3_000, max: 12_000 }), fc.integer({ min: -5_400_000, max: 5_400_000 }))
        .map((ms) => ({ op: 'step' as const, ms })),
    },
  );
}

/** A starting instant and commands on one to three rules. */
const traffic = fc
  .tuple(fc.constantFrom(...bases), fc.uniqueArray(fc.nat(names.length - 1), { minLength: 1, maxLength: 3 }))
  .chain(([base, focus]) =>
    fc.tuple(fc.constant(base), fc.array(commandOn(focus), { minLength: 1, maxLength: 40 })),
  );

/** One store's buckets per rule name. */
function bindAll(store: Store): RuleBuckets[] {
  const all = rules();
  return names.map((name) => store.bind(name, all[name] as Rule));
}

/** A rule without a per-call limit gets none (the limiter would not pass one either). */
function limitFor(buckets: RuleBuckets, limit: number | undefined): number | undefined {
  return buckets.rule.acceptsCallLimit ? limit : undefined;
}

async function run(
  store: Store,
  buckets: RuleBuckets[],
  base: number,
  commands: readonly Command[],
): Promise<(Decision | Decision[] | 'reset')[]> {
  let now = base;
  const out: (Decision | Decision[] | 'reset')[] = [];
  for (const c of commands) {
    if (c.op === 'step') {
      now += c.ms;
    } else if (c.op === 'reset') {
      await buckets[c.rule]!.reset(keys[c.key]!);
      out.push('reset');
    } else if (c.op === 'take') {
      const b = buckets[c.rule]!;
      out.push(await b.take(keys[c.key]!, c.cost, now, limitFor(b, c.limit)));
    } else {
      const entries: TakeEntry[] = c.entries.map((e) => {
        const b = buckets[e.rule]!;
        return { buckets: b, key: keys[e.key]!, cost: e.cost, limit: limitFor(b, e.limit) };
      });
      out.push(await store.takeAll(entries, now));
    }
  }
  return out;
}

describe('Redis algorithm modules', () => {
  // Binding talks to no server: this client never connects.
  const idle = new Redis({ lazyConnect: true });
  after(() => idle.disconnect());

  it('have one module for every built-in rule kind, each kind once', () => {
    const kinds = redisAlgorithms.map((a) => a.kind).sort();
    const builtIn = Object.values(rules())
      .map((r) => r.kind)
      .filter((k, i, all) => all.indexOf(k) === i)
      .sort();
    assert.deepEqual(kinds, builtIn);
  });

  it('refuse at bind a rule of a kind without a module, naming the option and never the value', () => {
    const store = new RedisStore({ client: idle });
    const forged = {
      ...tokenBucket({ limit: 1, period: '1s' }),
      kind: 'leaky-secret-kind',
    } as unknown as Rule;
    for (const rule of [forged, null, 'token-bucket', {}] as unknown as Rule[]) {
      assert.throws(
        () => store.bind('x', rule),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_CONFIG') &&
          /RedisStore rule must be a rule of a kind this store decides \(token-bucket, calendar-quota, fixed-window, sliding-window\)/.test(
            (e as Error).message,
          ) &&
          !(e as Error).message.includes('leaky-secret-kind'),
      );
    }
    // Nothing was bound: the name is still free.
    assert.equal(store.bind('x', fixedWindow({ limit: 1, window: '1s' })).name, 'x');
  });

  it('refuse at bind a rule claiming a kind but lacking what its module reads', () => {
    const store = new RedisStore({ client: idle });
    const lookalike = { kind: 'fixed-window', limit: 5, windowMs: 'soon', penalty: false } as unknown as Rule;
    assert.throws(
      () => store.bind('y', lookalike),
      (e: unknown) =>
        isSluiceError(e, 'SLUICE_CONFIG') && /RedisStore rule windowMs/.test((e as Error).message),
    );
  });
});

describe(
  'Redis decides every rule as the core does (differential, against the memory store)',
  { skip },
  () => {
    let redis: Redis;
    let stores = 0;
    before(async () => {
      redis = await ioredisClient(redisUrl);
    });
    after(async () => {
      await deleteKeys(redis, `${prefixRoot}*`);
      await redis.quit();
    });

    it('gives the same decisions for random traffic, all-or-nothing takes and steps of time both ways', async () => {
      await fc.assert(
        fc.asyncProperty(traffic, async ([base, commands]) => {
          const memory = new MemoryStore();
          const shared = new RedisStore({
            client: redis,
            timeSource: 'app',
            timeout: '5s',
            prefix: `${prefixRoot}${++stores}:`,
          });
          const expected = await run(memory, bindAll(memory), base, commands);
          const actual = await run(shared, bindAll(shared), base, commands);
          assert.deepEqual(actual, expected);
        }),
        { numRuns: 150 },
      );
    });

    it('saturates a penalty count where the core does, so that a flood of refused takes cannot grow it past exact integers', async () => {
      const store = new RedisStore({
        client: redis,
        timeSource: 'app',
        timeout: '5s',
        prefix: `${prefixRoot}sat:`,
      });
      const now = Date.UTC(2026, 5, 1, 12);
      const counted = [
        store.bind('fixed', fixedWindow({ limit: MAX_COUNT, window: '1h', penalty: true })),
        store.bind('sliding', slidingWindow({ limit: MAX_COUNT, window: '1h', penalty: true })),
        store.bind('quota', calendarQuota({ limit: MAX_COUNT, penalty: true })),
      ];
      for (const buckets of counted) {
        assert.equal((await buckets.take('k', MAX_COUNT, now, undefined)).allowed, true);
        for (let i = 0; i < 3; i++)
          assert.equal((await buckets.take('k', MAX_COUNT, now, undefined)).allowed, false);
        const value = await redis.get(`${store.prefix}${buckets.name}:{k}`);
        assert.equal(Number(value!.split(':')[1]), MAX_PENALTY_COUNT, buckets.name);
      }
    });
  },
);
