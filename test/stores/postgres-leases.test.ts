/**
 * Leases in PostgreSQL beyond the conformance suite: on the store's clock, one statement per
 * operation, the row of a key (ids and expiries sorted by expiry), pruning of rows whose leases
 * all ended, and exact counts under concurrency from several pools.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { PostgresStore, pgClient, type PostgresClient } from '../../src/stores/postgres/index.js';
import { concurrencyLimit, manualClock } from '../../src/index.js';
import { skipUnlessReachable } from '../support/services.js';
import { dropSchema, postgresUrl, runSchema, testPool } from '../support/postgres.js';

const skip = await skipUnlessReachable('postgres', postgresUrl);

/** A client that counts the statements it sends. */
function counting(client: PostgresClient): PostgresClient & { statements: number } {
  const counted = {
    statements: 0,
    query: (text: string, values: readonly unknown[], name: string) => {
      counted.statements++;
      return client.query(text, values, name);
    },
    transaction: client.transaction.bind(client),
  };
  return counted;
}

describe('PostgresStore leases', { skip }, () => {
  const schema = runSchema('leases');
  let pool: pg.Pool;
  let other: pg.Pool;
  before(async () => {
    pool = testPool();
    other = testPool();
    await new PostgresStore({ client: pool, schema }).migrate();
  });
  after(async () => {
    await dropSchema(pool, schema);
    await pool.end();
    await other.end();
  });

  it("on the store's clock: one statement per operation, a row of ids sorted by expiry", async () => {
    const client = counting(pgClient(pool));
    const store = new PostgresStore({ client, schema, timeout: '5s' });
    const limit = concurrencyLimit({ name: 'exports', max: 2, leaseTtl: '30s', store });
    const first = await limit.acquire('user:1');
    const second = await limit.acquire('user:1');
    const refused = await limit.acquire('user:1');
    assert.deepEqual([first.decision.remaining, second.decision.remaining], [1, 0]);
    assert.equal(refused.decision.allowed, false);
    assert.ok(refused.decision.retryAfterMs > 29_000 && refused.decision.retryAfterMs <= 30_000);
    assert.equal(client.statements, 3);
    const { rows } = await pool.query(
      `SELECT ids, expiries FROM "${schema}".leases WHERE rule = 'exports' AND bucket = 'user:1'`,
    );
    assert.deepEqual(rows[0].ids, [first.lease!.id, second.lease!.id]);
    assert.ok(Number(rows[0].expiries[0]) <= Number(rows[0].expiries[1]));
    assert.equal(await limit.release(first.lease!), true);
    assert.equal(await limit.release(first.lease!), false);
    assert.equal(client.statements, 4, 'a second release asks nothing of the store');
    assert.equal((await limit.acquire('user:1')).decision.allowed, true);
  });

  it('exact under concurrency from two pools on one key', async () => {
    const a = concurrencyLimit({
      name: 'hot',
      max: 7,
      leaseTtl: '1m',
      store: new PostgresStore({ client: pool, schema, timeout: '10s' }),
    });
    const b = concurrencyLimit({
      name: 'hot',
      max: 7,
      leaseTtl: '1m',
      store: new PostgresStore({ client: other, schema, timeout: '10s' }),
    });
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).acquire('k')),
    );
    assert.equal(answers.filter((x) => x.decision.allowed).length, 7);
  });

  it('prune deletes the rows whose leases all ended, and only those', async () => {
    const clock = manualClock(Date.now() - 120_000);
    const store = new PostgresStore({ client: pool, schema, timeSource: 'app', timeout: '5s' });
    const old = concurrencyLimit({ name: 'old', max: 1, leaseTtl: '1m', store, clock });
    await old.acquire('gone');
    const fresh = concurrencyLimit({ name: 'fresh', max: 1, leaseTtl: '1h', store, clock });
    await fresh.acquire('kept');
    const result = await store.prune();
    assert.ok(result.leaseRows >= 1);
    const { rows } = await pool.query(`SELECT rule FROM "${schema}".leases WHERE rule IN ('old', 'fresh')`);
    assert.deepEqual(
      rows.map((r) => r.rule),
      ['fresh'],
    );
  });
});
