/**
 * The PostgreSQL algorithm modules held to the core: random sequences of takes, peeks, resets,
 * per-call limits, all-or-nothing takes and steps of time (forwards and back, around DST changes
 * and month ends) run against a PostgresStore deciding on the application's time and against
 * the memory store, and every decision must be identical, field for field. The state a window
 * rule's row holds after each operation must also equal the state the core rule keeps (run on
 * its own beside them): a wrong write can hide behind equal decisions for a while (a count past
 * the limit still reads "0 remaining"). Rules with a lockout (`block`) too, whose block a row
 * must hold as the core does, and takes coalesced on one row while a block starts. Refunds and
 * settlements of admitted takes (`RuleBuckets.adjust`, with each take's own time and `until`)
 * mix in, later or after a reset, on every kind, with and without lockouts. Token-bucket takes,
 * all-or-nothing entries, reservations and adjustments sometimes carry a per-call tier (see
 * {@link tierOf}), adjustments their take's, so that states move between scales.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type pg from 'pg';
import {
  MemoryStore,
  isSluiceError,
  calendarQuota,
  anchoredWindow,
  fixedWindow,
  slidingWindow,
  tokenBucket,
  type Decision,
} from '../../src/index.js';
import type { BucketTier, CallLimit, Rule } from '../../src/core/rules/rule.js';
import type { TokenBucketRule } from '../../src/core/rules/token-bucket.js';
import type { BucketState } from '../../src/core/state.js';
import type { RuleBuckets, TakeEntry } from '../../src/stores/contract/store.js';
import type { BlockOptions } from '../../src/core/rules/lockout.js';
import { PostgresStore, toPostgresClient, type PostgresClient } from '../../src/stores/postgres/index.js';
import { skipUnlessReachable } from '../support/services.js';
import { createAppSchema, dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const schema = runSchema('diff');

const zones = [
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe',
  'Asia/Kathmandu',
  'America/St_Johns',
  'Pacific/Apia',
  'UTC',
] as const;

/** Instants near DST changes and month ends, where windows and periods are hardest to get right. */
const origins = [
  Date.UTC(2026, 2, 29, 0, 30), // Europe: clocks forward at 01:00 UTC
  Date.UTC(2026, 9, 25, 0, 30), // Europe: clocks back at 01:00 UTC
  Date.UTC(2026, 2, 8, 6, 30), // New York: forward at 07:00 UTC
  Date.UTC(2026, 10, 1, 5, 30), // New York: back at 06:00 UTC
  Date.UTC(2026, 3, 4, 14, 30), // Lord Howe: back half an hour at 15:00 UTC
  Date.UTC(2026, 9, 3, 15, 30), // Lord Howe: forward half an hour at 15:30 UTC
  Date.UTC(2026, 1, 28, 23, 0), // the end of a 28-day month
  Date.UTC(2026, 0, 31, 23, 30), // the end of a 31-day month
];

/**
 * The per-call tiers of a token bucket, by index (0: none): its own rate and tolerance over half
 * the period with twice the burst (the same state scale, other units), a faster one, a slower
 * one, and one of odd numbers whose migrations round up (its tolerance divides no other).
 */
function tierOf(rule: Rule, index: number): BucketTier | undefined {
  if (index === 0 || rule.acceptsCallTier !== true) return undefined;
  const { limit, periodMs, burst } = rule as TokenBucketRule;
  if (index === 1) return { limit, periodMs: periodMs / 2, burst: burst * 2 };
  if (index === 2) return { limit: limit * 10, periodMs, burst: burst * 5 };
  if (index === 3) return { limit: 1, periodMs: periodMs * 2, burst: 1 };
  return { limit: 7, periodMs: 3_001, burst: 3 };
}
/** A tier index: mostly none. */
const tierIndex = fc.oneof(
  { weight: 3, arbitrary: fc.constant(0) },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 4 }) },
);

