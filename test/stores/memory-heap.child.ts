/**
 * Run by memory-heap.test.ts in its own process (with --expose-gc): heap growth of one rule
 * (and array buffers) after 1,000,000 distinct keys at one instant, every evicted bucket not full, so that the
 * evicted-bucket summary is allocated and both generations are full. Prints one JSON line.
 */
import { MemoryStore, createLimiter, manualClock, tokenBucket } from '../../src/index.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');
const collect = () => {
  gc();
  gc();
};

// Just over 1,000,000 keys, so many that with the warm-up key both generations end up full
// (245 generations of 4,096): the heaviest state the maps can be in.
const KEYS = 245 * 4096 - 1;
// The rule remembers its forgotten buckets: the summary is the heaviest part a rule can hold.
const store = new MemoryStore({ rememberForgotten: ['flood'] });
const limiter = createLimiter({
  name: 'flood',
  // A burst so deep that no flood key is refused: both generations fill up.
  rule: tokenBucket({ limit: 1000, period: '1h' }),
  store,
  clock: manualClock(Date.UTC(2026, 0, 1)),
});
limiter.takeSync('warm-up'); // the limiter's own first-call allocations are not the flood's
collect();
// The summary's cells live in an ArrayBuffer, outside the V8 heap proper: count both.
const used = () => {
  const memory = process.memoryUsage();
  return memory.heapUsed + memory.arrayBuffers;
};
const before = used();
for (let i = 0; i < KEYS; i++) limiter.takeSync(`203.0.${(i >>> 8) & 255}.${i & 255}:${i}`);
collect();
const after = used();
console.log(
  JSON.stringify({
    heapGrowth: after - before,
    buckets: store.bucketCount('flood'),
    summaryBytes: store.summaryBytes('flood'),
  }),
);
