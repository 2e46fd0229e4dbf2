import type { Registry } from 'prom-client';
import { ruleEntry } from '../../core/rules/index.js';
import type { DecisionOutcome } from '../../limiter/events.js';
import type { LimitModel } from '../policy/model.js';
import type { ReloadResult } from '../serve/metrics.js';
import type { ServedPolicy } from '../serve/server.js';
import type { Offenders } from './offenders.js';
import type { LimitView, OutcomeCounts, Point, RuleView, Snapshot } from './snapshot-types.js';

/** Offenders shown per limit and outcome. */
const SHOWN = 10;
/** Ticks the refusal ratio looks back over, and the latency quantiles. */
const RATIO_TICKS = 60;
const LATENCY_TICKS = 10;

/** What a snapshot is made of. */
export interface SnapshotSources {
  /** The server's metrics registry: the decision counters it already keeps. */
  readonly registry: Registry;
  readonly offenders: Offenders;
  current(): ServedPolicy;
  lastReload(): ReloadResult | undefined;
}

/** Cumulative counts of one tick: by rule, then by limit (`-` for the lists), then by outcome. */
type Counts = Map<string, Map<string, OutcomeCounts>>;

interface Tick {
  at: number;
  counts: Counts;
  /** Cumulative store latency histogram: upper bounds (s) and counts. */
  latency: { le: number[]; counts: number[] };
}

type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * Turns the server's cumulative counters into what the dashboard shows, once per tick: rates
 * from the difference with the tick before, the refusal ratio over a minute, store latency
 * quantiles over ten seconds. Reads counters the metrics already keep, so a decision costs the
 * dashboard nothing here.
 */
export class SnapshotMaker {
  private readonly ticks: Tick[] = [];

  constructor(private readonly sources: SnapshotSources) {}

  async make(now = Date.now()): Promise<{ snapshot: Snapshot; point: Point }> {
    const { registry, offenders } = this.sources;
    const tick: Tick = {
      at: now,
      counts: countsOf(await samples(registry, 'sluice_decisions_total')),
      latency: histogramOf(await samples(registry, 'sluice_store_latency_seconds')),
    };
    const previous = this.ticks.at(-1);
    const minuteAgo = this.ticks[Math.max(0, this.ticks.length - RATIO_TICKS)];
    const tenAgo = this.ticks[Math.max(0, this.ticks.length - LATENCY_TICKS)];
    this.ticks.push(tick);
    if (this.ticks.length > RATIO_TICKS) this.ticks.shift();
    const seconds = previous === undefined ? 1 : Math.max(0.001, (now - previous.at) / 1000);
    const failures = failuresOf(await samples(registry, 'sluice_failure_policy_activations_total'));
    const info = await samples(registry, 'sluice_policy_info');
    const loaded = await samples(registry, 'sluice_policy_loaded_timestamp_seconds');

    const served = this.sources.current();
    const { policy } = served.compiled;
    const rules: RuleView[] = policy.rules.map((rule) => {
      const now = tick.counts.get(rule.name);
      const before = previous?.counts.get(rule.name);
      const limits: LimitView[] = rule.limits.map((limit) => {
        const sketch = offenders.of(rule.name, SHOWN).find((o) => o.limit === limit.name);
        return {
          name: limit.name,
          text: limitText(limit),
          perSecond: rate(now?.get(limit.name), previous && (before?.get(limit.name) ?? {}), seconds),
          total: { ...now?.get(limit.name) },
          refused: sketch?.refused ?? [],
          shadow: sketch?.shadow ?? [],
        };
      });
      const total = sum(now);
      return {
        name: rule.name,
        mode: rule.mode,
        key: rule.key,
        lockout: rule.limits.some((limit) => (limit as { block?: unknown }).block !== undefined),
        perSecond: rate(total, previous && sum(before), seconds),
        total,
        refusalRatio: ratio(total, sum(minuteAgo?.counts.get(rule.name))),
        failures: failures.get(rule.name) ?? { open: 0, closed: 0, insurance: 0 },
        limits,
      };
    });
    const all = sumAll(tick.counts);
    const perSecond = rate(all, previous === undefined ? undefined : sumAll(previous.counts), seconds);
    const latency = quantiles(tick.latency, tenAgo?.latency);
    const reload = this.sources.lastReload();
    const snapshot: Snapshot = {
      at: now,
      policy: {
        hash: String(info[0]?.labels.hash ?? ''),
        store: served.storeType,
        loadedAt: loaded[0] === undefined ? null : Math.round(loaded[0].value * 1000),
        ids: policy.clients.secrets.length > 0 ? 'hmac' : 'fingerprint',
        upstream: policy.upstream !== undefined,
        reload: reload ?? null,
      },
      rules,
      perSecond,
      refusalRatio: ratio(all, minuteAgo === undefined ? undefined : sumAll(minuteAgo.counts)),
      latency,
      recent: offenders.latest(),
    };
    const point: Point = {
      at: now,
      perSecond,
      rules: Object.fromEntries(rules.map((r) => [r.name, r.perSecond])),
      p50Ms: latency.p50Ms,
      p99Ms: latency.p99Ms,
    };
    return { snapshot, point };
  }
}