/** Whether `rule` reserves slots: a token bucket without a lockout. */
const canReserve = (rule: Rule): boolean => typeof rule.reserve === 'function' && rule.block === undefined;

type Op =
  | { kind: 'take'; rule: number; key: number; cost: number; limit: CallLimit | undefined }
  | { kind: 'reset'; rule: number; key: number }
  /** A reservation (`RuleBuckets.reserve`): a take that may hold a slot up to `maxWait` ms ahead. */
  | {
      kind: 'reserve';
      rule: number;
      key: number;
      cost: number;
      maxWait: number;
      limit: CallLimit | undefined;
    }
  | { kind: 'step'; ms: number }
  | { kind: 'all'; entries: { rule: number; key: number; cost: number; limit: CallLimit | undefined }[] }
  /** Settles the `take`-th admitted take still open (modulo their number): a refund, or a real cost. */
  | { kind: 'adjust'; take: number; actual: number | undefined };

const penalty = fc.boolean();
const small = fc.integer({ min: 1, max: 6 });
type MaybeBlock = fc.Arbitrary<BlockOptions | undefined>;
const noBlock: MaybeBlock = fc.constant(undefined);
/** A lockout on the scale of the steps: first blocks from half a second to an hour, escalating or not, remembered for a second to a day. */
const lockout: fc.Arbitrary<BlockOptions> = fc
  .record({
    duration: fc.constantFrom(500, 777, 1_000, 2_000, 5_000, 30_000, 3_600_000),
    // 1.1 × 1000 is 1100.0000000000002 in doubles: the ceiling makes it 1101 on every store.
    factor: fc.constantFrom(1, 1.1, 1.37, 2, 2.7, 1000),
    maxTimes: fc.option(fc.constantFrom(1, 4, 50), { nil: undefined }),
    forgetAfter: fc.option(fc.constantFrom(1_000, 60_000, 86_400_000), { nil: undefined }),
  })
  .map(({ duration, factor, maxTimes, forgetAfter }) => ({
    duration: `${duration}ms`,
    factor,
    ...(maxTimes === undefined ? {} : { max: `${duration * maxTimes}ms` }),
    ...(forgetAfter === undefined ? {} : { forgetAfter: `${forgetAfter}ms` }),
  }));
/** Mostly a lockout, sometimes none: the all-or-nothing statement mixes both. */
const someLockout: MaybeBlock = fc.option(lockout, { nil: undefined, freq: 4 });
const withBlock = <T extends object>(options: T, block: BlockOptions | undefined) =>
  block === undefined ? options : { ...options, block };
const windowRule = (
  make: typeof fixedWindow | typeof slidingWindow | typeof anchoredWindow,
  block = noBlock,
) =>
  fc
    .record({ limit: small, window: fc.constantFrom('1s', '10s', '1m', '1h'), penalty, block })
    .map(({ block: b, ...o }) => make(withBlock(o, b)) as Rule);
const quotaRule = (block = noBlock) =>
  fc
    .record({
      limit: small,
      per: fc.constantFrom('hour', 'day', 'week', 'month'),
      timeZone: fc.constantFrom(...zones),
      weekStart: fc.constantFrom(1, 3, 7),
      penalty,
      block,
    })
    .map(
      ({ weekStart, block: b, ...o }) =>
        calendarQuota(
          withBlock(o.per === 'week' ? { ...o, weekStart: weekStart as 1 | 3 | 7 } : o, b),
        ) as Rule,
    );
const bucketRule = (block = noBlock) =>
  fc
    .record({ limit: small, period: fc.constantFrom('1s', '1m', '1h'), penalty, block })
    .map(({ block: b, ...o }) => tokenBucket(withBlock(o, b)) as Rule);

const step = fc.oneof(
  fc.integer({ min: -2_000, max: 2_000 }),
  fc.integer({ min: -10_000, max: 40_000 }),
  fc.integer({ min: -90 * 60_000, max: 90 * 60_000 }),
  fc.integer({ min: -3 * 86_400_000, max: 8 * 86_400_000 }),
);

