/**
 * Draws the pictures of docs/algorithms.md from the real rules: the same bursty traffic goes
 * through every rule of the registry (src/core/rules/index.ts), each made from its example
 * options (each a real limiter on a memory store, under a manual clock), and what each admitted
 * is drawn as SVG.
 *
 *   node --import tsx scripts/algorithm-pictures.ts     writes docs/images/*.svg
 *
 * A test (test/docs/algorithm-pictures.test.ts) draws them again and compares them with the
 * committed files, so the pictures cannot drift from the code. Output is deterministic: fixed
 * traffic, fixed clock, numbers printed with fixed precision.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ruleEntries, type AnyRuleEntry } from '../src/core/rules/index.js';
import { MemoryStore, createLimiter, manualClock, type Rule } from '../src/index.js';

/**
 * Every rule allows 10 per minute (the quota: 30 a day: the registry's examples), so the pictures
 * compare like with like.
 */
const LIMIT = 10;
const WINDOW_S = 60;
const SPAN_S = 180;
/** Midnight UTC, so that the daily quota's day spans the whole picture. */
const START = Date.UTC(2026, 0, 1);

interface Lane {
  readonly title: string;
  readonly rule: Rule;
}

/** Options as written in a call: `{ limit: 10, period: "1m" }`. */
function optionsText(options: object): string {
  const fields = Object.entries(options).map(([key, value]) => `${key}: ${JSON.stringify(value)}`);
  return `{ ${fields.join(', ')} }`;
}

function laneOf(entry: AnyRuleEntry): Lane {
  return { title: `${entry.name}(${optionsText(entry.example)})`, rule: entry.create(entry.example) };
}

const lanes: readonly Lane[] = ruleEntries.map(laneOf);

/** How many rules the pictures compare, in words, as their titles say it. */
const ruleCount =
  ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'][lanes.length] ??
  String(lanes.length);

/**
 * The traffic, in tenths of a second from the start: a steady client, then a burst that straddles
 * the first minute's end (the fixed window's weak spot), a slow trickle, and a last burst.
 */
export function traffic(): number[] {
  const times: number[] = [];
  for (let t = 50; t < 150; t += 10) times.push(t); // 5 s to 14 s: one a second
  for (let t = 575; t < 600; t += 2) times.push(t); // 57.5 s to 59.9 s: 13 requests
  for (let t = 600; t < 625; t += 2) times.push(t); // 60.0 s to 62.4 s: 13 requests
  for (let t = 900; t < 1500; t += 30) times.push(t); // 90 s to 147 s: one every 3 s
  for (let t = 1650; t < 1700; t += 5) times.push(t); // 165 s to 169.5 s: 10 requests
  return times;
}

interface Outcome {
  readonly at: number; // tenths of a second
  readonly allowed: boolean;
}

/** Runs the traffic through one rule on a fresh memory store. */
export function admit(rule: Rule, times: readonly number[]): Outcome[] {
  const clock = manualClock(START);
  const limiter = createLimiter({ name: 'picture', rule, store: new MemoryStore(), clock });
  const outcomes: Outcome[] = [];
  let last = 0;
  for (const at of times) {
    clock.advance((at - last) * 100);
    last = at;
    outcomes.push({ at, allowed: limiter.takeSync('client').allowed });
  }
  return outcomes;
}

/** Admitted requests in the trailing window ending at each tenth of a second. */
export function trailing(outcomes: readonly Outcome[]): number[] {
  const admitted = outcomes.filter((o) => o.allowed).map((o) => o.at);
  const counts: number[] = [];
  let from = 0;
  let to = 0;
  for (let t = 0; t <= SPAN_S * 10; t++) {
    while (to < admitted.length && (admitted[to] as number) <= t) to++;
    while (from < to && (admitted[from] as number) <= t - WINDOW_S * 10) from++;
    counts.push(to - from);
  }
  return counts;
}

const WIDTH = 860;
const LEFT = 300;
const RIGHT = 20;
const plotWidth = WIDTH - LEFT - RIGHT;
const x = (tenths: number) => (LEFT + (tenths / (SPAN_S * 10)) * plotWidth).toFixed(1);

function header(height: number, title: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">\n` +
    `<title>${title}</title>\n<rect width="${WIDTH}" height="${height}" fill="white"/>\n`
  );
}

function timeAxis(y: number, top: number): string {
  let out = `<line x1="${LEFT}" y1="${y}" x2="${WIDTH - RIGHT}" y2="${y}" stroke="#444"/>\n`;
  for (let s = 0; s <= SPAN_S; s += 30) {
    const at = x(s * 10);
    out += `<line x1="${at}" y1="${y}" x2="${at}" y2="${y + 4}" stroke="#444"/>`;
    out += `<text x="${at}" y="${y + 16}" text-anchor="middle">${s} s</text>\n`;
    if (s > 0 && s % WINDOW_S === 0 && s < SPAN_S) {
      out += `<line x1="${at}" y1="${top}" x2="${at}" y2="${y}" stroke="#999" stroke-dasharray="4 3"/>\n`;
    }
  }
  return out;
}

