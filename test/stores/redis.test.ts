import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { deleteKeys, ioredisClient, nodeRedisClient } from '../support/redis-clients.js';
import { redisConformance } from '../support/redis-conformance.js';
import {
  RedisStore,
  redisClient,
  type RedisClient,
  type RedisStoreOptions,
} from '../../src/stores/redis/index.js';
import {
  decisionScript,
  decisionScriptSha,
  singleDecisionScript,
  singleDecisionScriptSha,
} from '../../src/stores/redis/scripts.js';
import { adjustScript, adjustScriptSha } from '../../src/stores/redis/adjust-scripts.js';
import fc from 'fast-check';
import { MAX_COUNT, MAX_TOKEN_RATE } from '../../src/core/bounds.js';
import type { Rule } from '../../src/core/rules/rule.js';
import {
  MemoryStore,
  calendarQuota,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type Decision,
  type Limiter,
  type Store,
} from '../../src/index.js';
import { takeFromProcesses } from '../support/redis-processes.js';
import { bucketId } from '../../src/stores/shared/bucket-id.js';

const skip = await skipUnlessReachable('redis', redisUrl);
const prefixRoot = `sluice-test:${runId}:`;
const silent = { warn() {} };

redisConformance('redis (ioredis, app time)', skip, async () => {
  const client = await ioredisClient(redisUrl);
  return { client, quit: () => client.quit() };
});
redisConformance('redis (node-redis, app time)', skip, async () => {
  const client = await nodeRedisClient(redisUrl);
  return { client, quit: () => client.quit() };
});