/** Operations on `rules` rules, with costs up to one past a rule's limit and per-call limits where a rule accepts them. */
/** How operations are drawn: costs, per-call limits, steps of time, keys, how many at most. */
interface OpShape {
  readonly cost: fc.Arbitrary<number>;
  readonly limit: fc.Arbitrary<number | undefined>;
  readonly step: fc.Arbitrary<number>;
  readonly keys: number;
  readonly minLength: number;
  readonly maxLength: number;
  readonly size?: fc.SizeForArbitrary;
  /** The weight of refunds and settlements among operations (takes weigh 6). */
  readonly adjusts?: number;
}

const anyOps: OpShape = {
  cost: fc.integer({ min: 0, max: 7 }),
  limit: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
  step,
  keys: 3,
  minLength: 5,
  maxLength: 40,
};
/**
 * For lockouts: mostly small costs and the rule's own limit on two keys, mostly short steps,
 * and longer sequences, so that keys run dry, are blocked, are refused again soon after the
 * block (escalating) or much later (forgotten).
 */
const lockoutOps: OpShape = {
  cost: fc.oneof(
    { weight: 5, arbitrary: fc.integer({ min: 1, max: 2 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 7 }) },
  ),
  limit: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined, freq: 1 }),
  step: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: 3_000 }) },
    { weight: 2, arbitrary: fc.integer({ min: -1_000, max: 40_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: -90 * 60_000, max: 90 * 60_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: -86_400_000, max: 3 * 86_400_000 }) },
  ),
  keys: 2,
  minLength: 20,
  maxLength: 50,
  // Lengths drawn over the whole range, not fast-check's default of about ten.
  size: 'max',
};

function ops(rules: readonly Rule[], shape: OpShape = anyOps): fc.Arbitrary<Op[]> {
  const key = fc.integer({ min: 0, max: shape.keys - 1 });
  const take = fc
    .record({
      rule: fc.integer({ min: 0, max: rules.length - 1 }),
      key,
      cost: shape.cost,
      limit: shape.limit,
      tier: tierIndex,
    })
    .map(({ tier, ...t }) => {
      const rule = rules[t.rule] as Rule;
      return { ...t, limit: rule.acceptsCallLimit ? t.limit : tierOf(rule, tier) };
    });
  return fc.array(
    fc.oneof(
      { weight: 6, arbitrary: take.map((t) => ({ kind: 'take' as const, ...t })) },
      {
        weight: 1,
        arbitrary: fc
          .record({
            rule: fc.integer({ min: 0, max: rules.length - 1 }),
            key,
          })
          .map((r) => ({ kind: 'reset' as const, ...r })),
      },
      { weight: 3, arbitrary: shape.step.map((ms) => ({ kind: 'step' as const, ms })) },
      {
        weight: 2,
        arbitrary: fc
          .record({
            rule: fc.integer({ min: 0, max: rules.length - 1 }),
            key,
            cost: fc.integer({ min: 1, max: 6 }),
            maxWait: fc.constantFrom(0, 1_000, 7_000, 30_000, 3_600_000),
            tier: tierIndex,
          })
          .map(({ tier, ...r }) => ({
            kind: 'reserve' as const,
            ...r,
            limit: tierOf(rules[r.rule] as Rule, tier),
          })),
      },
      {
        weight: 2,
        arbitrary: fc
          .uniqueArray(take, { minLength: 1, maxLength: 4, selector: (t) => `${t.rule}/${t.key}` })
          .map((entries) => ({ kind: 'all' as const, entries })),
      },
      {
        weight: shape.adjusts ?? 2,
        arbitrary: fc
          .record({
            take: fc.nat(),
            // A refund, or a settlement for less or more than the take's cost.
            actual: fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined, freq: 2 }),
          })
          .map((a) => ({ kind: 'adjust' as const, ...a })),
      },
    ),
    {
      minLength: shape.minLength,
      maxLength: shape.maxLength,
      ...(shape.size === undefined ? {} : { size: shape.size }),
    },
  );
}

