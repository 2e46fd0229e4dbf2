/**
 * The PostgreSQL algorithm modules held to the core: random sequences of takes, peeks, resets,
 * per-call limits, all-or-nothing takes and steps of time (forwards and back, around DST changes
 * and month ends) run against a PostgresStore deciding on the application's time and against
 * the memory store, and every decision must be identical, field for field. The state a window
 * rule's row holds after each operation must also equal the state the core rule keeps (run on
 * its own beside them): a wrong write can hide behind equal decisions for a while (a count past
 * the limit still reads "0 remaining").
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type pg from 'pg';
import {
  MemoryStore,
  calendarQuota,
  fixedWindow,
  slidingWindow,
  tokenBucket,
  type Decision,
} from '../../src/index.js';
import type { Rule } from '../../src/core/algorithm.js';
import type { BucketState } from '../../src/core/state.js';
import type { RuleBuckets, TakeEntry } from '../../src/store.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
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

type Op =
  | { kind: 'take'; rule: number; key: number; cost: number; limit: number | undefined }
  | { kind: 'reset'; rule: number; key: number }
  | { kind: 'step'; ms: number }
  | { kind: 'all'; entries: { rule: number; key: number; cost: number; limit: number | undefined }[] };

const penalty = fc.boolean();
const small = fc.integer({ min: 1, max: 6 });
const windowRule = (make: typeof fixedWindow | typeof slidingWindow) =>
  fc
    .record({ limit: small, window: fc.constantFrom('1s', '10s', '1m', '1h'), penalty })
    .map((o) => make(o) as Rule);
const quotaRule = fc
  .record({
    limit: small,
    per: fc.constantFrom('hour', 'day', 'week', 'month'),
    timeZone: fc.constantFrom(...zones),
    weekStart: fc.constantFrom(1, 3, 7),
    penalty,
  })
  .map(
    ({ weekStart, ...o }) =>
      calendarQuota(o.per === 'week' ? { ...o, weekStart: weekStart as 1 | 3 | 7 } : o) as Rule,
  );
const bucketRule = fc
  .record({ limit: small, period: fc.constantFrom('1s', '1m', '1h'), penalty })
  .map((o) => tokenBucket(o) as Rule);

const step = fc.oneof(
  fc.integer({ min: -2_000, max: 2_000 }),
  fc.integer({ min: -10_000, max: 40_000 }),
  fc.integer({ min: -90 * 60_000, max: 90 * 60_000 }),
  fc.integer({ min: -3 * 86_400_000, max: 8 * 86_400_000 }),
);

/** Operations on `rules` rules, with costs up to one past a rule's limit and per-call limits where a rule accepts them. */
function ops(rules: readonly Rule[]): fc.Arbitrary<Op[]> {
  const take = fc
    .record({
      rule: fc.integer({ min: 0, max: rules.length - 1 }),
      key: fc.integer({ min: 0, max: 2 }),
      cost: fc.integer({ min: 0, max: 7 }),
      limit: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    })
    .map((t) => ({ ...t, limit: (rules[t.rule] as Rule).acceptsCallLimit ? t.limit : undefined }));
  return fc.array(
    fc.oneof(
      { weight: 6, arbitrary: take.map((t) => ({ kind: 'take' as const, ...t })) },
      {
        weight: 1,
        arbitrary: fc
          .record({
            rule: fc.integer({ min: 0, max: rules.length - 1 }),
            key: fc.integer({ min: 0, max: 2 }),
          })
          .map((r) => ({ kind: 'reset' as const, ...r })),
      },
      { weight: 3, arbitrary: step.map((ms) => ({ kind: 'step' as const, ms })) },
      {
        weight: 2,
        arbitrary: fc
          .uniqueArray(take, { minLength: 1, maxLength: 4, selector: (t) => `${t.rule}/${t.key}` })
          .map((entries) => ({ kind: 'all' as const, entries })),
      },
    ),
    { minLength: 5, maxLength: 40 },
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

  /** Runs `list` on both stores from `origin`; every decision must be identical. */
  async function check(rules: readonly Rule[], list: readonly Op[], origin: number): Promise<void> {
    run++;
    const memory = new MemoryStore();
    const names = rules.map((_, i) => `r${run}_${i}`);
    const pgBuckets = rules.map((rule, i) => store.bind(names[i] as string, rule));
    const memBuckets = rules.map((rule, i) => memory.bind(names[i] as string, rule));
    let now = origin;
    // The core's own state per rule and key (window rules), beside the two stores.
    const shadow = new Map<string, BucketState>();
    const decideShadow = (
      rule: number,
      key: number,
      cost: number,
      limit: number | undefined,
      commit: boolean,
    ) => {
      const id = `${rule}/${key}`;
      const state = shadow.get(id) ?? { value: 0, window: 0, previous: 0, blockedUntil: 0, blockMs: 0 };
      const decision = (rules[rule] as Rule).decide(state, now, 0, 'shadow', cost, limit, commit);
      shadow.set(id, state);
      return decision;
    };
    const compareRows = async (touched: readonly { rule: number; key: number }[], where: string) => {
      for (const { rule, key } of touched) {
        if ((rules[rule] as Rule).kind === 'token-bucket') continue;
        const { rows } = await pool.query(
          `SELECT window_start::float8 AS w, count::float8 AS c, previous::float8 AS p FROM "${schema}".window_counters WHERE rule = $1 AND bucket = $2`,
          [names[rule], `k${key}`],
        );
        const state = shadow.get(`${rule}/${key}`) ?? { value: 0, window: 0, previous: 0 };
        const row = rows[0] ?? { w: state.window, c: 0, p: 0 };
        assert.deepEqual(
          { value: row.c, window: row.w, previous: row.p },
          state,
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
    try {
      for (const [i, op] of list.entries()) {
        const where = `op ${i} (${op.kind}) at ${new Date(now).toISOString()}`;
        if (op.kind === 'step') {
          now += op.ms;
        } else if (op.kind === 'reset') {
          await (pgBuckets[op.rule] as RuleBuckets).reset(`k${op.key}`);
          await (memBuckets[op.rule] as RuleBuckets).reset(`k${op.key}`);
          shadow.delete(`${op.rule}/${op.key}`);
        } else if (op.kind === 'take') {
          const args = [`k${op.key}`, op.cost, now, op.limit] as const;
          const got: Decision = await (pgBuckets[op.rule] as RuleBuckets).take(...args);
          const want: Decision = await (memBuckets[op.rule] as RuleBuckets).take(...args);
          assert.deepEqual(got, want, where);
          decideShadow(op.rule, op.key, op.cost, op.limit, true);
          await compareRows([op], where);
        } else {
          const got = await store.takeAll(entries(pgBuckets, op.entries), now);
          const want = await memory.takeAll(entries(memBuckets, op.entries), now);
          assert.deepEqual(got, want, where);
          if (want.every((d) => d.allowed))
            for (const e of op.entries) if (e.cost > 0) decideShadow(e.rule, e.key, e.cost, e.limit, true);
          await compareRows(op.entries, where);
        }
      }
    } finally {
      for (const name of names) store.unbind(name);
    }
  }

  const property = (rules: fc.Arbitrary<Rule[]>) =>
    fc.asyncProperty(
      rules.chain((list) => fc.tuple(fc.constant(list), ops(list), fc.constantFrom(...origins))),
      async ([list, sequence, origin]) => check(list, sequence, origin),
    );
  const runs = { numRuns: 40 };

  it('fixed windows', async () => {
    await fc.assert(property(fc.array(windowRule(fixedWindow), { minLength: 1, maxLength: 2 })), runs);
  });

  it('sliding windows', async () => {
    await fc.assert(property(fc.array(windowRule(slidingWindow), { minLength: 1, maxLength: 2 })), runs);
  });

  it('calendar quotas of every period in zones with DST, half-hour and 45-minute offsets', async () => {
    await fc.assert(property(fc.array(quotaRule, { minLength: 1, maxLength: 2 })), runs);
  });

  it('all-or-nothing takes mixing every kind', async () => {
    const mixed = fc
      .tuple(bucketRule, windowRule(fixedWindow), windowRule(slidingWindow), quotaRule)
      .map((list) => [...list]);
    await fc.assert(property(mixed), runs);
  });
});
