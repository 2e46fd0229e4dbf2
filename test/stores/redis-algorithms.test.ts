/**
 * The Redis store's algorithm modules (src/stores/redis/algorithms/) against the core rules they
 * translate: the same random traffic — takes with weighted costs and per-call limits (a count for
 * windows and quotas, a tier for token buckets, which reservations and adjustments carry too), peeks,
 * resets, refunds and settlements of earlier takes, all-or-nothing takes mixing every kind, time
 * stepping forwards and back around DST changes and month ends, takes and adjustments issued
 * together (one script call, keys decided twice in it, adjustments cutting it in order) — must
 * give the very same decisions on Redis (deciding at the app's time) as on the memory store
 * (which runs the core rules themselves), with and without lockouts. Also: how the registry
 * refuses what it has no module for.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import {
  MemoryStore,
  anchoredWindow,
  calendarQuota,
  fixedWindow,
  isSluiceError,
  slidingWindow,
  tokenBucket,
  type BucketTier,
  type CallLimit,
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
    aw: anchoredWindow({ limit: 5, window: '10s' }),
    awp: anchoredWindow({ limit: 4, window: '7s', penalty: true }),
  };
}
/**
 * Every kind with a lockout: short blocks and memories next to the steps of time, so that runs
 * see blocks end, escalate (factors whose products need rounding up), reach their cap and be
 * forgotten; penalties and per-call limits under a lockout too.
 */
function lockoutRules(): Record<string, Rule> {
  return {
    tbl: tokenBucket({
      limit: 2,
      period: '4s',
      block: { duration: '1001ms', factor: 1.5, max: '2500ms', forgetAfter: '10s' },
    }),
    // Blocks longer than the bucket's own waits, so that their lengths show in every refusal.
    tblp: tokenBucket({
      limit: 5,
      period: '1s',
      penalty: true,
      block: { duration: '1s', factor: 2, max: '3s', forgetAfter: '5s' },
    }),
    tbf: tokenBucket({ limit: 3, period: '9s', burst: 4, block: { duration: '1s', factor: 7 } }),
    // A token a quarter-second, one at most: two takes at one instant start or escalate a block,
    // whose length shows, capped at the first escalation.
    tbq: tokenBucket({
      limit: 4,
      period: '1s',
      burst: 1,
      block: { duration: '1s', factor: 2, max: '1500ms', forgetAfter: '2s' },
    }),
    fwl: fixedWindow({
      limit: 3,
      window: '10s',
      penalty: true,
      block: { duration: '2s', factor: 3, max: '7s', forgetAfter: '5s' },
    }),
    swl: slidingWindow({
      limit: 3,
      window: '5s',
      // Not a multiple of 250 ms: escalations that round up.
      block: { duration: '777ms', factor: 2.5, max: '30s', forgetAfter: '15s' },
    }),
    qhl: calendarQuota({
      limit: 3,
      per: 'hour',
      timeZone: 'Australia/Lord_Howe',
      block: { duration: '10m', factor: 1.3, max: '2h', forgetAfter: '1h' },
    }),
    qdl: calendarQuota({
      limit: 4,
      per: 'day',
      timeZone: 'Europe/Berlin',
      penalty: true,
      block: { duration: '5s' },
    }),
    awl: anchoredWindow({
      limit: 3,
      window: '4s',
      penalty: true,
      block: { duration: '1500ms', factor: 2, max: '5s', forgetAfter: '6s' },
    }),
  };
}
const keys = ['a', 'b', 'c'];

/** Instants just before a change: Berlin's and New York's DST, a month's end in Kathmandu, Lord Howe's half-hour DST. */
const bases = [
  Date.UTC(2026, 2, 29, 0, 30),
  Date.UTC(2026, 10, 1, 5, 30),
  Date.UTC(2026, 1, 28, 17, 50),
  Date.UTC(2026, 9, 3, 15, 10),
];

/**
 * A token bucket's per-call tier, drawn as one of {@link tierOf}'s kinds (undefined: none); a
 * count `limit` goes to rules counted per window.
 */
type Entry = { rule: number; key: number; cost: number; limit: number | undefined; tier: number | undefined };
/**
 * A refund (`delta` < 0) or a settlement of the `take`-th take its bucket admitted so far (modulo
 * their number), with the time and `until` the limiter's receipt would carry (the take's time,
 * and that plus its decision's `resetMs`): a take whose window may or may not still be the
 * state's, whose units may or may not have refilled. A bucket with no admitted take yet settles
 * one made now that weighs nothing.
 */
type Adjustment = { rule: number; key: number; delta: number; take: number };
/** A reservation (`RuleBuckets.reserve`): a take that may hold a slot up to `maxWait` ms ahead. */
type Reservation = { rule: number; key: number; cost: number; maxWait: number; tier: number | undefined };

