/**
 * The Redis store on a real 3-master Redis Cluster, started here from redis-server on free
 * loopback ports and torn down afterwards (also when a test fails).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Cluster } from 'ioredis';
import { storeConformance } from '../../src/testing/index.js';
import {
  redisBinariesMissing,
  startCluster,
  rawCommand,
  type PrivateCluster,
} from '../support/redis-servers.js';
import { ioredisCluster, nodeRedisCluster } from '../support/redis-clients.js';
import { takeFromProcesses } from '../support/redis-processes.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { createCascade, createLimiter, isSluiceError, tokenBucket, calendarQuota } from '../../src/index.js';

const skip = redisBinariesMissing();
let cluster: PrivateCluster | undefined;
let client: Cluster | undefined;
let stores = 0;

async function ensureCluster(): Promise<Cluster> {
  cluster ??= await startCluster(3);
  client ??= await ioredisCluster(cluster.nodes);
  return client;
}

after(async () => {
  await client?.quit();
  await cluster?.stop();
});

storeConformance({
  name: 'redis cluster (ioredis, app time, hashTag "store")',
  skip,
  // A loaded 2-core CI machine can take longer than the 100 ms production default.
  timeout: '2s',
  async setup() {
    await ensureCluster();
  },
  async create() {
    // Every bucket in one slot, so the conformance suite's cascades of unrelated keys
    // ('ip', 'ip+nick', 'acct') can run in one script.
    return new RedisStore({
      client: client!,
      timeSource: 'app',
      hashTag: 'store',
      timeout: '2s',
      prefix: `conf${++stores}:`,
    });
  },
});

describe('RedisStore on a Redis Cluster', { skip }, () => {
  before(async () => {
    await ensureCluster();
  });

  it('with hashTag "key", buckets spread over every master; a cascade on one key runs in one script', async () => {
    const store = new RedisStore({ client: client!, timeout: '2s', prefix: 'spread:' });
    const wide = createLimiter({
      timeout: '2s',
      name: 'wide',
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store,
    });
    const narrow = createLimiter({ timeout: '2s', name: 'narrow', rule: calendarQuota({ limit: 2 }), store });
    await Promise.all(Array.from({ length: 60 }, (_, i) => wide.take(`ip-${i}`)));
    for (const server of cluster!.servers) {
      const size = await rawCommand(server.port, 'DBSIZE');
      assert.ok(Number(size!.slice(1)) > 0, `master ${server.port} holds keys`);
    }
    const cascade = createCascade([wide, narrow], { mode: 'all-or-nothing' });
    const results = await Promise.all(Array.from({ length: 20 }, () => cascade.take('ip-x')));
    assert.equal(results.filter((r) => r.allowed).length, 2);
    assert.equal((await wide.peek('ip-x')).remaining, 3);
  });

  it('an all-or-nothing take across slots is a configuration error; a hashTag function joins the keys', async () => {
    const store = new RedisStore({ client: client!, timeout: '2s', prefix: 'xslot:' });
    const a = createLimiter({
      timeout: '2s',
      name: 'a',
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store,
    });
    const b = createLimiter({
      timeout: '2s',
      name: 'b',
      rule: tokenBucket({ limit: 2, period: '1h' }),
      store,
    });
    const cascade = createCascade([a, b], { mode: 'all-or-nothing' });
    await assert.rejects(cascade.take(['10.0.0.1', '10.0.0.1|alice']), (e: unknown) =>
      isSluiceError(e, 'SLUICE_CONFIG'),
    );
    const tagged = new RedisStore({
      client: client!,
      prefix: 'tagged:',
      timeout: '2s',
      hashTag: (_name, key) => key.split('|')[0]!,
    });
    const ta = createLimiter({
      timeout: '2s',
      name: 'a',
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store: tagged,
    });
    const tb = createLimiter({
      timeout: '2s',
      name: 'b',
      rule: tokenBucket({ limit: 2, period: '1h' }),
      store: tagged,
    });
    const joined = createCascade([ta, tb], { mode: 'all-or-nothing' });
    const results = await Promise.all(
      Array.from({ length: 10 }, () => joined.take(['10.0.0.1', '10.0.0.1|alice'])),
    );
    assert.equal(results.filter((r) => r.allowed).length, 2);
    assert.equal((await ta.peek('10.0.0.1')).remaining, 3);
  });

  it("refunds and settlements on the server's clock, keys spread over every master", async () => {
    const store = new RedisStore({ client: client!, timeout: '2s', prefix: 'refund:' });
    const bucket = createLimiter({
      timeout: '2s',
      name: 'bucket',
      rule: tokenBucket({ limit: 1, period: '1h', burst: 5 }),
      store,
    });
    const quota = createLimiter({ timeout: '2s', name: 'quota', rule: calendarQuota({ limit: 5 }), store });
    const keys = Array.from({ length: 30 }, (_, i) => `ip-${i}`);
    for (const l of [bucket, quota]) {
      const taken = await Promise.all(keys.map((key) => l.takeWithReceipt(key, { cost: 3 })));
      await Promise.all(taken.map(({ receipt }, i) => (i % 2 ? l.refund(receipt!) : l.settle(receipt!, 4))));
      const left = await Promise.all(keys.map((key) => l.peek(key)));
      // A bucket's refund on the server's clock may keep up to the clock offset's error of the
      // take (a few ms, less than a token of an hour): a refunded key has 4 or 5 left, never
      // the 2 of a refund lost, nor more than full.
      const refunded = (remaining: number) => (l === bucket && remaining === 4 ? 5 : remaining);
      assert.deepEqual(
        left.map((d, i) => (i % 2 ? refunded(d.remaining) : d.remaining)),
        keys.map((_, i) => (i % 2 ? 5 : 1)),
        l.name,
      );
    }
  });

  it('erase deletes a subject`s keys spread over several slots', async () => {
    const store = new RedisStore({ client: client!, timeout: '2s', prefix: 'erase:' });
    const a = createLimiter({
      timeout: '2s',
      name: 'a',
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store,
    });
    const b = createLimiter({ timeout: '2s', name: 'b', rule: calendarQuota({ limit: 5 }), store });
    const keys = Array.from({ length: 10 }, (_, i) => `account:v${i}:x`);
    for (const key of keys) {
      await a.take(key);
      await b.take(key);
    }
    assert.equal(await store.erase(keys), 20);
    assert.equal((await a.peek(keys[3]!)).remaining, 5);
  });

  it('node-redis v5 cluster client: exact under concurrency', async () => {
    const nodeCluster = await nodeRedisCluster(cluster!.nodes);
    try {
      const store = new RedisStore({ client: nodeCluster, prefix: 'node:', timeout: '2s' });
      const limiter = createLimiter({
        timeout: '2s',
        name: 'hot',
        rule: tokenBucket({ limit: 100, period: '1h' }),
        store,
      });
      const ds = await Promise.all(Array.from({ length: 500 }, (_, i) => limiter.take(i % 2 ? 'x' : 'y')));
      assert.equal(ds.filter((d) => d.allowed).length, 200);
    } finally {
      await nodeCluster.quit();
    }
  });

  it('4 processes x 500 concurrent takes on one key with burst 100 admit exactly 100 (Cluster)', async () => {
    const totals = await takeFromProcesses(4, {
      mode: 'cluster',
      target: JSON.stringify(cluster!.nodes),
      prefix: 'proc:',
      name: 'hot',
      count: 500,
      burst: 100,
    });
    assert.deepEqual(totals, { admitted: 100, errors: 0 });
  });
});
