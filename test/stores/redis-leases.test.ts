/**
 * Leases in Redis beyond the conformance suite: on the server's clock, the sorted set and its TTL
 * (the latest lease's expiry, so a key whose leases all ended vanishes), one script call per
 * operation, batching under load, erasure, a key of another type, and the script's SHA.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient } from '../support/redis-clients.js';
import { assertTtl, ttlWindow } from '../support/redis-ttl.js';
import { RedisStore, redisClient, type RedisClient } from '../../src/stores/redis/index.js';
import { leaseScript, leaseScriptSha } from '../../src/stores/redis/lease-script.js';
import { concurrencyLimit, isSluiceError, manualClock } from '../../src/index.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefix = `sluice-test:${runId}:leases:`;

/** A client that counts the script calls it sends. */
function counting(client: RedisClient): RedisClient & { calls: number } {
  const counted = {
    calls: 0,
    cluster: client.cluster,
    ready: () => client.ready(),
    evalsha: (sha: string, keys: string[], args: string[]) => {
      counted.calls++;
      return client.evalsha(sha, keys, args);
    },
    eval: (script: string, keys: string[], args: string[]) => {
      counted.calls++;
      return client.eval(script, keys, args);
    },
    del: (keys: string[]) => client.del(keys),
  };
  return counted;
}

describe('RedisStore leases', { skip }, () => {
  let redis: Redis;
  before(async () => {
    redis = await ioredisClient(redisUrl);
  });
  after(async () => {
    await deleteKeys(redis, `${prefix}*`);
    redis.disconnect();
  });

  it('the SHA computed locally is the one SCRIPT LOAD returns', async () => {
    assert.equal(await redis.script('LOAD', leaseScript), leaseScriptSha);
  });

  it("on the server's clock: a sorted set per key, its TTL the latest lease's expiry, gone once released", async () => {
    const store = new RedisStore({ client: redis, prefix: `${prefix}s1:`, timeout: '2s' });
    const limit = concurrencyLimit({ name: 'exports', max: 2, leaseTtl: '30s', store });
    const key = `${prefix}s1:exports:{user:1}`;
    let first: Awaited<ReturnType<typeof limit.acquire>> | undefined;
    const window = await ttlWindow(redis, key, async () => {
      first = await limit.acquire('user:1');
    });
    assertTtl(window, 30_000, 'the lease ttl');
    assert.equal(await redis.type(key), 'zset');
    const second = await limit.acquire('user:1');
    const refused = await limit.acquire('user:1');
    assert.equal(refused.decision.allowed, false);
    assert.ok(refused.decision.retryAfterMs > 29_000 && refused.decision.retryAfterMs <= 30_000);
    assert.equal(await limit.release(first!.lease!), true);
    assert.equal(await limit.release(second.lease!), true);
    assert.equal(await redis.exists(key), 0, 'an empty set is deleted');
    assert.equal(await limit.release(second.lease!), false);
  });

  it('one script call per operation alone; operations arriving together share calls', async () => {
    const client = counting(redisClient(redis));
    const store = new RedisStore({ client, prefix: `${prefix}s2:`, timeout: '2s' });
    const limit = concurrencyLimit({ name: 'c', max: 1, leaseTtl: '1m', store });
    const { lease } = await limit.acquire('k');
    await limit.release(lease!);
    assert.equal(client.calls, 2);
    client.calls = 0;
    const answers = await Promise.all(Array.from({ length: 256 }, (_, i) => limit.acquire(`k${i}`)));
    assert.equal(answers.filter((a) => a.decision.allowed).length, 256);
    assert.ok(client.calls < 64, `256 acquisitions in ${client.calls} calls`);
    const released = await Promise.all(answers.map((a) => limit.release(a.lease!)));
    assert.ok(released.every((r) => r));
  });

  it('two concurrency limits in one script call keep their own max and ttl', async () => {
    const client = counting(redisClient(redis));
    const store = new RedisStore({ client, prefix: `${prefix}s5:`, timeout: '2s' });
    const one = concurrencyLimit({ name: 'one', max: 1, leaseTtl: '10s', store });
    const three = concurrencyLimit({ name: 'three', max: 3, leaseTtl: '1m', store });
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : three).acquire('k')),
    );
    assert.ok(client.calls < 40, 'the operations shared calls');
    const granted = answers.filter((a) => a.lease !== undefined);
    const count = (rule: string) => granted.filter((a) => a.lease!.rule === rule).length;
    assert.deepEqual([count('one'), count('three')], [1, 3]);
    const refusedOne = answers.find((a) => a.decision.name === 'one' && !a.decision.allowed)!;
    assert.ok(refusedOne.decision.retryAfterMs <= 10_000, "the short limit's own ttl");
    const released = await Promise.all(
      granted.map((a) => (a.lease!.rule === 'one' ? one : three).release(a.lease!)),
    );
    assert.deepEqual(released, [true, true, true, true]);
  });

  it("erase removes a subject's leases; a key of another type is replaced, not a failure", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = new RedisStore({ client: redis, prefix: `${prefix}s3:`, timeSource: 'app', timeout: '2s' });
    const limit = concurrencyLimit({ name: 'c', max: 1, leaseTtl: '1m', store, clock });
    await limit.acquire('user:2');
    assert.equal(await store.erase(['user:2']), 1);
    assert.equal((await limit.acquire('user:2')).decision.allowed, true, 'erased');
    await redis.set(`${prefix}s3:c:{user:3}`, 'not a set');
    assert.equal((await limit.acquire('user:3')).decision.allowed, true);
    assert.equal(await redis.type(`${prefix}s3:c:{user:3}`), 'zset');
  });

  it('a lease group unbound, or a bad id sent to the store, is refused with a coded error', async () => {
    const store = new RedisStore({ client: redis, prefix: `${prefix}s4:`, timeout: '2s' });
    const group = store.bindLeases('g', 1, 1000);
    await assert.rejects(group.acquire('k', 'has space', 0), (e: unknown) =>
      isSluiceError(e, 'SLUICE_ARGUMENT'),
    );
    await assert.rejects(group.acquire('', 'id', 0), (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'));
    store.unbind('g');
    await assert.rejects(group.acquire('k', 'id', 0), (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG'));
  });
});