async function samples(registry: Registry, name: string): Promise<Sample[]> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return [];
  return (await metric.get()).values as Sample[];
}

function countsOf(values: Sample[]): Counts {
  const counts: Counts = new Map();
  for (const { labels, value } of values) {
    const rule = String(labels.rule);
    let limits = counts.get(rule);
    if (limits === undefined) counts.set(rule, (limits = new Map()));
    const limit = String(labels.limit);
    let outcomes = limits.get(limit);
    if (outcomes === undefined) limits.set(limit, (outcomes = {}));
    const outcome = labels.outcome as DecisionOutcome;
    outcomes[outcome] = (outcomes[outcome] ?? 0) + value;
  }
  return counts;
}

function failuresOf(values: Sample[]): Map<string, RuleView['failures']> {
  const found = new Map<string, { open: number; closed: number; insurance: number }>();
  for (const { labels, value } of values) {
    const rule = String(labels.rule);
    let entry = found.get(rule);
    if (entry === undefined) found.set(rule, (entry = { open: 0, closed: 0, insurance: 0 }));
    const policy = labels.policy as 'open' | 'closed' | 'insurance';
    if (policy in entry) entry[policy] += value;
  }
  return found;
}

function histogramOf(values: Sample[]): Tick['latency'] {
  const byLe = new Map<number, number>();
  for (const { labels, value, metricName } of values) {
    if (metricName?.endsWith('_bucket') !== true) continue;
    const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
    byLe.set(le, (byLe.get(le) ?? 0) + value);
  }
  const le = [...byLe.keys()].sort((a, b) => a - b);
  return { le, counts: le.map((l) => byLe.get(l)!) };
}

/**
 * p50 and p99 of the observations between two cumulative histograms, interpolated within a
 * bucket as Prometheus's histogram_quantile does; in ms.
 */
function quantiles(now: Tick['latency'], before: Tick['latency'] | undefined): Snapshot['latency'] {
  const counts = now.counts.map((c, i) => c - (before?.le[i] === now.le[i] ? (before?.counts[i] ?? 0) : 0));
  const samples = counts.at(-1) ?? 0;
  const at = (q: number): number | null => {
    if (samples === 0) return null;
    const rank = q * samples;
    for (let i = 0; i < counts.length; i++) {
      if (counts[i]! < rank) continue;
      const upper = now.le[i]!;
      const lower = i === 0 ? 0 : now.le[i - 1]!;
      if (upper === Infinity) return lower * 1000;
      const below = i === 0 ? 0 : counts[i - 1]!;
      const inBucket = counts[i]! - below;
      const share = inBucket === 0 ? 1 : (rank - below) / inBucket;
      return (lower + (upper - lower) * share) * 1000;
    }
    return null;
  };
  return { p50Ms: at(0.5), p99Ms: at(0.99), samples };
}

function add(total: OutcomeCounts, more: OutcomeCounts): OutcomeCounts {
  for (const [outcome, n] of Object.entries(more) as [DecisionOutcome, number][])
    total[outcome] = (total[outcome] ?? 0) + n;
  return total;
}

function sum(limits: Map<string, OutcomeCounts> | undefined): OutcomeCounts {
  const total: OutcomeCounts = {};
  for (const outcomes of limits?.values() ?? []) add(total, outcomes);
  return total;
}

function sumAll(counts: Counts): OutcomeCounts {
  const total: OutcomeCounts = {};
  for (const limits of counts.values()) add(total, sum(limits));
  return total;
}

/** Per second since the tick before; nothing on the first tick (there is no before). */
function rate(
  now: OutcomeCounts | undefined,
  before: OutcomeCounts | undefined,
  seconds: number,
): OutcomeCounts {
  const perSecond: OutcomeCounts = {};
  if (before === undefined) return perSecond;
  for (const [outcome, n] of Object.entries(now ?? {}) as [DecisionOutcome, number][]) {
    const delta = n - (before?.[outcome] ?? 0);
    if (delta > 0) perSecond[outcome] = Math.round((delta / seconds) * 10) / 10;
  }
  return perSecond;
}

function ratio(now: OutcomeCounts, before: OutcomeCounts | undefined): number | null {
  const refused = (now.refused ?? 0) - (before?.refused ?? 0);
  const admitted = (now.admitted ?? 0) - (before?.admitted ?? 0);
  return refused + admitted === 0 ? null : refused / (refused + admitted);
}

/**
 * A limit in a few words: `10 per 1m, burst 30, token-bucket`; the rule registry says what it is
 * counted per. A burst is shown whenever the limit has one: what a bucket holds at most is half
 * of what a token bucket means, and it differs from its limit in most policies.
 */
export function limitText(limit: LimitModel): string {
  const burst = (limit as { burst?: unknown }).burst;
  return `${limit.limit} per ${ruleEntry(limit.algorithm).per(limit)}${
    typeof burst === 'number' ? `, burst ${burst}` : ''
  }, ${limit.algorithm}`;
}