/** Each request as a tick, one lane per rule: admitted green and tall, refused red and short. */
export function requestsPicture(): string {
  const times = traffic();
  const laneHeight = 46;
  const top = 40;
  const height = top + lanes.length * laneHeight + 44;
  let svg = header(height, `Admitted and refused requests under ${ruleCount} rules, for the same traffic`);
  svg += `<text x="${LEFT}" y="22" font-weight="bold">The same requests under each rule (10 a minute; the quota 30 a day)</text>\n`;
  lanes.forEach((lane, index) => {
    const base = top + index * laneHeight + 30;
    const outcomes = admit(lane.rule, times);
    const admitted = outcomes.filter((o) => o.allowed).length;
    svg += `<text x="10" y="${base - 8}" font-family="monospace" font-size="11">${lane.title}</text>\n`;
    svg += `<text x="10" y="${base + 6}" fill="#555" font-size="11">${admitted} of ${outcomes.length} admitted</text>\n`;
    svg += `<line x1="${LEFT}" y1="${base}" x2="${WIDTH - RIGHT}" y2="${base}" stroke="#ddd"/>\n`;
    for (const o of outcomes) {
      const at = x(o.at);
      svg += o.allowed
        ? `<line x1="${at}" y1="${base}" x2="${at}" y2="${base - 22}" stroke="#1a7f37" stroke-width="2"/>`
        : `<line x1="${at}" y1="${base}" x2="${at}" y2="${base - 8}" stroke="#cf222e" stroke-width="2"/>`;
    }
    svg += '\n';
  });
  const axis = top + lanes.length * laneHeight + 8;
  svg += timeAxis(axis, top);
  svg += `<text x="10" y="${axis + 30}" fill="#555" font-size="11">green: admitted · red: refused · dashed: the fixed and sliding windows' minute boundaries</text>\n`;
  return `${svg}</svg>\n`;
}

const colours = ['#0969da', '#cf222e', '#1a7f37', '#8250df'];

/**
 * Requests admitted in the last minute, over time, one line per rule: where the fixed window lets
 * twice its limit through around a boundary, and the sliding window does not.
 */
export function trailingPicture(): string {
  const times = traffic();
  const top = 40;
  const plotHeight = 220;
  const bottom = top + plotHeight;
  const maxCount = 2 * LIMIT + 4;
  const y = (count: number) => (bottom - (count / maxCount) * plotHeight).toFixed(1);
  const height = bottom + 44 + lanes.length * 18;
  let svg = header(height, `Requests admitted in the last minute under ${ruleCount} rules`);
  svg += `<text x="${LEFT}" y="22" font-weight="bold">Requests admitted in the last 60 seconds</text>\n`;
  for (const count of [LIMIT, 2 * LIMIT]) {
    svg += `<line x1="${LEFT}" y1="${y(count)}" x2="${WIDTH - RIGHT}" y2="${y(count)}" stroke="#999" stroke-dasharray="2 3"/>`;
    svg += `<text x="${LEFT - 6}" y="${y(count)}" text-anchor="end" dominant-baseline="middle">${count === LIMIT ? 'limit 10' : '2 × limit'}</text>\n`;
  }
  lanes.forEach((lane, index) => {
    const counts = trailing(admit(lane.rule, times));
    let points = '';
    counts.forEach((count, t) => {
      // One point where the count changes (and its predecessor), to keep the file small.
      if (t === 0 || t === counts.length - 1 || count !== counts[t - 1]) {
        if (t > 0) points += `${x(t)},${y(counts[t - 1] as number)} `;
        points += `${x(t)},${y(count)} `;
      }
    });
    const colour = colours[index % colours.length] as string;
    svg += `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.trim()}"/>\n`;
    const peak = Math.max(...counts);
    const legend = bottom + 40 + index * 18;
    svg += `<line x1="10" y1="${legend - 4}" x2="30" y2="${legend - 4}" stroke="${colour}" stroke-width="3"/>`;
    svg += `<text x="36" y="${legend}" font-family="monospace" font-size="11">${lane.title}: at most ${peak} in any minute</text>\n`;
  });
  svg += timeAxis(bottom, top);
  return `${svg}</svg>\n`;
}

/** The pictures by file name under docs/images/. */
export function algorithmPictures(): Map<string, string> {
  return new Map([
    ['algorithms-requests.svg', requestsPicture()],
    ['algorithms-last-minute.svg', trailingPicture()],
  ]);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const folder = new URL('../docs/images/', import.meta.url);
  for (const [name, svg] of algorithmPictures()) {
    writeFileSync(new URL(name, folder), svg);
    console.log(`wrote docs/images/${name}`);
  }
}
