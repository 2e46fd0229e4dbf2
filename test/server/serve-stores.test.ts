/**
 * `sluice serve` on the shared stores named in the file: Redis and PostgreSQL at their URLs,
 * with a key prefix or a schema of this run. Two servers on one store enforce one limit; with
 * Redis down (a private redis-server, killed) /readyz says so and decisions fail closed, and
 * both come back with it. Bounded waits only.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { redisBinariesMissing, startRedis, type PrivateRedis } from '../support/redis-servers.js';
import { dropSchema, runSchema, testPool } from '../support/postgres.js';
import { postgresUrl, redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { startSluice, type RunningSluice } from './serve-support.js';

const rules = `rules:
  - { name: api, algorithm: token-bucket, limit: 3, period: 1h }
  - { name: daily, algorithm: calendar-quota, limit: 2, match: { paths: [/reports] } }
`;
const take = (key: string) => ({ items: [{ rule: 'api', key }] });

/** The statuses of `n` decisions of one key, alternating between two servers. */
async function alternate(servers: RunningSluice[], key: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const reply = await servers[i % servers.length]!.post('/v1/decisions', take(key));
    statuses.push(reply.body.results[0].status);
  }
  return statuses;
}

/** A request matching both rules is charged in both, in file order. */
async function reportOnce(sluice: RunningSluice): Promise<void> {
  const request = { method: 'GET', path: '/reports', address: '203.0.113.1' };
  const [result] = (await sluice.post('/v1/decisions', { items: [{ request }] })).body.results;
  assert.deepEqual([result.rules, result.remaining], [['api', 'daily'], 1]);
}

