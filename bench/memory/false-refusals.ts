/**
 * What the evicted-bucket summary costs honest keys: a flood of distinct keys, each taking one
 * token, arrives at a steady rate under a manual clock; every so often a fresh probe key (never
 * seen) is peeked. Reports the fraction of probes that do not start full, and how many tokens
 * they miss on average and at worst.
 *
 *   node --import tsx bench/memory/false-refusals.ts
 */
import { MemoryStore, createLimiter, manualClock, tokenBucket } from '../../src/index.js';

interface Scenario {
  rate: number; // new keys per second
  seconds: number;
  depth?: number;
  width?: number;
}

function run({ rate, seconds, depth, width }: Scenario) {
  const clock = manualClock(0);
  const store = new MemoryStore({
    ...(depth === undefined ? {} : { summaryDepth: depth }),
    ...(width === undefined ? {} : { summaryWidth: width }),
  });
  // The chat login rule: 10 per 10 minutes, burst 10. One take leaves a bucket short for 1 minute.
  const limiter = createLimiter({
    name: 'flood',
    rule: tokenBucket({ limit: 10, period: '10m' }),
    store,
    clock,
  });
  const stepMs = 1000 / rate;
  let elapsed = 0;
  let probes = 0;
  let short = 0;
  let missing = 0;
  let worst = 0;
  const total = Math.round(rate * seconds);
  for (let i = 0; i < total; i++) {
    limiter.takeSync(`flood:${i}`);
    elapsed += stepMs;
    if (elapsed >= 1) {
      clock.advance(Math.floor(elapsed));
      elapsed -= Math.floor(elapsed);
    }
    // Probe only once the flood has run for two minutes (a steady state).
    if (i % 50 === 0 && i / rate > 120) {
      const remaining = limiter.peekSync(`probe:${i}`).remaining;
      probes++;
      if (remaining < 10) {
        short++;
        missing += 10 - remaining;
        worst = Math.max(worst, 10 - remaining);
      }
    }
  }
  return {
    rate,
    depth: store.summaryDepth,
    width: store.summaryWidth,
    liveKeys: rate * 60,
    probes,
    shortFraction: Number((short / Math.max(1, probes)).toFixed(5)),
    meanMissingWhenShort: Number((missing / Math.max(1, short)).toFixed(2)),
    worstMissing: worst,
    summaryBytes: store.summaryBytes('flood'),
  };
}

const rows = [];
for (const rate of [50, 100, 200, 400, 800, 1600]) rows.push(run({ rate, seconds: 600 }));
for (const [depth, width] of [
  [2, 65536],
  [3, 32768],
  [6, 32768],
] as const)
  for (const rate of [200, 400, 800]) rows.push(run({ rate, seconds: 600, depth, width }));
console.table(rows);
