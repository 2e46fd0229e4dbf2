/**
 * Memory-store decisions per second and heap growth, sluice against its peers in the same run.
 *
 *   npm run bench:memory
 *
 * Contenders (each behind `Contender`, one decision per call, the real clock):
 * - sluice_sync:  createLimiter(...).takeSync(key)              (MemoryStore)
 * - sluice_async: await createLimiter(...).take(key)
 * - gcra:         a hand-written GCRA in a Map reading Date.now() per decision (the practical floor)
 * - map:          a bare Map counter increment (the physical limit)
 * - rlf:          rate-limiter-flexible RateLimiterMemory, await consume(key) (a fixed window)
 * - sluice_fixed:   createLimiter(...).takeSync(key) with fixedWindow (MemoryStore), rlf's algorithm
 * - sluice_sliding: the same with slidingWindow (two counts per key)
 * Each for 1 hot key and for 1,000,000 uniformly random keys (generated before timing). Limits are
 * set so that no decision refuses: the admitted path is what every request pays.
 * Then heap growth (after gc) once 1,000,000 distinct keys went through one rule.
 * Last line: one JSON object (ops/s and bytes).
 */
import { Bench } from 'tinybench';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import {
  MAX_TOKEN_RATE,
  MemoryStore,
  createLimiter,
  fixedWindow,
  slidingWindow,
  tokenBucket,
  type Rule,
} from '../../src/index.js';

const BATCH = 10_000;
const KEYS = 1_000_000;
const LIMIT = 1_000_000_000;

interface Contender {
  name: string;
  /** Makes a fresh decision function. */
  make(): ((key: string) => unknown) | ((key: string) => Promise<unknown>);
  async: boolean;
}

// LIMIT per second, burst LIMIT, written within the largest rate a token bucket takes
// (MAX_TOKEN_RATE, 10^6 per period): 10^6 per millisecond is the same 10^9 per second.
function sluiceRule() {
  return tokenBucket({ limit: MAX_TOKEN_RATE, period: '1ms', burst: LIMIT });
}

/** sluice deciding synchronously on a fresh MemoryStore, one rule from `rule()`. */
function syncContender(name: string, rule: () => Rule): Contender {
  return {
    name,
    async: false,
    make() {
      const limiter = createLimiter({ name: 'bench', rule: rule(), store: new MemoryStore() });
      return (key) => limiter.takeSync(key);
    },
  };
}

const contenders: Contender[] = [
  syncContender('sluice_sync', sluiceRule),
  {
    name: 'sluice_async',
    async: true,
    make() {
      const limiter = createLimiter({ name: 'bench', rule: sluiceRule(), store: new MemoryStore() });
      return (key) => limiter.take(key);
    },
  },
  {
    name: 'gcra',
    async: false,
    make() {
      const interval = 1000 / LIMIT;
      const tolerance = interval * LIMIT;
      const tats = new Map<string, number>();
      return (key) => {
        const now = Date.now();
        const tat = tats.get(key);
        const next = (tat === undefined || tat < now ? now : tat) + interval;
        if (next - now > tolerance) return false;
        tats.set(key, next);
        return true;
      };
    },
  },
  {
    name: 'map',
    async: false,
    make() {
      const counts = new Map<string, number>();
      return (key) => {
        counts.set(key, (counts.get(key) ?? 0) + 1);
        return true;
      };
    },
  },
  {
    name: 'rlf',
    async: true,
    make() {
      const limiter = new RateLimiterMemory({ points: LIMIT, duration: 1 });
      return (key) => limiter.consume(key);
    },
  },
  // Appended (not inserted) so that the heap measurement below keeps its indexes. The same
  // count per second as rlf's `{ points: LIMIT, duration: 1 }`, so neither ever refuses.
  syncContender('sluice_fixed', () => fixedWindow({ limit: LIMIT, window: '1s' })),
  syncContender('sluice_sliding', () => slidingWindow({ limit: LIMIT, window: '1s' })),
];

function randomKeys(n: number): string[] {
  const keys: string[] = new Array(n);
  for (let i = 0; i < n; i++) {
    keys[i] =
      `${(Math.random() * 256) | 0}.${(Math.random() * 256) | 0}.${(Math.random() * 256) | 0}.${(Math.random() * 256) | 0}:${i}`;
  }
  return keys;
}

const ROUNDS = 7;

