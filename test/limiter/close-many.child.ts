/**
 * Run by close.test.ts in a child process with --expose-gc: creates, uses once and closes
 * `count` limiters on one MemoryStore, and prints the heap growth across them (after full
 * collections) and the buckets left, as JSON.
 */
import { MemoryStore, createLimiter, manualClock, tokenBucket } from '../../src/index.js';

const count = Number(process.argv[2] ?? '100000');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

const store = new MemoryStore();
const clock = manualClock(0);
const rule = tokenBucket({ limit: 5, period: '1m' });

function cycle(from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const limiter = createLimiter({ name: `tenant-${i}`, rule, store, clock });
    limiter.takeSync('k');
    limiter.close();
  }
}

function heapAfterCollection(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

// Warm up first, so that compiled code and one-time allocations are in the baseline.
cycle(0, 1_000);
const before = heapAfterCollection();
cycle(1_000, 1_000 + count);
const after = heapAfterCollection();
let buckets = 0;
for (let i = 0; i < 1_000 + count; i++) buckets += store.bucketCount(`tenant-${i}`);
process.stdout.write(JSON.stringify({ growth: after - before, buckets }));