describe('RedisStore on one Redis', { skip }, () => {
  let redis: Redis;
  const prefix = `${prefixRoot}s:`;
  before(async () => {
    redis = await ioredisClient(redisUrl);
  });
  after(async () => {
    await deleteKeys(redis, `${prefix}*`);
    await redis.quit();
  });
  let n = 0;
  const store = (options: Partial<RedisStoreOptions> = {}) =>
    new RedisStore({ client: redis, prefix: `${prefix}${++n}:`, timeout: '2s', ...options });

  it('the SHAs computed locally are the ones SCRIPT LOAD returns', async () => {
    assert.equal(await redis.script('LOAD', decisionScript), decisionScriptSha);
    assert.equal(await redis.script('LOAD', singleDecisionScript), singleDecisionScriptSha);
    assert.equal(await redis.script('LOAD', adjustScript), adjustScriptSha);
  });

  it('on the store`s time the now the app passes is ignored', async () => {
    const s = store();
    const limiter = createLimiter({
      timeout: '2s',
      name: 'srv',
      rule: tokenBucket({ limit: 3, period: '1h' }),
      store: s,
      clock: manualClock(Date.UTC(2000, 0, 1)),
    });
    const first = await limiter.take('k');
    assert.equal(first.remaining, 2);
    // An app clock a century away changes nothing: the script reads Redis TIME.
    const far = createLimiter({
      timeout: '2s',
      name: 'srv2',
      rule: tokenBucket({ limit: 3, period: '1h' }),
      store: s,
      clock: manualClock(Date.UTC(2100, 0, 1)),
    });
    await far.take('k');
    assert.equal((await far.take('k')).remaining, 1);
    // The bucket state holds the server's time, not 2000 or 2100.
    const [serverSeconds] = await redis.time();
    const state = await redis.get(`${s.prefix}srv:{k}`);
    const tatMs = Number(state!.split(':')[0]);
    assert.ok(Math.abs(tatMs - (Number(serverSeconds) * 1000 + 20 * 60_000)) < 60_000, `tat ${tatMs}`);
    // Quotas count the server's day: its reset lies within the next 24 hours of server time.
    const quota = createLimiter({
      timeout: '2s',
      name: 'srvq',
      rule: calendarQuota({ limit: 5 }),
      store: s,
      clock: manualClock(Date.UTC(2000, 0, 1)),
    });
    const q = await quota.take('k');
    assert.equal(q.remaining, 4);
    assert.ok(q.resetMs > 0 && q.resetMs <= 86_400_000);
    assert.equal(q.windowMs, 86_400_000);
    const [seconds] = await redis.time();
    const serverNow = Number(seconds) * 1000;
    const dayEnd = serverNow - (serverNow % 86_400_000) + 86_400_000;
    assert.ok(Math.abs(serverNow + q.resetMs - dayEnd) < 5_000);
  });

  it('every key has a TTL equal to its horizon (time to full, or to the end of its window), under a prefix per rule', async () => {
    const s = store();
    const clock = manualClock(Date.UTC(2026, 0, 15, 12));
    const bucket = createLimiter({
      timeout: '2s',
      name: 'ttl-bucket',
      rule: tokenBucket({ limit: 10, period: '10m' }),
      store: s,
    });
    const quota = createLimiter({
      timeout: '2s',
      name: 'ttl-quota',
      rule: calendarQuota({ limit: 10 }),
      store: s,
      clock,
    });
    const ds = [];
    for (let i = 0; i < 3; i++) ds.push(await bucket.take('a'));
    await bucket.take('b', { cost: 0 }); // a peek writes nothing
    await bucket.take('c', { cost: 11 }); // a refusal without penalty writes nothing
    await quota.take('a');
    const keys = (await redis.keys(`${s.prefix}*`)).sort();
    assert.deepEqual(keys, [`${s.prefix}ttl-bucket:{a}`, `${s.prefix}ttl-quota:{a}`]);
    const bucketTtl = await redis.pttl(`${s.prefix}ttl-bucket:{a}`);
    // Three tokens of one minute each: full again in 3 minutes (less the ms that passed on the
    // server's clock between the takes).
    const reset = ds[2]!.resetMs;
    assert.ok(reset > 2 * 60_000 && reset <= 3 * 60_000, `resetMs ${reset}`);
    assert.ok(bucketTtl > 0 && bucketTtl <= reset, `bucket ttl ${bucketTtl}`);
    // The store's time here (the default; this limiter's store decides on TIME,
    // so its quota day is the server's): the TTL is the time to the end of that day.
    const quotaTtl = await redis.pttl(`${s.prefix}ttl-quota:{a}`);
    assert.ok(quotaTtl > 0 && quotaTtl <= 86_400_000, `quota ttl ${quotaTtl}`);
  });

  it('reset(key) deletes one bucket; erase(keys, names) deletes a subject across rules and generations, without SCAN', async () => {
    const s = store();
    const a = createLimiter({
      timeout: '2s',
      name: 'era',
      rule: tokenBucket({ limit: 2, period: '1h' }),
      store: s,
    });
    const b = createLimiter({ timeout: '2s', name: 'erb', rule: calendarQuota({ limit: 2 }), store: s });
    const subject = ['account:v1:gen1hash', 'account:v2:gen2hash'];
    for (const key of [...subject, 'account:v2:other']) {
      await a.take(key);
      await b.take(key);
    }
    await a.reset('account:v2:other');
    assert.equal((await a.peek('account:v2:other')).remaining, 2);
    assert.equal(await s.erase(subject), 4);
    for (const key of subject) {
      assert.equal((await a.peek(key)).remaining, 2);
      assert.equal((await b.peek(key)).remaining, 2);
    }
    assert.equal((await b.peek('account:v2:other')).remaining, 1, 'other subjects keep their buckets');
    // A rule no longer bound (renamed, retired) can be named explicitly.
    await redis.set(`${s.prefix}retired:{account:v1:gen1hash}`, '1:0', 'PX', 60_000);
    assert.equal(await s.erase(subject, ['retired', 'era']), 1);
  });

  it('batching: concurrent decisions share script calls, and each caller gets its own decision', async () => {
    let calls = 0;
    const client = redisClient(redis);
    const counting: RedisClient = {
      cluster: false,
      ready: () => client.ready(),
      evalsha: (sha, keys, args) => {
        calls++;
        return client.evalsha(sha, keys, args);
      },
      eval: (script, keys, args) => client.eval(script, keys, args),
      del: (keys) => client.del(keys),
    };
    const s = store({ client: counting });
    const limiter = createLimiter({
      timeout: '2s',
      name: 'batch',
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store: s,
    });
    // 1,000 takes: 200 keys × 5 costs each; every key admits exactly its burst.
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const ds = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => limiter.take(keys[i % 200]!, { cost: 1 + (i % 2) })),
    );
    assert.ok(calls < 100, `${calls} script calls for 1000 decisions`);
    for (const [i, d] of ds.entries()) assert.equal(d.cost, 1 + (i % 2));
    for (const key of keys) assert.equal((await limiter.peek(key)).remaining <= 1, true);
    const totals = new Map<string, number>();
    for (const [i, d] of ds.entries()) {
      if (d.allowed) totals.set(keys[i % 200]!, (totals.get(keys[i % 200]!) ?? 0) + d.cost);
    }
    for (const key of keys) {
      const left = (await limiter.peek(key)).remaining;
      assert.equal(totals.get(key)! + left, 5, `${key}: taken + left = burst`);
    }
  });

  /**
   * Runs random steps through a lone take (each take alone: singleDecisionScript), two takes
   * issued together (one batch, as a run of alike takes, next to a peek of another rule) and the
   * memory store, on one manual clock, and requires the same numbers at every step.
   */
  async function sameAsMemory(
    rules: Record<string, Rule>,
    step: fc.Arbitrary<{
      rule: string;
      key: string;
      cost: number;
      limit: number | undefined;
      advanceMs: number;
    }>,
    start: number,
    numRuns: number,
  ): Promise<void> {
    const names = Object.keys(rules);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const clock = manualClock(start);
        const limiters = (target: Store) =>
          Object.fromEntries(
            names.map((name) => [
              name,
              createLimiter({ name, rule: rules[name]!, store: target, clock, timeout: '2s' }),
            ]),
          ) as Record<string, Limiter>;
        const memory = limiters(new MemoryStore());
        const lone = limiters(store({ timeSource: 'app' }));
        const batched = limiters(store({ timeSource: 'app' }));
        for (const { rule, key, cost, limit, advanceMs } of steps) {
          clock.set(clock() + advanceMs);
          const quota = rules[rule]!.kind === 'calendar-quota';
          const options = { cost, ...(quota && limit !== undefined ? { limit } : {}) };
          // Two takes of one key: one after the other alone, or issued together (one call, a run).
          const expected = [await memory[rule]!.take(key, options), await memory[rule]!.take(key, options)];
          const alone = [await lone[rule]!.take(key, options), await lone[rule]!.take(key, options)];
          // A peek of another rule first, so the call also holds a plain single entry.
          const other = names.find((name) => name !== rule)!;
          const [, ...shared] = await Promise.all([
            batched[other]!.peek('other'),
            batched[rule]!.take(key, options),
            batched[rule]!.take(key, options),
          ]);
          for (let i = 0; i < 2; i++) {
            const at = `${rule} ${key} cost ${cost} limit ${limit} at ${new Date(clock()).toISOString()} take ${i + 1}`;
            assert.deepEqual(pick(alone[i]!), pick(expected[i]!), `lone ${at}`);
            assert.deepEqual(pick(shared[i]!), pick(expected[i]!), `batched ${at}`);
          }
        }
      }),
      { numRuns },
    );
  }

  it('a lone take (its own script) and a take sharing a batch decide exactly as the memory store, also when the clock steps back', async () => {
    const rules = {
      bucket: tokenBucket({ limit: 3, period: '10s', burst: 5 }),
      debt: tokenBucket({ limit: 2, period: '1s', penalty: true }),
      quota: calendarQuota({ limit: 4 }),
      quotaDebt: calendarQuota({ limit: 3, penalty: true, timeZone: 'Europe/Berlin' }),
    };
    const step = fc.record({
      rule: fc.constantFrom(...Object.keys(rules)),
      key: fc.constantFrom('a', 'b'),
      // Mostly small steps on one rule's keys, so that buckets run empty and refusals charge.
      cost: fc.oneof(
        { arbitrary: fc.constant(1), weight: 3 },
        { arbitrary: fc.integer({ min: 0, max: 6 }), weight: 1 },
      ),
      limit: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
      // Backward steps too: a caller's clock corrected by NTP, or another node's a little behind,
      // across midnight and across days (a quota never moves back to an earlier day).
      advanceMs: fc.oneof(
        { arbitrary: fc.constant(0), weight: 3 },
        { arbitrary: fc.integer({ min: 1, max: 3_000 }), weight: 2 },
        { arbitrary: fc.integer({ min: 1, max: 30 * 3_600_000 }), weight: 1 },
        { arbitrary: fc.integer({ min: -3_000, max: -1 }), weight: 1 },
        { arbitrary: fc.integer({ min: -30 * 3_600_000, max: -1 }), weight: 1 },
      ),
    });
    await sameAsMemory(rules, step, Date.UTC(2026, 2, 28, 20), 60);
  });

  it('exact at the bounds: limits, bursts, per-call limits and costs up to MAX_COUNT and token rates up to MAX_TOKEN_RATE decide as the memory store', async () => {
    // The largest burst whose scaled tolerance (burst × period ms, doubled for a penalty's debt)
    // a rule accepts at the shortest period; Lua holds every number in a double, so each one
    // must stay an exact integer.
    const rules: Record<string, Rule> = {
      fastest: tokenBucket({ limit: MAX_TOKEN_RATE, period: '1s', burst: MAX_COUNT }),
      fastestDebt: tokenBucket({ limit: MAX_TOKEN_RATE, period: '1s', burst: MAX_COUNT, penalty: true }),
      odd: tokenBucket({ limit: MAX_TOKEN_RATE - 1, period: '4503ms', burst: MAX_COUNT - 1 }),
      slowHuge: tokenBucket({ limit: 7, period: '1h', burst: 1_000_000 }),
      quota: calendarQuota({ limit: MAX_COUNT }),
      quotaDebt: calendarQuota({ limit: MAX_COUNT - 1, penalty: true, timeZone: 'Europe/Berlin' }),
    };
    const big = fc.oneof(
      fc.constantFrom(0, 1, MAX_COUNT, MAX_COUNT - 1, MAX_COUNT / 2, MAX_COUNT / 2 + 1),
      fc.integer({ min: 0, max: MAX_COUNT }),
    );
    const step = fc.record({
      rule: fc.constantFrom(...Object.keys(rules)),
      key: fc.constantFrom('a', 'b'),
      cost: big,
      limit: fc.option(fc.oneof(fc.constant(MAX_COUNT), fc.integer({ min: 1, max: MAX_COUNT })), {
        nil: undefined,
      }),
      advanceMs: fc.oneof(
        { arbitrary: fc.constant(0), weight: 2 },
        { arbitrary: fc.integer({ min: 1, max: 5_000 }), weight: 2 },
        { arbitrary: fc.integer({ min: -5_000, max: -1 }), weight: 1 },
        { arbitrary: fc.integer({ min: 1, max: 26 * 3_600_000 }), weight: 1 },
      ),
    });
    // The limiter refuses a cost beyond what the rule can ever admit before asking the store;
    // such costs are generated too and must agree whichever layer refuses them.
    await sameAsMemory(rules, step, Date.UTC(2026, 9, 24, 23), 40);
  });

  it('bad input: a key of another type or an unreadable value is repaired (read as absent, overwritten); its batch neighbours are decided', async () => {
    const s = store();
    const limiter = createLimiter({
      timeout: '2s',
      logger: silent,
      name: 'wt',
      rule: tokenBucket({ limit: 5, period: '1h' }),
      store: s,
    });
    await redis.hset(`${s.prefix}wt:{bad}`, 'x', '1');
    await redis.set(`${s.prefix}wt:{garbage}`, 'not a state');
    const ds = await Promise.all(['a', 'bad', 'b', 'garbage', 'c', 'bad'].map((key) => limiter.take(key)));
    assert.deepEqual(
      ds.map((d) => d.remaining),
      [4, 4, 4, 4, 4, 3],
    );
    assert.equal(await redis.type(`${s.prefix}wt:{bad}`), 'string');
    assert.ok((await redis.pttl(`${s.prefix}wt:{garbage}`)) > 0, 'the repaired key has a TTL');
  });

  it('the queue is bounded: beyond maxPending a take fails at once with SLUICE_STORE_OVERLOADED (load, not a failure)', async () => {
    const s = store({ maxPending: 100 });
    const buckets = s.bind('bound', tokenBucket({ limit: 1000, period: '1h' }));
    const results = await Promise.allSettled(
      Array.from({ length: 150 }, () => buckets.take('k', 1, 0, undefined)),
    );
    const admitted = results.filter((r) => r.status === 'fulfilled' && r.value.allowed).length;
    const refused = results.filter(
      (r) => r.status === 'rejected' && isSluiceError(r.reason, 'SLUICE_STORE_OVERLOADED'),
    ).length;
    assert.equal(admitted, 100);
    assert.equal(refused, 50);
    assert.equal((await buckets.take('k', 0, 0, undefined)).remaining, 900, 'a refused call charged nothing');
  });

  it('load alone never flips failure "open": 20,000 takes in one tick on a healthy Redis get no fail-open admission, and the keys admit exactly their burst', async () => {
    // A timeout a loaded 2-core CI machine meets for 10,000 decisions (the test after this one
    // shows that the burst's own time is not counted against it).
    const s = store({ timeout: '2s' });
    // Store level: what does not fit in maxPending (10,000) is refused as load, never as a
    // failure, and the rest is decided.
    const buckets = s.bind('flood', tokenBucket({ limit: 50, period: '1h' }));
    const keys = Array.from({ length: 100 }, (_, i) => `k${i}`);
    const results = await Promise.allSettled(
      Array.from({ length: 20_000 }, (_, i) => buckets.take(keys[i % 100]!, 1, 0, undefined)),
    );
    const decided = results.filter((r) => r.status === 'fulfilled');
    const admitted = decided.filter((r) => r.value.allowed).length;
    const overloaded = results.filter(
      (r) => r.status === 'rejected' && isSluiceError(r.reason, 'SLUICE_STORE_OVERLOADED'),
    ).length;
    assert.equal(decided.length, 10_000);
    assert.equal(overloaded, 10_000);
    assert.equal(admitted, 100 * 50, 'every key admits exactly its burst');
    // Limiter level, failing open: an overloaded store is never an admission.
    const open = createLimiter({
      name: 'flood-open',
      rule: tokenBucket({ limit: 50, period: '1h' }),
      store: s,
      failure: 'open',
      logger: silent,
      timeout: '2s',
    });
    const taken = await Promise.allSettled(
      Array.from({ length: 20_000 }, (_, i) => open.take(keys[i % 100]!)),
    );
    const failOpen = taken.filter((r) => r.status === 'fulfilled' && r.value.source === 'fail-open').length;
    const byStore = taken.filter(
      (r) => r.status === 'fulfilled' && r.value.allowed && r.value.source !== 'fail-open',
    ).length;
    assert.equal(failOpen, 0);
    assert.equal(byStore, 100 * 50);
    assert.equal(open.stats().timeouts, 0);
  });

  it('the time the caller`s own synchronous burst takes is not counted against the store`s timeout', async () => {
    const s = store({ timeout: '1s' });
    const buckets = s.bind('burst', tokenBucket({ limit: 1000, period: '1h' }));
    const pending = Array.from({ length: 1000 }, (_, i) => buckets.take(`k${i % 10}`, 1, 0, undefined));
    // The caller keeps the event loop for longer than the timeout before anything can be sent
    // (a long synchronous loop of takes, a slow handler): bounded by time, not by a count.
    const until = performance.now() + 1_100;
    while (performance.now() < until) {
      // busy: nothing else can run
    }
    const results = await Promise.allSettled(pending);
    assert.equal(results.filter((r) => r.status === 'fulfilled' && r.value.allowed).length, 1000);
  });

  it('a calendar quota never moves back to an earlier day: an app clock stepped back across midnight, and two nodes a second apart, count against the stored day', async () => {
    const s = store({ timeSource: 'app' });
    const clock = manualClock(Date.UTC(2026, 4, 2, 0, 0, 1));
    const quota = createLimiter({
      name: 'daily',
      rule: calendarQuota({ limit: 5 }),
      store: s,
      clock,
      timeout: '2s',
    });
    const midnight = Date.UTC(2026, 4, 2);
    const nextMidnight = Date.UTC(2026, 4, 3);
    let admitted = 0;
    // Five alone, then the clock steps back a few seconds (NTP) into yesterday: five more, issued
    // together (one batch), and five alone again.
    for (let i = 0; i < 5; i++) if ((await quota.take('k')).allowed) admitted++;
    clock.set(midnight - 2_000);
    const together = await Promise.all(Array.from({ length: 5 }, () => quota.take('k')));
    for (let i = 0; i < 5; i++) if ((await quota.take('k')).allowed) admitted++;
    admitted += together.filter((d) => d.allowed).length;
    assert.equal(admitted, 5);
    const back = await quota.peek('k');
    assert.equal(back.remaining, 0);
    assert.equal(back.windowMs, 86_400_000, 'the stored day');
    assert.equal(back.resetMs, nextMidnight - (midnight - 2_000), 'measured to the end of the stored day');
    assert.equal(back.retryAfterMs, back.resetMs);
    // Two nodes, one a second behind the other, sharing the store across midnight.
    const ahead = manualClock(midnight + 500);
    const behind = manualClock(midnight - 500);
    const on = (c: typeof ahead, name: string) =>
      createLimiter({ name, rule: calendarQuota({ limit: 5 }), store: s, clock: c, timeout: '2s' });
    const nodeA = on(ahead, 'nodes');
    const s2 = store({ timeSource: 'app', prefix: s.prefix });
    const nodeB = createLimiter({
      name: 'nodes',
      rule: calendarQuota({ limit: 5 }),
      store: s2,
      clock: behind,
      timeout: '2s',
    });
    let both = 0;
    for (let i = 0; i < 20; i++) {
      ahead.set(ahead() + 50);
      behind.set(behind() + 50);
      const [a, b] = await Promise.all([nodeA.take('k'), nodeB.take('k')]);
      both += Number(a.allowed) + Number(b.allowed);
    }
    assert.equal(both, 5, 'one limit for both nodes');
    // A later day than the stored one starts afresh, as before.
    clock.set(nextMidnight + 1);
    assert.equal((await quota.take('k')).remaining, 4);
  });

  it('on the server clock too, a stored day later than the server`s (a failover to a Redis a second behind, across midnight) is the day that counts', async () => {
    const s = store();
    const quota = createLimiter({
      name: 'srvday',
      rule: calendarQuota({ limit: 5 }),
      store: s,
      timeout: '2s',
    });
    const [seconds] = await redis.time();
    const serverNow = Number(seconds) * 1000;
    const tomorrow = serverNow - (serverNow % 86_400_000) + 86_400_000;
    await redis.set(`${s.prefix}srvday:{k}`, `${tomorrow}:5:${tomorrow + 86_400_000}`, 'PX', 3 * 86_400_000);
    const lone = await quota.take('k');
    const together = await Promise.all([quota.take('k'), quota.take('k')]);
    for (const d of [lone, ...together]) {
      assert.equal(d.allowed, false);
      assert.equal(d.windowMs, 86_400_000);
      assert.ok(d.resetMs > 86_400_000 && d.resetMs <= 2 * 86_400_000, `resetMs ${d.resetMs}`);
    }
    assert.equal(await redis.get(`${s.prefix}srvday:{k}`), `${tomorrow}:5:${tomorrow + 86_400_000}`);
  });

  it('bad input: a cost or limit the script cannot count with is SLUICE_ARGUMENT before any I/O, never a store failure', async () => {
    const s = store();
    const bucket = s.bind('args-bucket', tokenBucket({ limit: 5, period: '1h' }));
    const quota = s.bind('args-quota', calendarQuota({ limit: 5 }));
    const bad: [typeof bucket, unknown, unknown, unknown][] = [
      [bucket, 'k', Number.NaN, undefined],
      [bucket, 'k', -1, undefined],
      [bucket, 'k', 0.5, undefined],
      [bucket, 'k', 1e21, undefined],
      [bucket, 'k', MAX_COUNT + 1, undefined],
      [bucket, 'k', Infinity, undefined],
      [bucket, 'k', '1', undefined],
      [bucket, '', 1, undefined],
      [bucket, 42, 1, undefined],
      [quota, 'k', 1, 0],
      [quota, 'k', 1, Number.NaN],
      [quota, 'k', 1, 1e21],
      [quota, 'k', 1, 2.5],
      [quota, 'k', 1, MAX_COUNT + 1],
    ];
    for (const [buckets, key, cost, limit] of bad) {
      const what = `${typeof key} key, cost ${String(cost)}, limit ${String(limit)}`;
      await assert.rejects(
        buckets.take(key as string, cost as number, Date.now(), limit as number | undefined),
        (e: unknown) =>
          isSluiceError(e, 'SLUICE_ARGUMENT') && !/1e\+21|NaN|Infinity|2\.5|0\.5/.test((e as Error).message),
        what,
      );
      await assert.rejects(
        s.takeAll(
          [{ buckets, key: key as string, cost: cost as number, limit: limit as number | undefined }],
          Date.now(),
        ),
        (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'),
        `takeAll ${what}`,
      );
    }
    assert.deepEqual(await redis.keys(`${s.prefix}*`), [], 'nothing was written');
  });

  it('an all-or-nothing take naming one bucket twice is rejected with SLUICE_ARGUMENT, and charges nothing', async () => {
    const s = store();
    const buckets = s.bind('twice', tokenBucket({ limit: 5, period: '1h' }));
    const other = s.bind('twice-other', tokenBucket({ limit: 5, period: '1h' }));
    const entry = { buckets, key: 'k', cost: 1, limit: undefined };
    await assert.rejects(
      s.takeAll(
        [entry, { buckets: other, key: 'k', cost: 1, limit: undefined }, { ...entry, cost: 2 }],
        Date.now(),
      ),
      (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'),
    );
    assert.equal((await buckets.take('k', 0, Date.now(), undefined)).remaining, 5);
    assert.equal((await other.take('k', 0, Date.now(), undefined)).remaining, 5);
    // The same key under two rules is two buckets: allowed.
    const ds = await s.takeAll([entry, { buckets: other, key: 'k', cost: 1, limit: undefined }], Date.now());
    assert.deepEqual(
      ds.map((d) => d.remaining),
      [4, 4],
    );
  });

  it('unbind(name): frees the name; the freed buckets reject with SLUICE_CONFIG; the buckets in Redis stay for the next binding', async () => {
    const s = store();
    const rule = tokenBucket({ limit: 5, period: '1h' });
    const first = s.bind('freed', rule);
    await first.take('k', 2, Date.now(), undefined);
    s.unbind('freed');
    s.unbind('never-bound');
    const config = (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG');
    await assert.rejects(first.take('k', 1, Date.now(), undefined), config);
    await assert.rejects(first.reset('k'), config);
    await assert.rejects(
      s.takeAll([{ buckets: first, key: 'k', cost: 1, limit: undefined }], Date.now()),
      config,
    );
    const again = s.bind('freed', rule);
    assert.equal((await again.take('k', 0, Date.now(), undefined)).remaining, 3, 'shared data kept');
    await assert.rejects(
      first.take('k', 1, Date.now(), undefined),
      config,
      'still freed after a new binding',
    );
  });

  it('the store`s timeout is the bound of its calls: timeoutMs reflects the option', () => {
    assert.equal(new RedisStore({ client: redis }).timeoutMs, 100);
    assert.equal(new RedisStore({ client: redis, timeout: '250ms' }).timeoutMs, 250);
    assert.equal(new RedisStore({ client: redis, timeout: '2s' }).timeoutMs, 2_000);
  });

  it('keys over 128 characters are stored as a hash and never collide with a raw key', async () => {
    const s = store();
    const limiter = createLimiter({
      timeout: '2s',
      name: 'long',
      rule: tokenBucket({ limit: 1, period: '1h' }),
      store: s,
    });
    const long = 'k'.repeat(129);
    assert.equal((await limiter.take(long)).allowed, true);
    assert.equal((await limiter.take(`${long}!`)).allowed, true);
    assert.equal((await limiter.take(long)).allowed, false);
    // The id every store uses: a padding no raw key has, then the SHA-256, 129 characters in all.
    const keys = await redis.keys(`${s.prefix}long:*`);
    assert.deepEqual(keys.sort(), [long, `${long}!`].map((k) => `${s.prefix}long:{${bucketId(k)}}`).sort());
    assert.ok(keys.every((k) => k.length === `${s.prefix}long:{}`.length + 129));
  });

  it('4 processes x 500 concurrent takes on one key with burst 100 admit exactly 100', async () => {
    const totals = await takeFromProcesses(4, {
      mode: 'single',
      target: redisUrl,
      prefix: `${prefix}proc:`,
      name: 'hot',
      count: 500,
      burst: 100,
    });
    assert.deepEqual(totals, { admitted: 100, errors: 0 });
  });

  it('SLUICE_CONFIG: options are checked once, naming the option and the value', () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{}, /client/],
      [{ client: redis, prefix: 'a{b' }, /prefix/],
      [{ client: redis, clock: 'node' }, /clock/],
      [{ client: redis, timeout: -1 }, /timeout/],
      [{ client: redis, maxPending: 0 }, /maxPending/],
      [{ client: redis, maxBatch: 1.5 }, /maxBatch/],
      [{ client: redis, hashTag: 'ip' }, /hashTag/],
      [{ client: redis, prefx: 'x' }, /prefx/],
      [{ client: { get() {} } }, /client/],
    ];
    for (const [options, pattern] of bad) {
      assert.throws(
        () => new RedisStore(options as unknown as RedisStoreOptions),
        (e: unknown) =>
          (isSluiceError(e, 'SLUICE_CONFIG') || isSluiceError(e, 'SLUICE_DURATION')) &&
          pattern.test((e as Error).message),
        JSON.stringify(Object.keys(options)),
      );
    }
    const s = store();
    createLimiter({ timeout: '2s', name: 'dup', rule: tokenBucket({ limit: 1, period: '1h' }), store: s });
    assert.throws(
      () =>
        createLimiter({
          timeout: '2s',
          name: 'dup',
          rule: tokenBucket({ limit: 1, period: '1h' }),
          store: s,
        }),
      (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /already bound/.test((e as Error).message),
    );
  });
});

/** The numbers of a decision (its `source` and name aside). */
function pick(d: Decision) {
  return {
    allowed: d.allowed,
    remaining: d.remaining,
    retryAfterMs: d.retryAfterMs,
    resetMs: d.resetMs,
    limit: d.limit,
    cost: d.cost,
    windowMs: d.windowMs,
  };
}
