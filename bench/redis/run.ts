/**
 * Redis decisions per second and latency, sluice against rate-limiter-flexible in the same run,
 * next to the ceilings measured in the same run.
 *
 *   npm run bench:redis            (Redis at SLUICE_REDIS_URL, default redis://127.0.0.1:6379)
 *
 * Contenders (each behind `Contender`: one decision per call, the real clock, ioredis clients
 * with the same options, loopback only):
 * - sluice: createLimiter({ store: new RedisStore({ client }) }).take(key) — the store's time, the
 *   decisions that arrive together batched into one script call;
 * - sluice_fixed, sluice_sliding: the same with fixedWindow and slidingWindow (1 h windows);
 * - rlf:    rate-limiter-flexible RateLimiterRedis (ioredis), await consume(key): a fixed window
 *   (INCR and PEXPIRE in a MULTI), the closest peer of sluice's fixed window.
 * Cells: 1, 16 and 256 calls in flight (closed loop: each "user" awaits its decision, then asks
 * again) × 1 hot key and 100,000 keys (uniformly random, generated before timing). Each cell runs
 * ROUNDS rounds in which the contenders take turns (a warm-up, then CELL_MS of measurement each,
 * in an order that rotates per round); a figure is the median over rounds of the round's rate,
 * p50 or p99 (from every call's latency). The PING baseline takes its turns in the 1-in-flight
 * hot-key cell, next to the decisions it is compared with. Limits are set so that no
 * decision refuses: the admitted path (a read and a write) is what every request pays.
 * Baselines: a bare PING round trip at 1 in flight (p50), and `redis-benchmark` running EVALSHA of
 * a trivial script, pipelined (the server's ceiling for one script call per decision).
 * A refused flood, last: one key of a rule of 1 per hour, exhausted first, taken by 256 in flight
 * by two limiters on the same bucket, with and without `refusalCache`, alternating in the same
 * rounds (`refused_flood_cached`, `refused_flood_uncached` and their ratio).
 * Concurrency leases, last: `lease_256` (a lease acquired and released per operation, two store
 * calls) against `take_pair_256` (two plain takes in a row per operation, two store calls), 256
 * in flight on the same 100,000 keys, alternating in the same rounds; their ratio is
 * `ratio_lease_vs_take_pair` (the target: at least 0.8).
 * Last line: one JSON object.
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import {
  MAX_COUNT,
  concurrencyLimit,
  createLimiter,
  fixedWindow,
  slidingWindow,
  tokenBucket,
  type Rule,
} from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';

const url = process.env.SLUICE_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CELL_MS = Number(process.env.CELL_MS ?? 1000);
/** Rounds per cell; contenders alternate within each round, in a rotating order. */
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const WARMUP_MS = 200;
const KEYS = 100_000;
const IN_FLIGHT = [1, 16, 256] as const;
const run = `bench-${process.pid.toString(36)}-${Date.now().toString(36)}`;

interface Contender {
  name: string;
  /** One decision; resolves when it is known. */
  decide(key: string): Promise<unknown>;
}

interface Cell {
  opsPerSec: number;
  p50: number;
  p99: number;
}

function connect(): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, enableOfflineQueue: false });
  return client.connect().then(() => client);
}

/** Closed loop: `inFlight` users, each awaiting its decision before asking again. */
async function measure(
  decide: (key: string) => Promise<unknown>,
  inFlight: number,
  keys: string[],
): Promise<Cell> {
  const samples = new Float64Array(4_000_000);
  // Decisions counted apart from the latencies sampled: a locally answered flood can pass the
  // sample buffer's size within one cell.
  let count = 0;
  let sampled = 0;
  let errors = 0;
  let measuring = false;
  let stop = false;
  let seed = 0x9e3779b9 ^ inFlight;
  const user = async () => {
    let calls = 0;
    while (!stop) {
      // A decision answered locally settles without I/O: a user looping on those alone would
      // never let the timer that ends the cell run. Every 1024th call waits for the event loop.
      if ((++calls & 1023) === 0) await yieldToEventLoop();
      // xorshift: a uniform key without allocating
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      const key = keys[(seed >>> 0) % keys.length]!;
      const started = performance.now();
      try {
        await decide(key);
      } catch {
        errors++;
      }
      if (measuring) {
        count++;
        if (sampled < samples.length) samples[sampled++] = performance.now() - started;
      }
    }
  };
  const users = Array.from({ length: inFlight }, user);
  await sleep(WARMUP_MS);
  measuring = true;
  const t0 = performance.now();
  await sleep(CELL_MS);
  measuring = false;
  const elapsed = performance.now() - t0;
  const done = count;
  const kept = sampled;
  stop = true;
  await Promise.all(users);
  const sorted = samples.subarray(0, kept).sort();
  if (errors > 0) console.log(`  (${errors} calls failed)`);
  return {
    opsPerSec: Math.round((done / elapsed) * 1000),
    p50: round(sorted[Math.floor(kept * 0.5)] ?? NaN),
    p99: round(sorted[Math.floor(kept * 0.99)] ?? NaN),
  };
}

