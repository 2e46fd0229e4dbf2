/**
 * A token bucket's per-call tiers in PostgreSQL beyond what the conformance suite and the
 * differential test decide: a row written before the tier migration (no tier columns) reads as
 * the rule's own parameters, and a take without a tier leaves it in the format it had; a tier is
 * checked at the store's boundary, naming the field and never its value; takes of one key under
 * two tiers at once are never decided as one.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { MemoryStore, fixedWindow, isSluiceError, tokenBucket, type Decision } from '../../src/index.js';
import type { BucketTier } from '../../src/core/rules/rule.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { SCALED_EPOCH_MS } from '../../src/stores/postgres/algorithms/token-bucket.js';
import { postgresMigrations, schemaNames } from '../../src/stores/postgres/migrations.js';
import { skipUnlessReachable } from '../support/services.js';
import { createAppSchema, dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const MINUTE = 60_000;

describe('PostgreSQL token-bucket tiers: upgrades, arguments, coalescing', { skip }, () => {
  let pool: pg.Pool;

  before(() => {
    pool = testPool();
  });
  after(() => pool.end());

  const view = (d: Decision) => [d.allowed, d.limit, d.capacity, d.remaining, d.retryAfterMs, d.resetMs];

  it('a row written before the tier migration reads as the rule’s own parameters, and a plain take keeps its format', async () => {
    const schema = runSchema('tiers_upgrade');
    try {
      await createAppSchema(pool, schema);
      const n = schemaNames(schema);
      await pool.query(
        `CREATE TABLE ${n.migrations} (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const migration of postgresMigrations({ schema })) {
        if (migration.name === '009_token_bucket_tiers') continue;
        for (const sql of migration.statements) await pool.query(sql);
        await pool.query(`INSERT INTO ${n.migrations} (name) VALUES ($1)`, [migration.name]);
      }
      const now = Date.UTC(2026, 0, 15, 12);
      // 10 a minute reduces by gcd(10, 60000) = 10 to 1 scaled unit per ms and 6,000 per token:
      // the row the statements before tiers wrote after 3 tokens taken at `now`.
      const reducedNow = now - SCALED_EPOCH_MS;
      for (const key of ['old', 'older'])
        await pool.query(`INSERT INTO ${n.tokenBuckets} (rule, bucket, tat) VALUES ('tb', $1, $2)`, [
          key,
          reducedNow + 3 * 6_000,
        ]);

      const store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
      assert.deepEqual(await store.migrate(), ['009_token_bucket_tiers']);
      const rule = tokenBucket({ limit: 10, period: '1m' });
      const buckets = store.bind('tb', rule);
      // The memory store with the same history: 3 tokens taken at `now`.
      const memory = new MemoryStore().bind('tb', rule);
      for (const key of ['old', 'older']) await memory.take(key, 3, now, undefined);

      const plain = await buckets.take('old', 1, now, undefined);
      assert.deepEqual(view(plain), view(await memory.take('old', 1, now, undefined)));
      assert.deepEqual(view(plain), [true, 10, 10, 6, 0, 24_000]);
      const { rows } = await pool.query(
        `SELECT tat::float8 AS tat, tier_rate, tier_tolerance FROM ${n.tokenBuckets} WHERE rule = 'tb' AND bucket = 'old'`,
      );
      assert.deepEqual(
        rows[0],
        { tat: reducedNow + 4 * 6_000, tier_rate: null, tier_tolerance: null },
        'a take without a tier writes the reduced scale, no tier, as before',
      );

      // Under a tier ten times faster, 3 of 10 in use is 30 of 100.
      const pro: BucketTier = { limit: 100, periodMs: MINUTE, burst: 100 };
      const tiered = await buckets.take('older', 1, now, pro);
      assert.deepEqual(view(tiered), view(await memory.take('older', 1, now, pro)));
      assert.deepEqual(view(tiered), [true, 100, 100, 69, 0, 18_600]);
      const after = await pool.query(
        `SELECT tier_rate::float8 AS rate, tier_tolerance::float8 AS tolerance FROM ${n.tokenBuckets} WHERE rule = 'tb' AND bucket = 'older'`,
      );
      assert.deepEqual(after.rows[0], { rate: 100, tolerance: 100 * MINUTE }, 'a tiered take keeps its tier');
      const back = await buckets.take('older', 0, now + 1_000, undefined);
      assert.deepEqual(view(back), view(await memory.take('older', 0, now + 1_000, undefined)));
    } finally {
      await dropSchema(pool, schema);
    }
  });

  it('a tier is checked at the boundary: SLUICE_ARGUMENT naming the field, never its value', async () => {
    const schema = runSchema('tiers_args');
    try {
      await createAppSchema(pool, schema);
      const store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
      await store.migrate();
      const buckets = store.bind('tb', tokenBucket({ limit: 10, period: '1m' }));
      const window = store.bind('fw', fixedWindow({ limit: 10, window: '1m' }));
      const now = Date.now();
      const refusal = (field: RegExp, value: string) => (e: unknown) =>
        isSluiceError(e, 'SLUICE_ARGUMENT') &&
        field.test((e as Error).message) &&
        !(e as Error).message.includes(value);
      const bad: [BucketTier, RegExp, string][] = [
        [{ limit: 1.5, periodMs: 1_000, burst: 1 }, /limit\.limit/, '1.5'],
        [{ limit: 2_000_001, periodMs: 1_000, burst: 1 }, /limit\.limit/, '2000001'],
        [{ limit: 1, periodMs: -777, burst: 1 }, /limit\.periodMs/, '777'],
        [{ limit: 1, periodMs: 1_000, burst: 9_999_999_999_999 }, /limit\.burst/, '9999999999999'],
        [{ limit: 1, periodMs: 2 ** 40, burst: 2 ** 20 }, /limit\.burst/, String(2 ** 20)],
      ];
      for (const [tier, field, value] of bad) {
        await assert.rejects(buckets.take('k', 1, now, tier), refusal(field, value));
        await assert.rejects(buckets.reserve('k', 1, now, 1_000, tier), refusal(field, value));
        await assert.rejects(
          buckets.adjust('k', { delta: -1, now, takenAt: now, until: now + 1_000, limit: tier }),
          refusal(field, value),
        );
        await assert.rejects(
          store.takeAll([{ buckets, key: 'k', cost: 1, limit: tier }], now),
          refusal(field, value),
        );
      }
      await assert.rejects(
        window.take('k', 1, now, { limit: 3, periodMs: 1_000, burst: 3 }),
        refusal(/limit must be a count/, '3'),
      );
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".token_buckets`);
      assert.equal(rows[0].n, 0, 'nothing refused was written');
    } finally {
      await dropSchema(pool, schema);
    }
  });

  it('account takes carry a tier: through an account key and through takeForAccount, as the memory store decides', async () => {
    const schema = runSchema('tiers_account');
    try {
      await createAppSchema(pool, schema);
      await pool.query(`INSERT INTO "${schema}".users (id) VALUES (7)`);
      const store = new PostgresStore({
        client: pool,
        schema,
        timeSource: 'app',
        timeout: '10s',
        users: { schema, table: 'users' },
      });
      await store.migrate();
      const rule = tokenBucket({ limit: 10, period: '1m' });
      const buckets = store.bind('acct', rule);
      const memory = new MemoryStore().bind('acct', rule);
      const now = Date.UTC(2026, 0, 15, 12);
      const pro: BucketTier = { limit: 100, periodMs: MINUTE, burst: 40 };
      const key = store.accountKey(7, 'account:v1:seven');
      const steps: [number, number, BucketTier | undefined][] = [
        [3, 0, undefined],
        [5, 1_000, pro],
        [1, 1_500, undefined],
      ];
      for (const [cost, at, tier] of steps) {
        const got = await buckets.take(key, cost, now + at, tier);
        assert.deepEqual(view(got), view(await memory.take('seven', cost, now + at, tier)));
      }
      const direct = await store.takeForAccount(buckets, {
        userId: 7,
        accountKey: 'account:v1:seven',
        anonKey: 'ip',
        cost: 2,
        limit: pro,
        now: now + 2_000,
      });
      assert.equal(direct.mode, 'session');
      assert.deepEqual(view(direct.decision), view(await memory.take('seven', 2, now + 2_000, pro)));
      assert.equal(direct.decision.limit, 100);
      await assert.rejects(
        store.takeForAccount(buckets, {
          userId: 7,
          accountKey: 'account:v1:seven',
          anonKey: 'ip',
          limit: { limit: 0, periodMs: MINUTE, burst: 1 },
        }),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_ARGUMENT') && /takeForAccount limit\.limit/.test((e as Error).message),
      );
      await pool.query(`DELETE FROM "${schema}".users WHERE id = 7`);
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".token_buckets`);
      assert.equal(rows[0].n, 0, 'the tiered account row goes with its user');
    } finally {
      await dropSchema(pool, schema);
    }
  });

  it('prune() reads a tiered row in its own scale: full again, it goes; still spent, it stays', async () => {
    const schema = runSchema('tiers_prune');
    try {
      await createAppSchema(pool, schema);
      const store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '10s' });
      await store.migrate();
      // The rule's own scale is 1 unit per ms (10 an hour, reduced); the tiers' are their own.
      const buckets = store.bind('tb', tokenBucket({ limit: 10, period: '1h' }));
      const at = Date.now() - 1_000;
      // A thousand per ms: full again a thousandth of a millisecond after the take.
      await buckets.take('fast', 1, at, { limit: 1_000, periodMs: 1, burst: 1 });
      // One an hour: spent for an hour.
      await buckets.take('slow', 1, at, { limit: 1, periodMs: 3_600_000, burst: 1 });
      const pruned = await store.prune();
      assert.equal(pruned.tokenRows, 1);
      const { rows } = await pool.query(`SELECT bucket FROM "${schema}".token_buckets ORDER BY bucket`);
      assert.deepEqual(
        rows.map((r) => r.bucket),
        ['slow'],
      );
    } finally {
      await dropSchema(pool, schema);
    }
  });

  it('takes of one key under two tiers at once are each decided under their own tier', async () => {
    const schema = runSchema('tiers_coalesce');
    try {
      await createAppSchema(pool, schema);
      const store = new PostgresStore({
        client: pool,
        schema,
        timeSource: 'app',
        timeout: '10s',
        batch: { inFlight: 1 },
      });
      await store.migrate();
      const buckets = store.bind('tb', tokenBucket({ limit: 10, period: '1m' }));
      const now = Date.UTC(2026, 0, 15, 12);
      const fast: BucketTier = { limit: 100, periodMs: MINUTE, burst: 50 };
      const slow: BucketTier = { limit: 2, periodMs: MINUTE, burst: 4 };
      // The first take holds the rule's one statement in flight; the others wait and coalesce.
      const takes = [buckets.take('k', 1, now, undefined)];
      for (let i = 0; i < 4; i++) {
        takes.push(buckets.take('k', 1, now, fast), buckets.take('k', 1, now, slow));
        takes.push(buckets.take('other', 1, now, i % 2 === 0 ? fast : slow));
      }
      const decisions = await Promise.all(takes);
      const tiers = [
        undefined,
        ...Array.from({ length: 4 }, (_, i) => [fast, slow, i % 2 === 0 ? fast : slow]).flat(),
      ];
      for (const [i, d] of decisions.entries()) {
        const tier = tiers[i];
        assert.deepEqual(
          [d.limit, d.capacity, d.windowMs],
          tier === undefined ? [10, 10, MINUTE] : [tier.limit, tier.burst, tier.periodMs],
          `take ${i} is reported under its own tier`,
        );
      }
    } finally {
      await dropSchema(pool, schema);
    }
  });
});