/**
 * Decisions per second per contender and pattern: the median over ROUNDS rounds, each running
 * every contender once, fresh, in a rotated order, so that JIT warm-up, garbage left by the
 * previous contender and machine noise fall on everyone alike.
 */
async function throughput(): Promise<Record<string, number>> {
  const keys = randomKeys(KEYS);
  const picks = new Uint32Array(1 << 20);
  for (let i = 0; i < picks.length; i++) picks[i] = (Math.random() * KEYS) | 0;
  const samples: Record<string, number[]> = {};
  for (const pattern of ['hot', 'random'] as const) {
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < contenders.length; i++) {
        const contender = contenders[(i + round) % contenders.length]!;
        const decide = contender.make();
        let cursor = 0;
        const nextKey =
          pattern === 'hot'
            ? () => 'hot-key'
            : () => {
                cursor = (cursor + 1) & (picks.length - 1);
                return keys[picks[cursor]!]!;
              };
        const fn = contender.async
          ? async () => {
              for (let j = 0; j < BATCH; j++) await decide(nextKey());
            }
          : () => {
              for (let j = 0; j < BATCH; j++) decide(nextKey());
            };
        gc();
        const bench = new Bench({ time: 400, warmupTime: 100 });
        bench.add(contender.name, fn);
        await bench.run();
        const result = bench.tasks[0]!.result as { latency?: { p50: number } } | undefined;
        const p50 = result?.latency?.p50;
        (samples[`${contender.name}_${pattern}`] ??= []).push(p50 === undefined ? 0 : (BATCH / p50) * 1000);
      }
    }
  }
  const out: Record<string, number> = {};
  for (const [name, values] of Object.entries(samples)) out[name] = Math.round(median(values));
  return out;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) throw new Error('run with --expose-gc');
  collect();
  collect();
}

async function heapGrowth(make: () => (key: string) => unknown): Promise<number> {
  gc();
  const before = process.memoryUsage().heapUsed;
  const decide = make();
  for (let i = 0; i < KEYS; i++) {
    const result = decide(`k${i}`);
    if (result instanceof Promise) await result;
  }
  gc();
  const after = process.memoryUsage().heapUsed;
  // Keep the limiter (and its buckets) alive until after the measurement.
  decide('keepalive');
  return Math.max(0, after - before);
}

const results = await throughput();
const sluiceHeap = await heapGrowth(contenders[0]!.make);
const rlfHeap = await heapGrowth(contenders[4]!.make);

const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 100) / 100);
console.log(
  `decisions per second (median over ${ROUNDS} rotated rounds of the median batch of 10,000; real clock; no refusals)`,
);
console.table(
  contenders.map((c) => ({
    contender: c.name,
    hot: results[`${c.name}_hot`],
    random_1M: results[`${c.name}_random`],
  })),
);
console.log(
  `heap growth after ${KEYS.toLocaleString()} distinct keys: sluice ${sluiceHeap} B, rate-limiter-flexible ${rlfHeap} B`,
);
console.log(
  `ratios: sluice_sync/rlf hot ${ratio(results.sluice_sync_hot!, results.rlf_hot!)}x, random ${ratio(results.sluice_sync_random!, results.rlf_random!)}x; ` +
    `sluice_sync/gcra hot ${ratio(results.sluice_sync_hot!, results.gcra_hot!)}x, random ${ratio(results.sluice_sync_random!, results.gcra_random!)}x; ` +
    `sluice_fixed/rlf random ${ratio(results.sluice_fixed_random!, results.rlf_random!)}x, sluice_sliding/rlf random ${ratio(results.sluice_sliding_random!, results.rlf_random!)}x`,
);
console.log(
  JSON.stringify({
    suite: 'memory',
    sluice_sync_hot: results.sluice_sync_hot,
    sluice_sync_random: results.sluice_sync_random,
    sluice_async_hot: results.sluice_async_hot,
    sluice_async_random: results.sluice_async_random,
    gcra_hot: results.gcra_hot,
    gcra_random: results.gcra_random,
    rlf_hot: results.rlf_hot,
    rlf_random: results.rlf_random,
    map_hot: results.map_hot,
    map_random: results.map_random,
    sluice_fixed_hot: results.sluice_fixed_hot,
    sluice_fixed_random: results.sluice_fixed_random,
    sluice_sliding_hot: results.sluice_sliding_hot,
    sluice_sliding_random: results.sluice_sliding_random,
    sluice_heap_1m_bytes: sluiceHeap,
    rlf_heap_1m_bytes: rlfHeap,
  }),
);
process.exit(0);
