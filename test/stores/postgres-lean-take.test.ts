/**
 * The lean statement of a lone token-bucket take under the rule's own parameters: it is what a
 * plain take sends, it decides as the memory store does, it writes nothing for a refusal, and
 * where it cannot decide (a state another take left under a per-call tier, found in the snapshot
 * or under the row lock) it hands the take to the full take statement, which decides it as the
 * memory store does.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { MemoryStore, tokenBucket, type Decision, type TokenBucketRule } from '../../src/index.js';
import type { BucketTier } from '../../src/core/rules/rule.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { skipUnlessReachable } from '../support/services.js';
import { dropSchema, postgresUrl, runSchema, testPool, waitForLockWaiters } from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const MINUTE = 60_000;

/**
 * Records the take statements `pool` is sent, in order, into `sent`: the INSERT's first line tells
 * the lean one apart. Installed once per pool. Statements go through `pool.query` or, for a
 * decision (which takes its connection itself, to drop a statement whose caller gave up), through
 * a connection from `pool.connect`: both are recorded.
 */
function recordStatements(pool: pg.Pool, sent: string[]): void {
  const recorded =
    (query: (...args: unknown[]) => unknown) =>
    (...args: unknown[]) => {
      const config = args[0] as { text?: string } | string;
      const text = typeof config === 'string' ? config : (config.text ?? '');
      if (text.includes('INSERT INTO')) sent.push(text.startsWith('WITH s AS') ? 'lean' : 'take');
      return query(...args);
    };
  const target = pool as unknown as {
    query: (...args: unknown[]) => unknown;
    connect: () => Promise<pg.PoolClient>;
  };
  target.query = recorded(pool.query.bind(pool) as (...args: unknown[]) => unknown);
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  const wrapped = new WeakSet<pg.PoolClient>();
  target.connect = async () => {
    const connection = await connect();
    if (!wrapped.has(connection)) {
      wrapped.add(connection);
      const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
      (connection as unknown as { query: (...args: unknown[]) => unknown }).query = recorded(query);
    }
    return connection;
  };
}