/**
 * ROUNDS rounds of 256 in flight on `keys`, the contenders taking turns in a rotating order;
 * each contender's cells, by name.
 */
async function alternate(contenders: readonly Contender[], keys: string[]): Promise<Map<string, Cell[]>> {
  const rounds = new Map<string, Cell[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < contenders.length; i++) {
      const contender = contenders[(i + round) % contenders.length]!;
      const cell = await measure(contender.decide, 256, keys);
      rounds.set(contender.name, [...(rounds.get(contender.name) ?? []), cell]);
    }
  }
  return rounds;
}

/** Per figure, the median over rounds. */
function medianCell(cells: Cell[]): Cell {
  const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
  return {
    opsPerSec: median(cells.map((c) => c.opsPerSec)),
    p50: median(cells.map((c) => c.p50)),
    p99: median(cells.map((c) => c.p99)),
  };
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

async function deleteRunKeys(client: Redis): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${run}*`, 'COUNT', 5000);
    cursor = next;
    if (keys.length > 0) await client.unlink(...keys);
  } while (cursor !== '0');
}

/** redis-benchmark: EVALSHA of `return 1`, pipelined, as the server's ceiling. */
function redisBenchmarkCeiling(admin: Redis, sha: string): number | null {
  const { hostname, port } = new URL(url);
  const result = spawnSync(
    'redis-benchmark',
    ['-h', hostname, '-p', port || '6379', '-n', '400000', '-c', '50', '-P', '16', '-q', 'EVALSHA', sha, '0'],
    { encoding: 'utf8', timeout: 60_000 }, // child_process wants ms, not a sluice duration
  );
  void admin;
  const match = /([\d.]+) requests per second/.exec(result.stdout ?? '');
  return match ? Math.round(Number(match[1])) : null;
}

/**
 * A flood on one refused key, 256 in flight, with and without the refusal cache. Both limiters
 * share one bucket (one store prefix, one name), exhausted before timing: every decision of the
 * flood is a refusal, which the cached limiter answers locally until the retry instant (an hour).
 */
async function refusedFlood(): Promise<{ cached: Cell; uncached: Cell }> {
  const rule = tokenBucket({ limit: 1, period: '1h' });
  const prefix = `${run}:flood:`;
  const clients = [await connect(), await connect()];
  const make = (client: Redis, refusalCache: boolean) =>
    createLimiter({
      name: 'flood',
      rule,
      store: new RedisStore({ client, prefix, timeout: '1s' }),
      timeout: '1s',
      refusalCache,
    });
  const cachedLimiter = make(clients[0]!, true);
  const uncachedLimiter = make(clients[1]!, false);
  const keys = ['refused'];
  await uncachedLimiter.take('refused');
  if ((await uncachedLimiter.take('refused')).allowed) throw new Error('the flood key is not exhausted');
  const contenders: Contender[] = [
    { name: 'cached', decide: (key) => cachedLimiter.take(key) },
    { name: 'uncached', decide: (key) => uncachedLimiter.take(key) },
  ];
  const rounds = await alternate(contenders, keys);
  const cached = medianCell(rounds.get('cached')!);
  const uncached = medianCell(rounds.get('uncached')!);
  for (const [name, cell] of [
    ['cached', cached],
    ['uncached', uncached],
  ] as const) {
    console.log(
      `refused flood ${name.padEnd(8)} 256 in flight, 1 key:  ` +
        `${String(cell.opsPerSec).padStart(7)} decisions/s  p50 ${cell.p50} ms  p99 ${cell.p99} ms`,
    );
  }
  for (const client of clients) client.disconnect();
  return { cached, uncached };
}

/** A token bucket that never refuses: 1e9 tokens an hour (see main). */
const neverRefusing = () => tokenBucket({ limit: 1_000_000, period: '3600ms', burst: 1e9 });

/**
 * Lease pairs against take pairs, 256 in flight on `keys`, alternating in the same rounds, each
 * on a client of its own. A lease operation acquires and releases (a max no key reaches: the
 * admitted path); a take pair takes twice from a bucket that never refuses.
 */
async function leasePairs(keys: string[]): Promise<{ lease: Cell; takePair: Cell }> {
  const leaseClient = await connect();
  const takeClient = await connect();
  const leases = concurrencyLimit({
    name: 'bench-leases',
    max: 1000,
    leaseTtl: '1m',
    store: new RedisStore({ client: leaseClient, prefix: `${run}:l:`, timeout: '1s' }),
    timeout: '1s',
  });
  const takes = createLimiter({
    name: 'bench-pairs',
    rule: neverRefusing(),
    store: new RedisStore({ client: takeClient, prefix: `${run}:p:`, timeout: '1s' }),
    timeout: '1s',
  });
  const contenders: Contender[] = [
    {
      name: 'lease',
      decide: async (key) => {
        const { lease } = await leases.acquire(key);
        if (lease === undefined) throw new Error('a lease was refused');
        await leases.release(lease);
      },
    },
    {
      name: 'take_pair',
      decide: async (key) => {
        await takes.take(key);
        await takes.take(key);
      },
    },
  ];
  const rounds = await alternate(contenders, keys);
  const lease = medianCell(rounds.get('lease')!);
  const takePair = medianCell(rounds.get('take_pair')!);
  for (const [name, cell] of [
    ['lease', lease],
    ['take_pair', takePair],
  ] as const) {
    console.log(
      `${name.padEnd(14)} 256 in flight, many keys: ` +
        `${String(cell.opsPerSec).padStart(7)} pairs/s      p50 ${cell.p50} ms  p99 ${cell.p99} ms`,
    );
  }
  leaseClient.disconnect();
  takeClient.disconnect();
  return { lease, takePair };
}

async function main(): Promise<void> {
  const admin = await connect();
  const keysMany = Array.from({ length: KEYS }, (_, i) => `user-${i}`);
  const keysHot = ['hot'];
  const results: Record<string, Cell> = {};

  // Baseline: a bare PING round trip, one in flight.
  const pingClient = await connect();
  const rlfClient = await connect();
  // 1e9 tokens per hour, written as the largest token rate a rule takes (10^6 per 3.6 s) with a
  // burst of 1e9: one token is 3.6 µs, so keys live (TTL = time to full) and nothing refuses.
  // A 1 s timeout: on a loaded machine a stall must show up in p99, not end the run.
  // Each contender has a client of its own, as rlf has.
  const sluiceClients: Redis[] = [];
  const sluice = async (rule: Rule) => {
    const client = await connect();
    sluiceClients.push(client);
    const store = new RedisStore({ client, prefix: `${run}:s${sluiceClients.length}:`, timeout: '1s' });
    return createLimiter({ name: 'bench', rule, store, timeout: '1s' });
  };
  const limiter = await sluice(neverRefusing());
  // Windows that never fill: the admitted path, as for the bucket.
  const fixed = await sluice(fixedWindow({ limit: MAX_COUNT, window: '1h' }));
  const sliding = await sluice(slidingWindow({ limit: MAX_COUNT, window: '1h' }));
  const rlf = new RateLimiterRedis({
    storeClient: rlfClient,
    points: 1e9,
    duration: 3600,
    keyPrefix: `${run}:r`,
  });
  const contenders: Contender[] = [
    { name: 'sluice', decide: (key) => limiter.take(key) },
    { name: 'sluice_fixed', decide: (key) => fixed.take(key) },
    { name: 'sluice_sliding', decide: (key) => sliding.take(key) },
    { name: 'rlf', decide: (key) => rlf.consume(key) },
  ];
  const pingContender: Contender = { name: 'ping', decide: () => pingClient.ping() };

  let ping: Cell | undefined;
  for (const inFlight of IN_FLIGHT) {
    for (const [shape, keys] of [
      ['hot', keysHot],
      ['many', keysMany],
    ] as const) {
      // The bare PING is measured next to the 1-in-flight hot-key decisions it is compared with.
      const here = inFlight === 1 && shape === 'hot' ? [...contenders, pingContender] : contenders;
      const rounds = new Map<string, Cell[]>();
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < here.length; i++) {
          // A machine's speed drifts: alternating short rounds in a rotating order gives every
          // contender the same conditions, and the median discards a disturbed round.
          const contender = here[(i + round) % here.length]!;
          const cell = await measure(contender.decide, inFlight, keys);
          const list = rounds.get(contender.name) ?? [];
          list.push(cell);
          rounds.set(contender.name, list);
        }
      }
      for (const [name, cells] of rounds) {
        const cell = medianCell(cells);
        if (name === 'ping') {
          ping = cell;
          console.log(
            `ping      1 in flight:             ${String(cell.opsPerSec).padStart(7)} round trips/s  p50 ${cell.p50} ms`,
          );
          continue;
        }
        results[`${name}_${inFlight}_${shape}`] = cell;
        console.log(
          `${name.padEnd(14)} ${String(inFlight).padStart(3)} in flight, ${shape.padEnd(4)} keys: ` +
            `${String(cell.opsPerSec).padStart(7)} decisions/s  p50 ${cell.p50} ms  p99 ${cell.p99} ms`,
        );
      }
    }
  }
  pingClient.disconnect();
  if (ping === undefined) throw new Error('unreachable: ping is measured in the first cell');

  const flood = await refusedFlood();
  const pairs = await leasePairs(keysMany);

  const sha = String(await admin.script('LOAD', 'return 1'));
  const ceiling = redisBenchmarkCeiling(admin, sha);
  console.log(`redis-benchmark EVALSHA 'return 1' -P 16 -c 50: ${ceiling ?? 'n/a'} calls/s`);

  await deleteRunKeys(admin);
  for (const client of sluiceClients) client.disconnect();
  rlfClient.disconnect();
  admin.disconnect();

  const json: Record<string, number | string | null> = { suite: 'redis' };
  json.sluice_1_p50_ms = results.sluice_1_hot!.p50;
  json.ping_p50_ms = ping.p50;
  json.sluice_256_hot = results.sluice_256_hot!.opsPerSec;
  json.rlf_256_hot = results.rlf_256_hot!.opsPerSec;
  json.sluice_256_hot_p99_ms = results.sluice_256_hot!.p99;
  json.rlf_256_hot_p99_ms = results.rlf_256_hot!.p99;
  json.sluice_256_many = results.sluice_256_many!.opsPerSec;
  json.rlf_256_many = results.rlf_256_many!.opsPerSec;
  json.sluice_256_many_p99_ms = results.sluice_256_many!.p99;
  json.rlf_256_many_p99_ms = results.rlf_256_many!.p99;
  for (const [name, cell] of Object.entries(results)) {
    if (!(name in json)) json[name] = cell.opsPerSec;
    json[`${name}_p50_ms`] = cell.p50;
    json[`${name}_p99_ms`] ??= cell.p99;
  }
  json.redis_benchmark_evalsha_pipelined = ceiling;
  json.ratio_256_hot = round(results.sluice_256_hot!.opsPerSec / results.rlf_256_hot!.opsPerSec);
  json.ratio_256_many = round(results.sluice_256_many!.opsPerSec / results.rlf_256_many!.opsPerSec);
  json.ratio_fixed_256_many = round(
    results.sluice_fixed_256_many!.opsPerSec / results.rlf_256_many!.opsPerSec,
  );
  json.ratio_sliding_256_many = round(
    results.sluice_sliding_256_many!.opsPerSec / results.rlf_256_many!.opsPerSec,
  );
  json.ratio_1_p50_vs_ping = round(results.sluice_1_hot!.p50 / ping.p50);
  json.refused_flood_cached = flood.cached.opsPerSec;
  json.refused_flood_uncached = flood.uncached.opsPerSec;
  json.refused_flood_cached_p99_ms = flood.cached.p99;
  json.refused_flood_uncached_p99_ms = flood.uncached.p99;
  json.ratio_refused_flood_cached = round(flood.cached.opsPerSec / flood.uncached.opsPerSec);
  json.lease_256 = pairs.lease.opsPerSec;
  json.take_pair_256 = pairs.takePair.opsPerSec;
  json.lease_256_p99_ms = pairs.lease.p99;
  json.take_pair_256_p99_ms = pairs.takePair.p99;
  json.ratio_lease_vs_take_pair = round(pairs.lease.opsPerSec / pairs.takePair.opsPerSec);
  console.log(JSON.stringify(json));
}

await main();
