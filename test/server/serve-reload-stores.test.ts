/**
 * Hot reload on the shared stores, the real CLI over real HTTP: the limits a reload builds anew
 * bind another store object on the same connection, and find the buckets of their names; the
 * limits it keeps go on as they were. A prefix (Redis) or a schema (PostgreSQL) of this run.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { dropSchema, runSchema, testPool } from '../support/postgres.js';
import { postgresUrl, redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { replacePolicy, waitForLog } from './ops-support.js';
import { startSluice } from './serve-support.js';

const rules = (windowLimit: number) => `rules:
  - { name: kept, algorithm: token-bucket, limit: 3, period: 1h }
  - { name: changed, algorithm: fixed-window, limit: ${windowLimit}, window: 1h }
`;

/** Charges two rules, reloads with one of them changed, and charges them again. */
async function reloadKeepsBuckets(store: string, env: Record<string, string>): Promise<void> {
  const sluice = await startSluice(`version: 1\nstore: ${store}\n${rules(5)}`, [], env);
  try {
    // The store's client connects after the server listens: decide once it is ready.
    const deadline = Date.now() + 15_000;
    while ((await sluice.get('/readyz')).status !== 200) {
      if (Date.now() > deadline) throw new Error('/readyz never answered 200');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const take = async (rule: string) => {
      const reply = await sluice.post('/v1/decisions', { items: [{ rule, key: 'reload-key' }] });
      assert.equal(reply.status, 200);
      const [result] = reply.body.results;
      return [result.status, result.remaining, result.decisions[0].limit];
    };
    assert.deepEqual(await take('kept'), [200, 2, 3]);
    assert.deepEqual(await take('kept'), [200, 1, 3]);
    assert.deepEqual(await take('changed'), [200, 4, 5]);
    assert.deepEqual(await take('changed'), [200, 3, 5]);
    replacePolicy(sluice.config, `version: 1\nstore: ${store}\n${rules(8)}`);
    const [reload] = await waitForLog(sluice, 'reload');
    assert.equal(reload!.keptLimits, 1);
    assert.deepEqual(await take('kept'), [200, 0, 3]);
    assert.deepEqual(await take('kept'), [429, 0, 3]);
    // The new limit of the same name counts on from the two takes its buckets hold.
    assert.deepEqual(await take('changed'), [200, 5, 8]);
  } finally {
    assert.equal(await sluice.stop(), 0);
  }
}

describe('sluice serve reloads on Redis', async () => {
  const skip = await skipUnlessReachable('Redis', redisUrl);
  const prefix = `sluice-reload-${runId}:`;
  after(async () => {
    if (skip) return;
    const client = await ioredisClient(redisUrl);
    await deleteKeys(client, `${prefix}*`);
    client.disconnect();
  });

  it('kept limits go on, a changed one finds the buckets of its name', { skip }, () =>
    reloadKeepsBuckets(`{ type: redis, url: "\${REDIS_URL}", prefix: "${prefix}", timeout: 500ms }`, {
      REDIS_URL: redisUrl,
    }),
  );
});

describe('sluice serve reloads on PostgreSQL', async () => {
  const skip = await skipUnlessReachable('PostgreSQL', postgresUrl);
  const schema = runSchema('reload');
  after(async () => {
    if (skip) return;
    const pool = testPool();
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('kept limits go on, a changed one finds the buckets of its name', { skip }, () =>
    reloadKeepsBuckets(`{ type: postgres, url: "\${DATABASE_URL}", schema: ${schema}, timeout: 2s }`, {
      DATABASE_URL: postgresUrl,
    }),
  );
});