describe('PostgreSQL lean token-bucket take', { skip }, () => {
  let pool: pg.Pool;
  let spy: pg.Pool;
  const sent: string[] = [];

  before(() => {
    pool = testPool();
    spy = testPool();
    recordStatements(spy, sent);
  });
  after(async () => {
    await pool.end();
    await spy.end();
  });

  const view = (d: Decision) => [d.allowed, d.limit, d.capacity, d.remaining, d.retryAfterMs, d.resetMs];

  /** A migrated schema of its own, a store on the recorded pool, and `rule` bound there and in memory. */
  async function open(label: string, rule: TokenBucketRule) {
    const schema = runSchema(label);
    const store = new PostgresStore({ client: spy, schema, timeSource: 'app', timeout: '10s' });
    await store.migrate();
    return { schema, store, buckets: store.bind('tb', rule), memory: new MemoryStore().bind('tb', rule) };
  }

  it('a plain take sends the lean statement, decides as memory, and a refusal writes nothing', async () => {
    const { schema, store, buckets, memory } = await open(
      'lean_plain',
      tokenBucket({ limit: 3, period: '1m' }),
    );
    try {
      sent.length = 0;
      // A penalty charges refusals too: the lean statement writes them.
      const penalized = tokenBucket({ limit: 3, period: '1m', penalty: true });
      const penaltyBuckets = store.bind('tp', penalized);
      const penaltyMemory = new MemoryStore().bind('tp', penalized);
      const now = Date.UTC(2026, 0, 15, 12);
      for (const [cost, at] of [
        [1, now],
        [2, now],
        [1, now + 1_000],
        [3, now + 5_000],
        [0, now + 30_000],
        [1, now + 40_000],
        [2, now + 41_000],
        [1, now + 200_000],
      ] as const) {
        assert.deepEqual(
          view(await buckets.take('k', cost, at, undefined)),
          view(await memory.take('k', cost, at, undefined)),
        );
        assert.deepEqual(
          view(await penaltyBuckets.take('k', cost, at, undefined)),
          view(await penaltyMemory.take('k', cost, at, undefined)),
        );
      }
      assert.ok(sent.length > 0 && sent.every((kind) => kind === 'lean'), `sent ${sent.join(', ')}`);
      const before = await pool.query(`SELECT tat::text, xmin::text FROM "${schema}".token_buckets`);
      const refused = await buckets.take('k', 3, now + 40_000, undefined);
      assert.equal(refused.allowed, false);
      const after = await pool.query(`SELECT tat::text, xmin::text FROM "${schema}".token_buckets`);
      assert.deepEqual(after.rows, before.rows, 'a refusal leaves the row version as it was');
    } finally {
      await dropSchema(pool, schema);
    }
  });

  it('a state kept under a tier, seen in the snapshot: the take statement decides, as memory does', async () => {
    const rule = tokenBucket({ limit: 10, period: '1m' });
    const { schema, buckets, memory } = await open('lean_tiered', rule);
    try {
      const pro: BucketTier = { limit: 100, periodMs: MINUTE, burst: 100 };
      const now = Date.UTC(2026, 0, 15, 12);
      assert.deepEqual(
        view(await buckets.take('k', 40, now, pro)),
        view(await memory.take('k', 40, now, pro)),
      );
      sent.length = 0;
      // 40 of 100 in use is 4 of 10 under the rule's own parameters.
      const plain = await buckets.take('k', 1, now + 500, undefined);
      assert.deepEqual(view(plain), view(await memory.take('k', 1, now + 500, undefined)));
      assert.deepEqual(sent, ['lean', 'take']);
    } finally {
      await dropSchema(pool, schema);
    }
  });

  // A faster tier, charged at the take's time; a slower one charged a minute before, so that its
  // state would fit the rule's own parameters if it were misread in them.
  const cases: [string, BucketTier, number][] = [
    ['faster', { limit: 100, periodMs: MINUTE, burst: 100 }, 0],
    ['slower', { limit: 1, periodMs: MINUTE, burst: 5 }, -59_000],
  ];
  for (const [label, tier, tierAt] of cases)
    it(`a ${label} tier written while the lean take waits for the row lock: it keeps the row, and the take statement decides`, async () => {
      const rule = tokenBucket({ limit: 10, period: '1m' });
      const { schema, buckets, memory } = await open(`lean_locked_${label}`, rule);
      try {
        const now = Date.UTC(2026, 0, 15, 12);
        // 'k' plain, 'model' under the tier: the tiered state 'k' will be given while locked.
        assert.deepEqual(
          view(await buckets.take('k', 2, now, undefined)),
          view(await memory.take('k', 2, now, undefined)),
        );
        await buckets.take('model', 1, now + tierAt, tier);
        const model = new MemoryStore().bind('tb', rule);
        await model.take('k', 1, now + tierAt, tier);

        const holder = await pool.connect();
        try {
          await holder.query('BEGIN');
          await holder.query(
            `SELECT 1 FROM "${schema}".token_buckets WHERE rule = 'tb' AND bucket = 'k' FOR UPDATE`,
          );
          sent.length = 0;
          // Its snapshot shows 'k' plain with room: it goes to write, and waits for the lock.
          const waiting = buckets.take('k', 1, now + 500, undefined);
          await waitForLockWaiters(pool, 1);
          await holder.query(
            `UPDATE "${schema}".token_buckets AS t SET tat = m.tat, tier_rate = m.tier_rate, tier_tolerance = m.tier_tolerance
           FROM "${schema}".token_buckets m WHERE t.rule = 'tb' AND t.bucket = 'k' AND m.rule = 'tb' AND m.bucket = 'model'`,
          );
          await holder.query('COMMIT');
          const decided = await waiting;
          assert.deepEqual(view(decided), view(await model.take('k', 1, now + 500, undefined)));
          assert.deepEqual(sent, ['lean', 'take']);
        } finally {
          holder.release();
        }
        // Charged once: a peek later reads the same bucket as the memory store's.
        assert.deepEqual(
          view(await buckets.take('k', 0, now + 1_000, undefined)),
          view(await model.take('k', 0, now + 1_000, undefined)),
        );
      } finally {
        await dropSchema(pool, schema);
      }
    });
});
