/**
 * What remembering forgotten buckets (`MemoryStore` `rememberForgotten`) costs honest keys, next
 * to the default (a forgotten bucket is a new one), both under the same floods and a manual clock,
 * so every figure is exact and repeatable.
 *
 *   node --import tsx bench/memory/false-refusals.ts
 *
 * Steady floods: distinct keys, each taking one token, arrive at a steady rate for ten minutes on
 * the chat login rule (10 per 10 minutes: one take leaves a bucket short for a minute). Once the
 * flood has run for two minutes, every 50th arrival a fresh probe key (never seen) is peeked and
 * then takes one token. Reported per rate: the fraction of probes that start short of full, the
 * tokens they miss, and the fraction whose first take is refused (a false refusal: a new client
 * refused because of other keys).
 *
 * One-shot flood: 1,000,000 distinct addresses take one token each from 5 per hour at one instant,
 * then the same 1,000,000 again: every take should be admitted.
 *
 * Prints a Markdown table (the one in docs/memory.md), then one JSON line.
 */
import { MemoryStore, createLimiter, manualClock, tokenBucket } from '../../src/index.js';

interface Scenario {
  rate: number; // new keys per second
  seconds: number;
  remember: boolean;
  depth?: number;
  width?: number;
}

interface Row {
  store: string;
  flood: string;
  probes: number;
  startShort: number;
  meanMissingWhenShort: number;
  falseRefusals: number;
  summaryBytes: number;
}

function storeFor(remember: boolean, depth?: number, width?: number): MemoryStore {
  return new MemoryStore({
    ...(remember ? { rememberForgotten: ['flood'] } : {}),
    ...(depth === undefined ? {} : { summaryDepth: depth }),
    ...(width === undefined ? {} : { summaryWidth: width }),
  });
}

function label(store: MemoryStore, remember: boolean): string {
  return remember ? `summary ${store.summaryDepth} × ${store.summaryWidth}` : 'default (forgets)';
}

function steady({ rate, seconds, remember, depth, width }: Scenario): Row {
  const clock = manualClock(0);
  const store = storeFor(remember, depth, width);
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
  let refused = 0;
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
      const probe = `probe:${i}`;
      const remaining = limiter.peekSync(probe).remaining;
      probes++;
      if (remaining < 10) {
        short++;
        missing += 10 - remaining;
      }
      if (!limiter.takeSync(probe).allowed) refused++;
    }
  }
  return {
    store: label(store, remember),
    flood: `${rate} new keys/s for ${seconds / 60} min`,
    probes,
    startShort: short / Math.max(1, probes),
    meanMissingWhenShort: missing / Math.max(1, short),
    falseRefusals: refused / Math.max(1, probes),
    summaryBytes: store.summaryBytes('flood'),
  };
}

function oneShot(remember: boolean): Row {
  const store = storeFor(remember);
  const limiter = createLimiter({
    name: 'flood',
    rule: tokenBucket({ limit: 5, period: '1h' }),
    store,
    clock: manualClock(Date.UTC(2026, 0, 1)),
  });
  const keys = 1_000_000;
  let refused = 0;
  for (let round = 0; round < 2; round++)
    for (let i = 0; i < keys; i++)
      if (!limiter.takeSync(`203.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`).allowed) refused++;
  return {
    store: label(store, remember),
    flood: '1,000,000 keys at once, twice (5 per hour)',
    probes: 2 * keys,
    startShort: Number.NaN,
    meanMissingWhenShort: Number.NaN,
    falseRefusals: refused / (2 * keys),
    summaryBytes: store.summaryBytes('flood'),
  };
}

const rows: Row[] = [];
for (const remember of [false, true])
  for (const rate of [100, 200, 400, 800, 1600, 3200]) rows.push(steady({ rate, seconds: 600, remember }));
for (const [depth, width] of [
  [4, 65536],
  [2, 65536],
] as const)
  for (const rate of [400, 800, 1600])
    rows.push(steady({ rate, seconds: 600, remember: true, depth, width }));
rows.push(oneShot(false), oneShot(true));

const percent = (value: number) => (Number.isNaN(value) ? '–' : `${(100 * value).toFixed(1)}%`);
const fixed = (value: number) => (Number.isNaN(value) || value === 0 ? '–' : value.toFixed(1));
console.log(
  '| store | flood | fresh keys starting short | tokens missing (mean, when short) | fresh keys refused | summary |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: |');
for (const row of rows)
  console.log(
    `| ${row.store} | ${row.flood} | ${percent(row.startShort)} | ${fixed(row.meanMissingWhenShort)} | ${percent(row.falseRefusals)} | ${row.summaryBytes === 0 ? '0' : `${row.summaryBytes / 1024} KiB`} |`,
  );
console.log(JSON.stringify(rows));