/** How many tiers {@link tierOf} makes of a rule. */
const tierKinds = 6;

/**
 * The `kind`-th per-call tier of a token bucket of rate r, period u and burst b (tolerance
 * b × u): the rule's own rate and tolerance under another period and burst (a state charged
 * under it stays untagged); a faster and larger one; a slower one; one whose migrations need
 * rounding up (odd numbers, a tolerance no ratio of the others divides); one of the same rate
 * and another tolerance; and the rule's own parameters given as a tier (decided as none).
 */
function tierOf(rule: Rule, kind: number): BucketTier {
  const { limit: r, periodMs: u, burst: b } = rule as unknown as BucketTier;
  switch (kind % tierKinds) {
    case 0:
      return { limit: r, periodMs: u * b, burst: 1 };
    case 1:
      return { limit: r * 4, periodMs: u, burst: b * 2 };
    case 2:
      return { limit: 1, periodMs: u * 3, burst: Math.max(1, b - 1) };
    case 3:
      return { limit: 7, periodMs: 3_001, burst: 3 };
    case 4:
      return { limit: r, periodMs: u, burst: b + 2 };
    default:
      return { limit: r, periodMs: u, burst: b };
  }
}
type Command =
  | ({ op: 'take' } & Entry)
  | ({ op: 'reserve' } & Reservation)
  | ({ op: 'adjust' } & Adjustment)
  | { op: 'all'; entries: Entry[] }
  | { op: 'together'; entries: (Entry | Adjustment)[] }
  | { op: 'reset'; rule: number; key: number }
  | { op: 'step'; ms: number };

/** How traffic is drawn: steps of time, keys per rule (of {@link keys}), weight of a cost of 1. */
interface TrafficShape {
  readonly step: fc.Arbitrary<number>;
  readonly keys: number;
  readonly ones: number;
}

/** Small steps both ways, and steps across DST changes and period ends. */
const steps = fc.oneof(
  fc.integer({ min: -3_000, max: 12_000 }),
  fc.integer({ min: -5_400_000, max: 5_400_000 }),
);
const plain: TrafficShape = { step: steps, keys: keys.length, ones: 1 };

/**
 * For lockouts: mostly whole quarter-seconds, which land exactly on the ends of blocks, memories
 * and windows (every length of {@link lockoutRules} but one is a multiple of 250 ms); fewer keys
 * and mostly costs of 1, so that a key is refused, waits, and is refused again.
 */
const lockoutShape: TrafficShape = {
  step: fc.oneof(
    { weight: 1, arbitrary: steps },
    { weight: 4, arbitrary: fc.integer({ min: -4, max: 28 }).map((n) => n * 250) },
  ),
  keys: 2,
  ones: 3,
};

/**
 * Commands on a few rules of the list (drawn per run): traffic spread over every rule and key
 * would seldom hit one bucket twice, and it is the second hit that tests a state.
 */
/** Mostly none, so that states move between the rule's own scale and the tiers' both ways. */
const drawTier = fc.option(fc.nat(tierKinds - 1), { nil: undefined, freq: 2 });

function commandOn(focus: readonly number[], shape: TrafficShape): fc.Arbitrary<Command> {
  const rule = fc.constantFrom(...focus);
  const key = fc.nat(shape.keys - 1);
  const entry = fc.record({
    rule,
    key,
    cost: fc.oneof({ weight: shape.ones, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.nat(6) }),
    limit: fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined, freq: 3 }),
    tier: drawTier,
  });
  const adjustment = fc.record({
    rule,
    key,
    // Mostly refunds; the bounds now and then: a refund of everything, a charge past every cap.
    delta: fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: -6, max: -1 }) },
      { weight: 3, arbitrary: fc.integer({ min: 1, max: 6 }) },
      { weight: 1, arbitrary: fc.constantFrom(-MAX_COUNT, MAX_COUNT) },
    ),
    take: fc.nat(40),
  });
  const reservation = fc.record({
    rule,
    key,
    cost: fc.integer({ min: 1, max: 6 }),
    maxWait: fc.constantFrom(0, 1_000, 7_000, 30_000, 3_600_000),
    tier: drawTier,
  });
  return fc.oneof(
    { weight: 6, arbitrary: entry.map((e) => ({ op: 'take' as const, ...e })) },
    { weight: 2, arbitrary: reservation.map((r) => ({ op: 'reserve' as const, ...r })) },
    { weight: 3, arbitrary: adjustment.map((a) => ({ op: 'adjust' as const, ...a })) },
    {
      weight: 2,
      arbitrary: fc
        .uniqueArray(entry, { minLength: 2, maxLength: 4, selector: (e) => `${e.rule}/${e.key}` })
        .map((entries) => ({ op: 'all' as const, entries })),
    },
    // Single takes issued at once: one script call, often deciding a key twice; an adjustment
    // among them goes in a call of its own, between the calls of the takes around it.
    {
      weight: 2,
      arbitrary: fc
        .array(fc.oneof({ weight: 3, arbitrary: entry }, { weight: 1, arbitrary: adjustment }), {
          minLength: 2,
          maxLength: 5,
        })
        .map((entries) => ({ op: 'together' as const, entries })),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), rule, key }) },
    { weight: 4, arbitrary: shape.step.map((ms) => ({ op: 'step' as const, ms })) },
  );
}

