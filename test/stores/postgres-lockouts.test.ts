/**
 * Lockouts (a rule's `block` option) in PostgreSQL beyond what the conformance suite and the
 * differential test decide: the rows of a blocked key outlive their bucket until the block is
 * forgotten, and no longer, whatever prunes them; rows written before the lockout migration read
 * as never blocked; a schema without that migration is named as such; an account take blocks its
 * account bucket.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { fixedWindow, isSluiceError, slidingWindow, tokenBucket } from '../../src/index.js';
import type { Rule } from '../../src/core/rules/rule.js';
import type { RuleBuckets } from '../../src/stores/contract/store.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { postgresMigrations, schemaNames } from '../../src/stores/postgres/migrations.js';
import { skipUnlessReachable } from '../support/services.js';
import { createAppSchema, dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);
const SECOND = 1000;
const MINUTE = 60_000;
const HOUR = 3_600_000;
const block = { duration: '1s', factor: 2, forgetAfter: '1h' } as const;

describe('PostgreSQL lockouts: rows, pruning, upgrades', { skip }, () => {
  let pool: pg.Pool;

  before(() => {
    pool = testPool();
  });
  after(() => pool.end());

  /** A fresh schema migrated to the latest, and a store on it deciding at the caller's time. */
  async function freshStore(label: string, users = false): Promise<{ store: PostgresStore; schema: string }> {
    const schema = runSchema(label);
    await createAppSchema(pool, schema);
    const options = { client: pool, schema, timeSource: 'app', timeout: '10s' } as const;
    const store = new PostgresStore(users ? { ...options, users: { schema, table: 'users' } } : options);
    await store.migrate();
    return { store, schema };
  }

  async function row(schema: string, table: string, rule: string, bucket: string) {
    const { rows } = await pool.query(
      `SELECT blocked_until::float8 AS until, block_ms::float8 AS ms${table === 'window_counters' ? ', expires_at::float8 AS expires' : ''}
       FROM "${schema}".${table} WHERE rule = $1 AND bucket = $2`,
      [rule, bucket],
    );
    return rows[0] as { until: number; ms: number; expires?: number } | undefined;
  }

  it('prune() keeps a blocked key whose bucket is full again until its block is forgotten, then deletes it', async () => {
    const { store, schema } = await freshStore('lock_prune');
    try {
      // Decided in the past on the application's time; prune() deletes on the store's clock.
      const real = Date.now();
      const recent = real - 10 * MINUTE;
      const old = real - 2 * HOUR;
      const bucket = store.bind('tb', tokenBucket({ limit: 1, period: '1s', block }));
      const window = store.bind('fw', fixedWindow({ limit: 1, window: '1s', block }));
      const plain = store.bind('plain', tokenBucket({ limit: 1, period: '1s' }));
      for (const buckets of [bucket, window]) {
        for (const [key, at] of [
          ['recent', recent],
          ['old', old],
        ] as const) {
          assert.equal((await buckets.take(key, 1, at, undefined)).allowed, true);
          assert.equal(
            (await buckets.take(key, 1, at, undefined)).retryAfterMs,
            SECOND,
            `${buckets.kind} ${key}: blocked`,
          );
        }
      }
      await plain.take('full', 1, recent, undefined);
      // Seconds after the takes every bucket is full again and every window over: only the
      // blocks (remembered an hour after their end) can keep a row.
      const windowRow = await row(schema, 'window_counters', 'fw', 'recent');
      assert.equal(
        windowRow?.expires,
        recent + SECOND + HOUR,
        'the expiry of the window row is the end of its block memory',
      );
      // An all-or-nothing take admitted after the block keeps that expiry, though the window it
      // writes ends much sooner.
      const [admitted] = await store.takeAll(
        [{ buckets: window, key: 'recent', cost: 1, limit: undefined }],
        recent + 5 * SECOND,
      );
      assert.equal(admitted?.allowed, true);
      assert.equal((await row(schema, 'window_counters', 'fw', 'recent'))?.expires, recent + SECOND + HOUR);

      assert.deepEqual(await store.prune(), {
        quotaRows: 0,
        tokenRows: 2,
        windowRows: 1,
        leaseRows: 0,
        resetRows: 0,
      });
      assert.equal(
        await row(schema, 'token_buckets', 'tb', 'old'),
        undefined,
        'forgotten an hour ago: deleted',
      );
      assert.equal(await row(schema, 'window_counters', 'fw', 'old'), undefined);
      assert.equal(
        await row(schema, 'token_buckets', 'plain', 'full'),
        undefined,
        'a full bucket without lockout goes',
      );
      assert.deepEqual(await row(schema, 'token_buckets', 'tb', 'recent'), {
        until: recent + SECOND,
        ms: SECOND,
      });
      // Kept, so remembered: refused again within the hour, the key is blocked twice as long.
      const later = recent + 10 * SECOND;
      await bucket.take('recent', 1, later, undefined);
      assert.equal((await bucket.take('recent', 1, later, undefined)).retryAfterMs, 2 * SECOND);
      await window.take('recent', 1, later, undefined);
      assert.equal((await window.take('recent', 1, later, undefined)).retryAfterMs, 2 * SECOND);
    } finally {
      await dropSchema(pool, schema);
    }
  });

  it('rows from before the lockout migration read as never blocked; until it runs, a rule with a block is told what is missing', async () => {
    const schema = runSchema('lock_upgrade');
    try {
      await createAppSchema(pool, schema);
      const n = schemaNames(schema);
      await pool.query(
        `CREATE TABLE ${n.migrations} (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      for (const migration of postgresMigrations({ schema })) {
        // Token buckets need the tier columns (009) whatever else the schema lacks.
        if (migration.name >= '007' && migration.name !== '009_token_bucket_tiers') continue;
        for (const sql of migration.statements) await pool.query(sql);
        await pool.query(`INSERT INTO ${n.migrations} (name) VALUES ($1)`, [migration.name]);
      }
      const options = { client: pool, schema, timeSource: 'app', timeout: '10s' } as const;
      const now = Date.UTC(2026, 0, 15, 12);
      const rules: [string, (withBlock: boolean) => Rule][] = [
        ['tb', (b) => tokenBucket({ limit: 2, period: '1h', ...(b ? { block } : {}) })],
        ['sw', (b) => slidingWindow({ limit: 2, window: '1h', ...(b ? { block } : {}) })],
      ];
      const plain = new PostgresStore(options);
      for (const [name, rule] of rules) {
        const d = await plain.bind(name, rule(false)).take('k', 1, now, undefined);
        assert.deepEqual([d.allowed, d.remaining], [true, 1], `${name}: rules without a block keep working`);
      }
      const blocked = new PostgresStore(options);
      const withBlock = rules.map(([name, rule]) => blocked.bind(name, rule(true)));
      const missing = (e: unknown) =>
        isSluiceError(e, 'SLUICE_STORE_SCHEMA') &&
        /lockouts/.test((e as Error).message) &&
        /blocked_until/.test((e as Error).message) &&
        /migrate\(\)/.test((e as Error).message);
      for (const buckets of withBlock) await assert.rejects(buckets.take('k', 1, now, undefined), missing);
      await assert.rejects(
        blocked.takeAll([{ buckets: withBlock[0] as RuleBuckets, key: 'k', cost: 1, limit: undefined }], now),
        missing,
      );

      assert.deepEqual(await blocked.migrate(), [
        '007_lockouts',
        '008_leases',
        '010_carry_quota_counters',
        '011_bucket_resets',
      ]);
      assert.deepEqual(await blocked.migrate(), [], 'migrating again changes nothing');
      for (const buckets of withBlock) {
        // The row written before the migration: one of two taken, and no block.
        const last = await buckets.take('k', 1, now + 1, undefined);
        assert.deepEqual([last.allowed, last.remaining], [true, 0], `${buckets.kind}: the old count is read`);
        const refused = await buckets.take('k', 1, now + 1, undefined);
        assert.equal(refused.allowed, false);
        assert.ok(refused.retryAfterMs >= SECOND, `${buckets.kind}: a refusal now blocks`);
        const table = buckets.kind === 'token-bucket' ? 'token_buckets' : 'window_counters';
        assert.equal((await row(schema, table, buckets.name, 'k'))?.ms, SECOND);
      }
    } finally {
      await dropSchema(pool, schema);
    }
  });

  it('an account take on a rule with a block blocks the account bucket, and erasing the user erases the block', async () => {
    const { store, schema } = await freshStore('lock_account', true);
    try {
      await pool.query(`INSERT INTO "${schema}".users (id) VALUES (7)`);
      const buckets = store.bind('acct', tokenBucket({ limit: 1, period: '1h', block: { duration: '10m' } }));
      const now = Date.now();
      const take = () =>
        store.takeForAccount(
          { buckets, clock: () => now },
          { userId: 7, accountKey: 'account:v1:s:7', anonKey: 'ip:1' },
        );
      assert.equal((await take()).decision.allowed, true);
      const refused = await take();
      assert.deepEqual(
        [refused.mode, refused.decision.allowed, refused.decision.retryAfterMs],
        ['session', false, HOUR],
      );
      assert.equal((await row(schema, 'token_buckets', 'acct', 'account:v1:s:7'))?.ms, 10 * MINUTE);
      assert.equal(await store.forgetAccount(7), 1);
      assert.equal(await row(schema, 'token_buckets', 'acct', 'account:v1:s:7'), undefined);
    } finally {
      await dropSchema(pool, schema);
    }
  });
});