/** Polls /readyz until it answers `status` (at most 15 s). */
async function readiness(sluice: RunningSluice, status: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if ((await sluice.get('/readyz')).status === status) return;
    if (Date.now() > deadline) throw new Error(`/readyz never answered ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('sluice serve on Redis', async () => {
  const skip = await skipUnlessReachable('Redis', redisUrl);
  const prefix = `sluice-serve-${runId}:`;
  const policy = `version: 1\nstore: { type: redis, url: "\${REDIS_URL}", prefix: "${prefix}", timeout: 500ms }\n${rules}`;
  let servers: RunningSluice[] = [];

  before(async () => {
    if (skip) return;
    servers = await Promise.all([
      startSluice(policy, [], { REDIS_URL: redisUrl }),
      startSluice(policy, [], { REDIS_URL: redisUrl }),
    ]);
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    if (skip) return;
    const client = await ioredisClient(redisUrl);
    await deleteKeys(client, `${prefix}*`);
    client.disconnect();
  });

  it('two servers on one Redis enforce one limit', { skip }, async () => {
    assert.match(servers[0]!.output(), /\(2 rules, redis store\)/);
    // No secret in this policy: the keys in Redis are the text of the keys, and the start says so.
    assert.match(
      servers[0]!.output(),
      /warning: the policy has no clients\.pseudonymSecret, so keys go to the redis store as plain text/,
    );
    assert.deepEqual(await alternate(servers, 'shared', 5), [200, 200, 200, 429, 429]);
    await reportOnce(servers[1]!);
  });

  it('reset on one server is seen by the other; /readyz answers', { skip }, async () => {
    await servers[0]!.post('/v1/reset', take('shared'));
    assert.deepEqual(await alternate(servers.slice(1), 'shared', 1), [200]);
    assert.deepEqual((await servers[1]!.get('/readyz')).body, { status: 'ok', store: 'redis' });
  });
});

describe('sluice serve starting on Redis', async () => {
  const skip = await skipUnlessReachable('Redis', redisUrl);
  const prefix = `sluice-serve-start-${runId}:`;

  after(async () => {
    if (skip) return;
    const client = await ioredisClient(redisUrl);
    await deleteKeys(client, `${prefix}*`);
    client.disconnect();
  });

  it('decides on the store from the first request after it prints its address', { skip }, async () => {
    const policy = `version: 1\nstore: { type: redis, url: "${redisUrl}", prefix: "${prefix}" }\n${rules}`;
    // Several starts: the connection is made in a few ms, so a server that did not wait for it
    // would fail (503, closed) some first request right after its address line.
    for (let i = 0; i < 4; i++) {
      const sluice = await startSluice(policy);
      try {
        const [first] = (await sluice.post('/v1/decisions', take(`first-${i}`))).body.results;
        assert.deepEqual([first.status, first.remaining], [200, 2], `start ${i}`);
      } finally {
        await sluice.stop();
      }
    }
  });

  it(
    'starts while Redis is down: /readyz says so and decisions fail closed',
    { skip: skip || redisBinariesMissing() },
    async () => {
      // A port nothing listens on (a private server started and stopped there).
      const redis = await startRedis();
      await redis.kill();
      const sluice = await startSluice(`version: 1\nstore: { type: redis, url: "${redis.url}" }\n${rules}`);
      try {
        assert.deepEqual((await sluice.get('/readyz')).body, { status: 'unavailable', store: 'redis' });
        assert.equal((await sluice.post('/v1/decisions', take('k'))).body.results[0].status, 503);
      } finally {
        await sluice.stop();
        await redis.stop();
      }
    },
  );
});

describe('sluice serve while Redis is down', async () => {
  const skip = redisBinariesMissing();
  let redis: PrivateRedis | undefined;
  let sluice: RunningSluice | undefined;

  before(async () => {
    if (skip) return;
    redis = await startRedis();
    sluice = await startSluice(`version: 1\nstore: { type: redis, url: "${redis.url}" }\n${rules}`);
  });
  after(async () => {
    await sluice?.stop();
    await redis?.stop();
  });

  it(
    '/readyz is 503 and decisions fail closed (503) while the store is down; both recover',
    { skip },
    async () => {
      await readiness(sluice!, 200);
      assert.equal((await sluice!.post('/v1/decisions', take('k'))).body.results[0].status, 200);
      await redis!.kill();
      await readiness(sluice!, 503);
      assert.deepEqual((await sluice!.get('/readyz')).body, { status: 'unavailable', store: 'redis' });
      const [down] = (await sluice!.post('/v1/decisions', take('k'))).body.results;
      assert.deepEqual([down.allowed, down.status, down.body.code], [false, 503, 'rate_limit_unavailable']);
      assert.equal((await sluice!.get('/healthz')).status, 200);
      await redis!.restart();
      await readiness(sluice!, 200);
      // An empty Redis: the key starts over (the scripts are loaded again on their own).
      const deadline = Date.now() + 15_000;
      let status = 0;
      while (status !== 200 && Date.now() < deadline)
        status = (await sluice!.post('/v1/decisions', take('k'))).body.results[0].status;
      assert.equal(status, 200);
    },
  );
});

describe('sluice serve on PostgreSQL', async () => {
  const skip = await skipUnlessReachable('PostgreSQL', postgresUrl);
  const schema = runSchema('serve');
  const policy = `version: 1\nstore: { type: postgres, url: "\${DATABASE_URL}", schema: ${schema}, timeout: 2s }\n${rules}`;
  const servers: RunningSluice[] = [];

  before(async () => {
    if (skip) return;
    // One first, so that the two do not race to create the tables.
    servers.push(await startSluice(policy, [], { DATABASE_URL: postgresUrl }));
    servers.push(await startSluice(policy, [], { DATABASE_URL: postgresUrl }));
  });
  after(async () => {
    const stopped = await Promise.all(servers.map((s) => s.stop()));
    if (!skip)
      assert.deepEqual(
        stopped,
        servers.map(() => 0),
      );
    if (skip) return;
    const pool = testPool();
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('creates its tables, and two servers on one database enforce one limit', { skip }, async () => {
    assert.deepEqual((await servers[0]!.get('/readyz')).body, { status: 'ok', store: 'postgres' });
    assert.deepEqual(await alternate(servers, 'shared', 5), [200, 200, 200, 429, 429]);
    await reportOnce(servers[0]!);
  });
});