/** A starting instant and commands on one to `most` of `count` rules. */
function trafficOn(count: number, shape: TrafficShape, most: number) {
  return fc
    .tuple(fc.constantFrom(...bases), fc.uniqueArray(fc.nat(count - 1), { minLength: 1, maxLength: most }))
    .chain(([base, focus]) =>
      fc.tuple(fc.constant(base), fc.array(commandOn(focus, shape), { minLength: 1, maxLength: 40 })),
    );
}

/** One store's buckets per rule name. */
function bindAll(store: Store, all: Record<string, Rule>): RuleBuckets[] {
  return Object.keys(all).map((name) => store.bind(name, all[name] as Rule));
}

/**
 * What the limiter would pass: a count to a rule counted per window, a tier to a token bucket
 * (the rule's own parameters given as a tier too: a store must decide them as none), nothing to
 * a rule that takes neither.
 */
function limitFor(
  buckets: RuleBuckets,
  e: { limit?: number | undefined; tier: number | undefined },
): CallLimit | undefined {
  const rule = buckets.rule;
  if (rule.acceptsCallLimit) return e.limit;
  if (rule.acceptsCallTier === true && e.tier !== undefined) return tierOf(rule, e.tier);
  return undefined;
}

type Outcome = Decision | Decision[] | 'reset' | 'adjusted' | 'cannot reserve';