describe('PostgreSQL decides as the memory store', { skip }, () => {
  let pool: pg.Pool;
  let store: PostgresStore;
  let run = 0;

  before(async () => {
    pool = testPool();
    await createAppSchema(pool, schema);
    store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
    await store.migrate();
  });
  after(() => dropSchema(pool, schema).then(() => pool.end()));

  /** Binds `rules` under fresh names to `on` and to a new memory store beside it. */
  function bindBoth(on: PostgresStore, rules: readonly Rule[], prefix: string) {
    run++;
    const memory = new MemoryStore();
    const names = rules.map((_, i) => `${prefix}${run}_${i}`);
    const pgBuckets = rules.map((rule, i) => on.bind(names[i] as string, rule));
    const memBuckets = rules.map((rule, i) => memory.bind(names[i] as string, rule));
    return { memory, names, pgBuckets, memBuckets };
  }

  /** Runs `list` on both stores from `origin`; every decision must be identical. */
  async function check(rules: readonly Rule[], list: readonly Op[], origin: number): Promise<void> {
    const { memory, names, pgBuckets, memBuckets } = bindBoth(store, rules, 'r');
    let now = origin;
    // The core's own state per rule and key (window rules), beside the two stores.
    const shadow = new Map<string, BucketState>();
    const decideShadow = (
      rule: number,
      key: number,
      cost: number,
      limit: CallLimit | undefined,
      commit: boolean,
    ) => {
      const id = `${rule}/${key}`;
      const state = shadow.get(id) ?? { value: 0, window: 0, previous: 0, blockedUntil: 0, blockMs: 0 };
      const decision = (rules[rule] as Rule).decide(state, {
        now,
        epoch: 0,
        name: 'shadow',
        cost,
        limit,
        commit,
      });
      shadow.set(id, state);
      return decision;
    };
    const compareRows = async (touched: readonly { rule: number; key: number }[], where: string) => {
      for (const { rule, key } of touched) {
        const state = shadow.get(`${rule}/${key}`) ?? {
          value: 0,
          window: 0,
          previous: 0,
          blockedUntil: 0,
          blockMs: 0,
        };
        const bucket = (rules[rule] as Rule).kind === 'token-bucket';
        // A token bucket's arrival time is scaled in the row: only its block is compared.
        const { rows } = await pool.query(
          bucket
            ? `SELECT blocked_until::float8 AS b, block_ms::float8 AS m FROM "${schema}".token_buckets WHERE rule = $1 AND bucket = $2`
            : `SELECT window_start::float8 AS w, count::float8 AS c, previous::float8 AS p, blocked_until::float8 AS b, block_ms::float8 AS m FROM "${schema}".window_counters WHERE rule = $1 AND bucket = $2`,
          [names[rule], `k${key}`],
        );
        const row = rows[0] ?? { w: state.window, c: 0, p: 0, b: 0, m: 0 };
        const held = { blockedUntil: row.b, blockMs: row.m };
        const kept = { blockedUntil: state.blockedUntil, blockMs: state.blockMs };
        if (bucket) assert.deepEqual(held, kept, `${where}: the block of ${rule}/${key}`);
        else
          assert.deepEqual(
            { value: row.c, window: row.w, previous: row.p, ...held },
            { value: state.value, window: state.window, previous: state.previous, ...kept },
            `${where}: the row of ${rule}/${key}`,
          );
      }
    };
    const entries = (
      buckets: readonly RuleBuckets[],
      list: Extract<Op, { kind: 'all' }>['entries'],
    ): TakeEntry[] =>
      list.map((e) => ({
        buckets: buckets[e.rule] as RuleBuckets,
        key: `k${e.key}`,
        cost: e.cost,
        limit: e.limit,
      }));
    // Admitted takes not settled yet, as a limiter's receipts hold them.
    const open: {
      rule: number;
      key: number;
      cost: number;
      at: number;
      until: number;
      limit: CallLimit | undefined;
      /** The memory store's reset generation of the key (see `RuleBuckets.resetGeneration`). */
      generation: number | undefined;
      /** Whether the key was reset since the take. */
      stale: boolean;
    }[] = [];
    // The latest time each key was reset at, as PostgreSQL keeps it.
    const resetAt = new Map<string, number>();
    const admitted = (
      rule: number,
      key: number,
      cost: number,
      decision: Decision,
      limit: CallLimit | undefined,
    ) => {
      if (!decision.allowed || cost === 0) return;
      const generation = (memBuckets[rule] as RuleBuckets).resetGeneration?.(`k${key}`);
      open.push({ rule, key, cost, at: now, until: now + decision.resetMs, limit, generation, stale: false });
    };
    try {
      for (const [i, op] of list.entries()) {
        const where = `op ${i} (${op.kind}) at ${new Date(now).toISOString()}`;
        if (op.kind === 'step') {
          now += op.ms;
        } else if (op.kind === 'reset') {
          await (pgBuckets[op.rule] as RuleBuckets).reset(`k${op.key}`, now);
          await (memBuckets[op.rule] as RuleBuckets).reset(`k${op.key}`, now);
          const id = `${op.rule}/${op.key}`;
          shadow.delete(id);
          resetAt.set(id, Math.max(now, resetAt.get(id) ?? -Infinity));
          for (const take of open) if (take.rule === op.rule && take.key === op.key) take.stale = true;
        } else if (op.kind === 'take') {
          const args = [`k${op.key}`, op.cost, now, op.limit] as const;
          const got: Decision = await (pgBuckets[op.rule] as RuleBuckets).take(...args);
          const want: Decision = await (memBuckets[op.rule] as RuleBuckets).take(...args);
          assert.deepEqual(got, want, where);
          decideShadow(op.rule, op.key, op.cost, op.limit, true);
          admitted(op.rule, op.key, op.cost, want, op.limit);
          await compareRows([op], where);
        } else if (op.kind === 'reserve') {
          const args = [`k${op.key}`, op.cost, now, op.maxWait, op.limit] as const;
          if (canReserve(rules[op.rule] as Rule)) {
            const got = await (pgBuckets[op.rule] as RuleBuckets).reserve!(...args);
            const want = await (memBuckets[op.rule] as RuleBuckets).reserve!(...args);
            assert.deepEqual(got, want, where);
            admitted(op.rule, op.key, op.cost, want, op.limit);
          } else {
            // Rules that cannot reserve (windows, lockouts) refuse alike on both stores.
            const config = (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG');
            await assert.rejects((pgBuckets[op.rule] as RuleBuckets).reserve!(...args), config, where);
            await assert.rejects((memBuckets[op.rule] as RuleBuckets).reserve!(...args), config, where);
          }
        } else if (op.kind === 'adjust') {
          if (open.length === 0) continue;
          const [take] = open.splice(op.take % open.length, 1) as [(typeof open)[number]];
          const delta = (op.actual ?? 0) - take.cost;
          if (delta === 0) continue;
          const id = `${take.rule}/${take.key}`;
          // A refund of a take from before the key's last reset gives nothing back on both stores
          // (the memory store by the take's generation, PostgreSQL by the reset's time). One whose
          // time does not say on which side of a reset it was made (made in a reset's millisecond,
          // or across a clock stepped back) gives nothing on PostgreSQL (its safe side) and back
          // on the memory store: not settled here.
          const before = (resetAt.get(id) ?? -Infinity) >= take.at;
          const refundsNothing = delta < 0 && take.stale;
          if (delta < 0 && before !== take.stale) continue;
          const args = [
            `k${take.key}`,
            {
              delta,
              now,
              takenAt: take.at,
              until: take.until,
              limit: take.limit,
              generation: take.generation,
            },
          ] as const;
          await (pgBuckets[take.rule] as RuleBuckets).adjust(...args);
          await (memBuckets[take.rule] as RuleBuckets).adjust(...args);
          if (!refundsNothing) {
            const state = shadow.get(id) ?? { value: 0, window: 0, previous: 0, blockedUntil: 0, blockMs: 0 };
            (rules[take.rule] as Rule).adjust(state, {
              now,
              epoch: 0,
              delta,
              takenAt: take.at,
              until: take.until,
              limit: take.limit,
            });
            shadow.set(id, state);
          }
          // Read under the take's tier: the refunded state as that tier sees it.
          const peek = [`k${take.key}`, 0, now, take.limit] as const;
          assert.deepEqual(
            await (pgBuckets[take.rule] as RuleBuckets).take(...peek),
            await (memBuckets[take.rule] as RuleBuckets).take(...peek),
            `${where}: ${delta < 0 ? 'refund' : 'settlement'} of ${-delta} taken at ${new Date(take.at).toISOString()}`,
          );
          await compareRows([take], where);
        } else {
          const got = await store.takeAll(entries(pgBuckets, op.entries), now);
          const want = await memory.takeAll(entries(memBuckets, op.entries), now);
          assert.deepEqual(got, want, where);
          if (want.every((d) => d.allowed))
            for (const [n, e] of op.entries.entries()) {
              if (e.cost > 0) decideShadow(e.rule, e.key, e.cost, e.limit, true);
              admitted(e.rule, e.key, e.cost, want[n] as Decision, e.limit);
            }
          await compareRows(op.entries, where);
        }
      }
    } finally {
      for (const name of names) store.unbind(name);
    }
  }

  const property = (rules: fc.Arbitrary<Rule[]>, shape?: OpShape) =>
    fc.asyncProperty(
      rules.chain((list) => fc.tuple(fc.constant(list), ops(list, shape), fc.constantFrom(...origins))),
      async ([list, sequence, origin]) => check(list, sequence, origin),
    );
  const runs = { numRuns: 40 };

  it('fixed windows', async () => {
    await fc.assert(property(fc.array(windowRule(fixedWindow), { minLength: 1, maxLength: 2 })), runs);
  });

  it('sliding windows', async () => {
    await fc.assert(property(fc.array(windowRule(slidingWindow), { minLength: 1, maxLength: 2 })), runs);
  });

  it('anchored windows', async () => {
    await fc.assert(property(fc.array(windowRule(anchoredWindow), { minLength: 1, maxLength: 2 })), runs);
  });

  it('calendar quotas of every period in zones with DST, half-hour and 45-minute offsets', async () => {
    await fc.assert(property(fc.array(quotaRule(), { minLength: 1, maxLength: 2 })), runs);
  });

  it('all-or-nothing takes mixing every kind', async () => {
    const mixed = fc
      .tuple(
        bucketRule(),
        windowRule(fixedWindow),
        windowRule(slidingWindow),
        quotaRule(),
        windowRule(anchoredWindow),
      )
      .map((list) => [...list]);
    await fc.assert(property(mixed), runs);
  });

  it('lockouts on every kind: blocks, escalation, forgetting, penalties and all-or-nothing groups', async () => {
    const rule = fc.oneof(
      bucketRule(someLockout),
      windowRule(fixedWindow, someLockout),
      windowRule(slidingWindow, someLockout),
      quotaRule(someLockout),
      windowRule(anchoredWindow, someLockout),
    );
    await fc.assert(property(fc.array(rule, { minLength: 1, maxLength: 3 }), lockoutOps), runs);
  });

  it('refunds and settlements on every kind, with and without lockouts', async () => {
    const rule = fc.oneof(
      bucketRule(fc.option(lockout, { nil: undefined })),
      windowRule(fixedWindow, fc.option(lockout, { nil: undefined })),
      windowRule(slidingWindow, fc.option(lockout, { nil: undefined })),
      quotaRule(fc.option(lockout, { nil: undefined })),
      windowRule(anchoredWindow, fc.option(lockout, { nil: undefined })),
    );
    await fc.assert(
      property(fc.array(rule, { minLength: 1, maxLength: 3 }), { ...lockoutOps, adjusts: 5 }),
      runs,
    );
  });

  it('token buckets under per-call tiers: takes, reservations, refunds, settlements and all-or-nothing', async () => {
    const rule = bucketRule(fc.option(lockout, { nil: undefined, freq: 3 }));
    await fc.assert(
      property(fc.array(rule, { minLength: 1, maxLength: 2 }), { ...lockoutOps, adjusts: 4 }),
      runs,
    );
  });

  it('takes coalesced on a row decide as one by one when a block starts among them', async () => {
    // One statement in flight per rule: the takes arriving meanwhile share the next statement,
    // one row per key, and leave in the order they came.
    let statements = 0;
    const base = toPostgresClient(pool);
    const counting: PostgresClient = {
      query(text, values, name) {
        statements++;
        return base.query(text, values, name);
      },
      transaction: (fn) => base.transaction(fn),
    };
    const coalescing = new PostgresStore({
      client: counting,
      schema,
      timeSource: 'app',
      timeout: '10s',
      batch: { inFlight: 1 },
    });
    const round = fc.record({
      ms: step,
      // One cost and tier per key and round: takes of another cost or tier on a key would leave
      // in a statement of their own, beside the first, in no set order. Keys of one round differ
      // in tiers, so a statement carries a tier per row.
      bursts: fc.uniqueArray(
        fc.record({
          key: fc.integer({ min: 0, max: 2 }),
          cost: fc.integer({ min: 0, max: 4 }),
          n: fc.integer({ min: 1, max: 8 }),
          tier: tierIndex,
        }),
        { minLength: 1, maxLength: 3, selector: (b) => b.key },
      ),
    });
    const rules = fc
      .tuple(
        bucketRule(lockout),
        windowRule(fixedWindow, lockout),
        windowRule(slidingWindow, lockout),
        quotaRule(lockout),
        windowRule(anchoredWindow, lockout),
      )
      .map((list) => [...list]);
    let takes = 0;
    statements = 0;
    await fc.assert(
      fc.asyncProperty(
        rules,
        fc.array(round, { minLength: 2, maxLength: 8 }),
        fc.constantFrom(...origins),
        async (list, rounds, origin) => {
          const { names, pgBuckets, memBuckets } = bindBoth(coalescing, list, 'c');
          let now = origin;
          try {
            for (const [r, { ms, bursts }] of rounds.entries()) {
              now += ms;
              for (const [i, buckets] of pgBuckets.entries()) {
                const rule = list[i] as Rule;
                const calls = bursts.flatMap(({ key, cost, n, tier }) =>
                  Array.from({ length: n }, () => ({ key, cost, limit: tierOf(rule, tier) })),
                );
                takes += calls.length;
                const got = await Promise.all(
                  calls.map(({ key, cost, limit }) => buckets.take(`k${key}`, cost, now, limit)),
                );
                const want: Decision[] = [];
                for (const { key, cost, limit } of calls)
                  want.push(await (memBuckets[i] as RuleBuckets).take(`k${key}`, cost, now, limit));
                assert.deepEqual(got, want, `round ${r}, rule ${i} at ${new Date(now).toISOString()}`);
              }
            }
          } finally {
            for (const name of names) coalescing.unbind(name);
          }
        },
      ),
      { numRuns: 25 },
    );
    assert.ok(statements < takes / 2, `takes shared statements (${statements} for ${takes} takes)`);
  });
});
