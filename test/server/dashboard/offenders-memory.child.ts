/**
 * Run by offenders-memory.test.ts with --expose-gc: the server's metrics with the dashboard's tap,
 * and N refusals of distinct keys reported on a rule's channel as the limiter reports them (the
 * key's id made by the channel's keyHash, then every listener: the Prometheus recorder and the
 * offenders' summaries). Prints the heap before (after a warm-up that fills every structure) and
 * after, each after a full collection. No store holds the keys: only the dashboard's memory is
 * measured.
 */
import { Dashboard } from '../../../src/server/dashboard/dashboard.js';
import { ServerMetrics } from '../../../src/server/serve/metrics.js';

const count = Number(process.argv[2] ?? 1_000_000);
const dashboard = new Dashboard();
const metrics = new ServerMetrics(dashboard.tap);
const channel = metrics.channel('login');

function refuse(key: string): void {
  channel.emit({
    rule: 'login',
    outcome: 'refused',
    store: 'memory',
    cost: 1,
    remaining: 0,
    retryAfterMs: 1000,
    storeLatencyMs: 0.01,
    keyHash: channel.hashFor('refused', key),
  });
}

const gc = (globalThis as { gc?: () => void }).gc!;
function heap(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

// Warm-up: every summary full, the recent refusals' ring full, the metric's children made.
for (let i = 0; i < 10_000; i++) {
  if (i % 1000 === 0) dashboard.offenders.tick();
  refuse(`10.0.${i >> 8}.${i & 255}`);
}
const before = heap();
for (let i = 0; i < count; i++) {
  if (i % 100_000 === 0) dashboard.offenders.tick();
  refuse(`${i}:203.0.113.${i & 255}|client-${i}`);
}
const after = heap();
const top = dashboard.offenders.of('login', 64)[0]!.refused.length;
console.log(JSON.stringify({ before, after, growth: after - before, held: top }));