async function run(
  store: Store,
  buckets: RuleBuckets[],
  base: number,
  commands: readonly Command[],
): Promise<Outcome[]> {
  let now = base;
  const out: Outcome[] = [];
  // The receipts of each bucket's admitted takes so far, for adjustments to settle: with the
  // per-call limit the take was made under, which a token bucket settles in.
  const receipts = new Map<
    string,
    { at: number; until: number; limit: CallLimit | undefined; generation: number | undefined }[]
  >();
  // When each bucket was last reset. A refund of a take from before a reset gives nothing back
  // on every store (the memory store by the generation its receipt keeps, the others by the
  // reset's time); one of a take after a reset but in its millisecond gives back on the memory
  // store and nothing on the others (their safe side), and so does one made after a reset at an
  // earlier time (the clock stepped back), so takes at or before a reset's time are not settled
  // here; nor are takes made before a reset at a later time (the clock stepped back in between),
  // which the others cannot tell from takes made after it.
  const resetAt = new Map<string, number>();
  const issue = (
    e: Pick<Entry, 'rule' | 'key'> & { limit?: number | undefined; tier: number | undefined },
    at: number,
    decision: Decision,
  ): void => {
    if (!decision.allowed || decision.cost === 0) return;
    const bucket = `${e.rule}/${e.key}`;
    const list = receipts.get(bucket) ?? [];
    // Read after the take: nothing reset the key in between (a group's takes are issued after it).
    const generation = buckets[e.rule]!.resetGeneration?.(keys[e.key]!);
    list.push({ at, until: at + decision.resetMs, limit: limitFor(buckets[e.rule]!, e), generation });
    receipts.set(bucket, list);
  };
  const adjust = async (a: Adjustment, at: number): Promise<'adjusted'> => {
    const list = receipts.get(`${a.rule}/${a.key}`);
    const take =
      list === undefined
        ? { at, until: at, limit: undefined, generation: undefined }
        : list[a.take % list.length]!;
    if (take.at <= (resetAt.get(`${a.rule}/${a.key}`) ?? -Infinity)) return 'adjusted';
    await buckets[a.rule]!.adjust(keys[a.key]!, {
      delta: a.delta,
      now: at,
      takenAt: take.at,
      until: take.until,
      limit: take.limit,
      generation: take.generation,
    });
    return 'adjusted';
  };
  for (const c of commands) {
    if (c.op === 'step') {
      now += c.ms;
    } else if (c.op === 'reset') {
      await buckets[c.rule]!.reset(keys[c.key]!, now);
      const bucket = `${c.rule}/${c.key}`;
      // The other stores keep the latest time of a key's resets.
      resetAt.set(bucket, Math.max(now, resetAt.get(bucket) ?? -Infinity));
      const list = receipts.get(bucket);
      const kept = list?.filter((take) => take.at < now) ?? [];
      if (kept.length > 0) receipts.set(bucket, kept);
      else receipts.delete(bucket);
      out.push('reset');
    } else if (c.op === 'take') {
      const b = buckets[c.rule]!;
      const decision = await b.take(keys[c.key]!, c.cost, now, limitFor(b, c));
      issue(c, now, decision);
      out.push(decision);
    } else if (c.op === 'reserve') {
      // Rules that cannot reserve (windows, lockouts) refuse alike on both stores.
      const b = buckets[c.rule]!;
      const reserved = await b.reserve!(keys[c.key]!, c.cost, now, c.maxWait, limitFor(b, c)).catch(
        (error: unknown) => {
          if (isSluiceError(error, 'SLUICE_CONFIG')) return 'cannot reserve' as const;
          throw error;
        },
      );
      if (reserved !== 'cannot reserve') issue(c, now, reserved);
      out.push(reserved);
    } else if (c.op === 'adjust') {
      out.push(await adjust(c, now));
      // What the adjustment left, seen at once (a peek changes nothing).
      out.push(await buckets[c.rule]!.take(keys[c.key]!, 0, now, undefined));
    } else if (c.op === 'together') {
      // Issued in one tick: the Redis store sends them in this order, the takes between two
      // adjustments in one call.
      const at = now;
      const decide = (e: Entry | Adjustment): Promise<Decision | 'adjusted'> => {
        if ('delta' in e) return adjust(e, at);
        const b = buckets[e.rule]!;
        return b.take(keys[e.key]!, e.cost, at, limitFor(b, e));
      };
      const results: (Decision | 'adjusted')[] = [];
      if (store instanceof MemoryStore) for (const e of c.entries) results.push(await decide(e));
      else results.push(...(await Promise.all(c.entries.map(decide))));
      // Receipts once every call is answered: the adjustments among them settle earlier takes
      // on both stores alike.
      c.entries.forEach((e, i) => {
        const result = results[i]!;
        if (result !== 'adjusted' && !('delta' in e)) issue(e, at, result);
      });
      out.push(...results);
    } else {
      const entries: TakeEntry[] = c.entries.map((e) => {
        const b = buckets[e.rule]!;
        return { buckets: b, key: keys[e.key]!, cost: e.cost, limit: limitFor(b, e) };
      });
      const decisions = await store.takeAll(entries, now);
      // A group charges every entry or none.
      if (decisions.every((d) => d.allowed)) c.entries.forEach((e, i) => issue(e, now, decisions[i]!));
      out.push(decisions);
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
          /RedisStore rule must be a rule of a kind this store decides \(token-bucket, calendar-quota, fixed-window, sliding-window, anchored-window\)/.test(
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

    /** Random traffic on `all` must decide alike on the memory store and on Redis. */
    async function sameDecisions(
      all: () => Record<string, Rule>,
      traffic: fc.Arbitrary<[number, Command[]]>,
      numRuns: number,
    ): Promise<void> {
      await fc.assert(
        fc.asyncProperty(traffic, async ([base, commands]) => {
          const memory = new MemoryStore();
          const shared = new RedisStore({
            client: redis,
            timeSource: 'app',
            timeout: '5s',
            prefix: `${prefixRoot}${++stores}:`,
          });
          const expected = await run(memory, bindAll(memory, all()), base, commands);
          const actual = await run(shared, bindAll(shared, all()), base, commands);
          assert.deepEqual(actual, expected);
        }),
        { numRuns },
      );
    }

    it('gives the same decisions for random traffic, all-or-nothing takes and steps of time both ways', async () => {
      await sameDecisions(rules, trafficOn(Object.keys(rules()).length, plain, 3), 150);
    });

    it('gives the same decisions under lockouts: blocks, escalation, caps and forgetting, alone, in batches and in groups', async () => {
      await sameDecisions(lockoutRules, trafficOn(Object.keys(lockoutRules()).length, lockoutShape, 2), 300);
    });

    it('a reservation refused with no wait allowed charges nothing under a penalty, as the core reserves', async () => {
      const now = Date.UTC(2026, 5, 1, 12);
      const seen: number[][] = [];
      for (const store of [
        new MemoryStore(),
        new RedisStore({ client: redis, timeSource: 'app', timeout: '5s', prefix: `${prefixRoot}nowait:` }),
      ]) {
        const buckets = store.bind('tbp', tokenBucket({ limit: 2, period: '7s', penalty: true }));
        await buckets.take('k', 1, now, undefined);
        const refused = await buckets.reserve!('k', 2, now, 0);
        const after = await buckets.take('k', 0, now, undefined);
        seen.push([Number(refused.allowed), refused.retryAfterMs, after.remaining, after.resetMs]);
      }
      assert.deepEqual(seen[0], [0, 3_500, 1, 3_500]);
      assert.deepEqual(seen[1], seen[0]);
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
