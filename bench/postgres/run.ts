/**
 * PostgreSQL store benchmark: decisions per second of sluice's PostgresStore against
 * rate-limiter-flexible's RateLimiterPostgres, measured in the same run, on loopback.
 *
 * Method: `inFlight` workers each await one decision after another for a fixed time; the figure
 * is completed decisions per second (all admitted: limits are set far above the load, so both
 * contenders write on every decision). Scenarios: 1 in flight on many keys, 16 in flight on many
 * keys (uniform over 100,000), 16 in flight on one hot key. Each contender gets its own pg Pool
 * of 20 connections and its own fresh schema or table, dropped afterwards. sluice runs a token
 * bucket with its defaults (logged tables, coalescing on) and, separately, with
 * `unloggedTokenBuckets`; and a fixed and a sliding window (one row per key in window_counters,
 * written on every decision as the token bucket's). Each
 * scenario runs BENCH_ROUNDS rounds (3) in which the contenders take turns, BENCH_SECONDS (1.5)
 * each, in an order that rotates per round; a figure is the median over rounds.
 *
 * Usage: npm run bench:postgres   (SLUICE_POSTGRES_URL, BENCH_SECONDS, BENCH_ROUNDS to override)
 */
import pg from 'pg';
import { RateLimiterPostgres } from 'rate-limiter-flexible';
import {
  MAX_COUNT,
  MAX_TOKEN_RATE,
  createLimiter,
  fixedWindow,
  slidingWindow,
  tokenBucket,
  type Rule,
} from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';

const url = process.env.SLUICE_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const seconds = Number(process.env.BENCH_SECONDS ?? 1.5);
/** Rounds per scenario; the figure is the median over rounds. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
const KEYS = 100_000;

type Decide = (key: string) => Promise<unknown>;

interface Contender {
  readonly name: string;
  setup(): Promise<Decide>;
  teardown(): Promise<void>;
}

// Never refuses: 10^9 per second written within MAX_TOKEN_RATE (10^6 per ms).
const tokenRule = () => tokenBucket({ limit: MAX_TOKEN_RATE, period: '1ms' });

function sluice(name: string, unlogged: boolean, rule: () => Rule = tokenRule): Contender {
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  pool.on('error', () => {});
  const schema = `sluice_bench_${name.replace(/\W/g, '_')}_${run}`;
  return {
    name,
    async setup() {
      const inFlight =
        process.env.BENCH_IN_FLIGHT === undefined ? undefined : Number(process.env.BENCH_IN_FLIGHT);
      const store = new PostgresStore({
        client: pool,
        schema,
        timeout: '10s',
        ...(inFlight === undefined ? {} : { batch: { inFlight } }),
      });
      await store.migrate({ unloggedTokenBuckets: unlogged });
      const limiter = createLimiter({
        name: 'bench',
        rule: rule(),
        store,
        timeout: '10s',
      });
      return (key) => limiter.take(key);
    },
    async teardown() {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    },
  };
}

function rlf(): Contender {
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  pool.on('error', () => {});
  const tableName = `rlf_bench_${run}`;
  return {
    name: 'rlf',
    async setup() {
      const limiter = await new Promise<RateLimiterPostgres>((resolve, reject) => {
        const l: RateLimiterPostgres = new RateLimiterPostgres(
          { storeClient: pool, tableName, points: 1_000_000_000, duration: 1, clearExpiredByTimeout: false },
          (error?: unknown) => (error ? reject(error) : resolve(l)),
        );
      });
      return (key) => limiter.consume(key, 1);
    },
    async teardown() {
      await pool.query(`DROP TABLE IF EXISTS "${tableName}"`);
      await pool.end();
    },
  };
}

async function measure(
  decide: Decide,
  inFlight: number,
  hot: boolean,
): Promise<{ rate: number; p99: number }> {
  const latencies: number[] = [];
  let done = 0;
  const end = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      // Uniform over KEYS distinct keys. (An LCG in doubles lost precision and cycled through
      // about 3,400 keys only.)
      const key = hot ? 'hot' : `k${(Math.random() * KEYS) | 0}`;
      const start = performance.now();
      await decide(key);
      latencies.push(performance.now() - start);
      done++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    rate: Math.round(done / elapsed),
    p99: Number((latencies[Math.floor(latencies.length * 0.99)] ?? 0).toFixed(2)),
  };
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[values.length >> 1]!;
}

const scenarios = [
  { id: '1', inFlight: 1, hot: false },
  { id: '16_many', inFlight: 16, hot: false },
  { id: '16_hot', inFlight: 16, hot: true },
] as const;

const results: Record<string, number> = {};
const contenders = [
  rlf(),
  sluice('sluice', false),
  sluice('sluice_unlogged', true),
  // Never refuse either: 10^12 per second.
  sluice('sluice_fixed', false, () => fixedWindow({ limit: MAX_COUNT, window: '1s' })),
  sluice('sluice_sliding', false, () => slidingWindow({ limit: MAX_COUNT, window: '1s' })),
];
const deciders: Decide[] = [];
try {
  for (const contender of contenders) {
    const decide = await contender.setup();
    await measure(decide, 16, false); // warm-up: connections, prepared statements
    deciders.push(decide);
  }
  for (const s of scenarios) {
    const rates = new Map<string, number[]>();
    const p99s = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < contenders.length; i++) {
        // Contenders take turns in a rotating order: the database and the machine drift (WAL,
        // checkpoints, autovacuum, other tenants), and each contender should see the same drift.
        const k = (i + round) % contenders.length;
        const { rate, p99 } = await measure(deciders[k]!, s.inFlight, s.hot);
        const name = contenders[k]!.name;
        rates.set(name, [...(rates.get(name) ?? []), rate]);
        p99s.set(name, [...(p99s.get(name) ?? []), p99]);
      }
    }
    for (const contender of contenders) {
      const rate = median(rates.get(contender.name)!);
      const p99 = median(p99s.get(contender.name)!);
      results[`${contender.name}_${s.id}`] = rate;
      console.log(
        `${contender.name.padEnd(16)} ${s.id.padEnd(8)} ${String(rate).padStart(7)} decisions/s  p99 ${p99} ms`,
      );
    }
  }
} finally {
  for (const contender of contenders) await contender.teardown();
}
const ratio = (a: string, b: string) => Number(((results[a] ?? 0) / (results[b] ?? 1)).toFixed(2));
console.log(
  `ratios: 16_many ${ratio('sluice_16_many', 'rlf_16_many')}x (goal 1.5x), 16_hot ${ratio('sluice_16_hot', 'rlf_16_hot')}x (goal 3x); unlogged: ${ratio('sluice_unlogged_16_many', 'rlf_16_many')}x / ${ratio('sluice_unlogged_16_hot', 'rlf_16_hot')}x`,
);
console.log(
  JSON.stringify({
    suite: 'postgres',
    sluice_16_many: results.sluice_16_many,
    rlf_16_many: results.rlf_16_many,
    sluice_16_hot: results.sluice_16_hot,
    rlf_16_hot: results.rlf_16_hot,
    sluice_1: results.sluice_1,
    rlf_1: results.rlf_1,
    sluice_unlogged_16_many: results.sluice_unlogged_16_many,
    sluice_unlogged_16_hot: results.sluice_unlogged_16_hot,
    sluice_unlogged_1: results.sluice_unlogged_1,
    sluice_fixed_16_many: results.sluice_fixed_16_many,
    sluice_fixed_16_hot: results.sluice_fixed_16_hot,
    sluice_sliding_16_many: results.sluice_sliding_16_many,
    sluice_sliding_16_hot: results.sluice_sliding_16_hot,
  }),
);
