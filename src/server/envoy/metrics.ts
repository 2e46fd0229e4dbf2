import { createHmac, randomBytes } from 'node:crypto';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { EnvoyRule } from './config.js';
import { SpaceSaving } from '../shared/space-saving.js';

/** What a descriptor's hits came to, as upstream's counters name it. */
export type HitOutcome = 'within_limit' | 'over_limit' | 'shadow_mode';

/** How a call ended. */
export type CallResult = 'ok' | 'over_limit' | 'invalid_argument' | 'unavailable' | 'internal';

/** Values tracked per descriptor of `detailed_metric`, and how many of them are shown. */
const TRACKED = 64;
const SHOWN = 10;

/**
 * Metrics of Envoy's traffic, in the server's registry. Labels come from the configuration only:
 * the domain and the descriptor's path as configured (`key_value.key`), never a request's value.
 * What upstream puts into labels for `detailed_metric` (the request's values) goes to a bounded
 * top-K summary instead, each value as a keyed fingerprint (the key is this process's own, so a
 * fingerprint cannot be looked up elsewhere or reversed by trying addresses).
 */
export class EnvoyMetrics {
  private readonly hits: Counter<'domain' | 'descriptor' | 'outcome'>;
  private readonly calls: Counter<'result'>;
  private readonly notFound: Counter;
  private readonly latency: Histogram;
  private readonly detailed = new Map<string, { domain: string; descriptor: string; top: SpaceSaving }>();
  private readonly key = randomBytes(32);
  private readonly results: Partial<Record<CallResult, { inc(): void }>> = {};
  /** Each rule's counters by outcome, looked up once: a label lookup per call costs more than the count. */
  private readonly children = new WeakMap<EnvoyRule, Partial<Record<HitOutcome, { inc(n: number): void }>>>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.hits = new Counter({
      name: 'sluice_envoy_hits_total',
      help: "Hits of Envoy's descriptors, by domain, descriptor as configured and outcome",
      labelNames: ['domain', 'descriptor', 'outcome'],
      registers,
    });
    this.calls = new Counter({
      name: 'sluice_envoy_calls_total',
      help: 'ShouldRateLimit calls, by result',
      labelNames: ['result'],
      registers,
    });
    this.notFound = new Counter({
      name: 'sluice_envoy_domain_not_found_total',
      help: 'Calls naming a domain the configuration does not have (the domain is not a label: it comes from the caller)',
      registers,
    });
    this.latency = new Histogram({
      name: 'sluice_envoy_call_seconds',
      help: 'Time to answer a ShouldRateLimit call',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
      registers,
    });
    const detailed = this.detailed;
    new Gauge({
      name: 'sluice_envoy_detailed_top_hits',
      help: `The ${SHOWN} most frequent values (as fingerprints) of each detailed_metric descriptor, and their hits (approximate: at most the smallest tracked count more)`,
      labelNames: ['domain', 'descriptor', 'value'],
      registers,
      collect() {
        this.reset();
        for (const { domain, descriptor, top } of detailed.values())
          for (const { id, count } of top.top(SHOWN)) this.set({ domain, descriptor, value: id }, count);
      },
    });
  }

  hit(domain: string, rule: EnvoyRule, outcome: HitOutcome, hits: number): void {
    if (hits <= 0) return;
    let byOutcome = this.children.get(rule);
    if (byOutcome === undefined) this.children.set(rule, (byOutcome = {}));
    const child = (byOutcome[outcome] ??= this.hits.labels({
      domain,
      descriptor: descriptorOf(domain, rule),
      outcome,
    }));
    child.inc(hits);
  }

  /** Counts the values of a detailed_metric descriptor in its top-K summary. */
  values(domain: string, rule: EnvoyRule, values: string, hits: number): void {
    let entry = this.detailed.get(rule.path);
    if (entry === undefined) {
      entry = { domain, descriptor: descriptorOf(domain, rule), top: new SpaceSaving(TRACKED) };
      this.detailed.set(rule.path, entry);
    }
    const fingerprint = createHmac('sha256', this.key).update(values).digest('hex').slice(0, 16);
    entry.top.offer(fingerprint, hits > 0 ? hits : 1);
  }

  call(result: CallResult, seconds: number): void {
    (this.results[result] ??= this.calls.labels({ result })).inc();
    this.latency.observe(seconds);
  }

  domainNotFound(): void {
    this.notFound.inc();
  }
}

function descriptorOf(domain: string, rule: EnvoyRule): string {
  return rule.path.slice(domain.length + 1);
}
