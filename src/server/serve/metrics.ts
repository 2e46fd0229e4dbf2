import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import {
  DecisionEvents,
  type DecisionEvent,
  type DecisionEventsOptions,
  type DecisionListener,
  type DecisionOutcome,
} from '../../limiter/events.js';
import type { GatewayObserver } from './gateway.js';
import type { LimitHealth } from './store-health.js';

/** What stands for the limit of a guard's own outcome (allow and deny lists): none ran. */
const NO_LIMIT = '-';

/** The failure policy each store-failure outcome stands for. */
const failurePolicies: Partial<Record<DecisionOutcome, string>> = {
  'failed-open': 'open',
  'failed-closed': 'closed',
  insurance: 'insurance',
};

/**
 * Store latency buckets in seconds: from 50 µs (the memory store) through a shared store's round
 * trip on the same host or network to a second (a store in trouble, or its timeout).
 */
const LATENCY_BUCKETS_S = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];

/**
 * Upstream latency buckets in seconds: from a millisecond (an application on the same host) to
 * a minute (a slow report or a long poll).
 */
const UPSTREAM_BUCKETS_S = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

type Child = { inc(value?: number): void };
type Observer = { observe(value: number): void };

/**
 * One series of a counter, counted in a plain number on each event and handed to prom-client
 * when metrics are read (its `inc` hashes the labels on every call): a decision pays an
 * increment, the exposition pays the rest.
 */
class Tally {
  pending = 0;
  constructor(private readonly child: Child) {}
  flush(): void {
    if (this.pending === 0) return;
    this.child.inc(this.pending);
    this.pending = 0;
  }
}

/** A limit's tallies, found by plain lookups: no label set, key string or closure per event. */
interface LimitTallies {
  readonly decisions: Map<DecisionOutcome, Tally>;
  readonly failures: Map<string, Tally>;
  readonly units: Tally;
}

/** Another listener of every rule's channel (the dashboard's), with the key ids it needs. */
export interface ChannelTap {
  readonly keyHash: NonNullable<DecisionEventsOptions['keyHash']>;
  readonly keyHashOutcomes: readonly DecisionOutcome[];
  listener(rule: string): DecisionListener;
}

/** The last reload's result: applied or rejected, and when (Unix time, ms). */
export interface ReloadResult {
  readonly result: 'applied' | 'rejected';
  readonly at: number;
}

/**
 * The server's Prometheus metrics, in a registry of its own (never prom-client's global one, which
 * an embedding program may use). Every label is bounded by the policy: the rule's and limit's
 * names, the store's kind, an outcome or a policy from a closed set. Never a key, an address, a
 * header or a path: those would make a series per client.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly decisions: Counter<'rule' | 'limit' | 'outcome'>;
  private readonly units: Counter<'rule' | 'limit'>;
  private readonly failures: Counter<'rule' | 'limit' | 'policy'>;
  private readonly latency: Histogram<'store'>;
  private readonly reloads: Counter<'result'>;
  private readonly info: Gauge<'hash' | 'store'>;
  private readonly rules: Gauge;
  private readonly lastReload: Gauge;
  /** Every tally, flushed into its counter when the registry is read. */
  private readonly tallies: Tally[] = [];
  /** One channel per rule name, kept across reloads: a kept limiter reports to the one it was built with. */
  private readonly channels = new Map<string, DecisionEvents>();
  /** The gateway's metrics, by route name. */
  readonly gateway: GatewayObserver;
  /** Undefined until a reload was tried. */
  lastReloadResult: ReloadResult | undefined;
  /** The store health of the policy served, read when metrics are (set by the live policy). */
  private health: () => readonly LimitHealth[] = () => [];

  constructor(private readonly tap?: ChannelTap) {
    const registers = [this.registry];
    // The decision counters are tallied apart and handed over whenever the registry is read.
    const flush = () => this.flush();
    const tallied = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new Counter<L>({ name, help, labelNames, collect: flush, registers });
    this.decisions = tallied(
      'sluice_decisions_total',
      'Decisions, by rule, limit (- for the allow and deny lists) and outcome',
      ['rule', 'limit', 'outcome'],
    );
    this.units = tallied(
      'sluice_admitted_units_total',
      'Units (cost) charged by admitted requests, by rule and limit',
      ['rule', 'limit'],
    );
    this.failures = tallied(
      'sluice_failure_policy_activations_total',
      "Decisions made by a rule's failure policy because its store failed, by rule, limit and policy",
      ['rule', 'limit', 'policy'],
    );
    this.latency = new Histogram({
      name: 'sluice_store_latency_seconds',
      help: 'Time the store took to answer a decision (also when it failed), by store',
      labelNames: ['store'],
      buckets: LATENCY_BUCKETS_S,
      registers,
    });
    this.reloads = new Counter({
      name: 'sluice_policy_reloads_total',
      help: 'Policy reloads, by result: applied, or rejected (the previous policy stays)',
      labelNames: ['result'],
      registers,
    });
    this.info = new Gauge({
      name: 'sluice_policy_info',
      help: 'The policy served: a hash of its normalized form (secrets left out) and its store; always 1',
      labelNames: ['hash', 'store'],
      registers,
    });
    this.rules = new Gauge({ name: 'sluice_policy_rules', help: 'Rules in the policy served', registers });
    this.lastReload = new Gauge({
      name: 'sluice_policy_loaded_timestamp_seconds',
      help: 'When the policy served was loaded (Unix time)',
      registers,
    });
    this.storeHealthMetrics(registers);
    this.gateway = gatewayMetrics(registers);
    for (const result of ['applied', 'rejected']) this.reloads.labels(result).inc(0);
    collectDefaultMetrics({ register: this.registry, prefix: 'sluice_' });
  }

  /** Where the store health of the policy served is read from, each time metrics are read. */
  watchHealth(read: () => readonly LimitHealth[]): void {
    this.health = read;
  }

  /**
   * The breakers' state and the load they told from failure, read from the limiters when metrics
   * are read (nothing on the decisions' path). Counters restart at 0 for a limit a reload built
   * anew, which Prometheus's rate() reads as a reset.
   */
  private storeHealthMetrics(registers: Registry[]): void {
    const labelNames = ['rule', 'limit'] as const;
    const read = () => this.health();
    new Gauge({
      name: 'sluice_store_breaker_open',
      help: "1 while a limit's store breaker is open (its store is known to be failing and its failure policy decides), else 0",
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const h of read()) this.labels(h.rule, h.limit).set(h.breakerOpen ? 1 : 0);
      },
    });
    new Counter({
      name: 'sluice_store_breaker_openings_total',
      help: "Times a limit's store breaker opened",
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const h of read()) this.labels(h.rule, h.limit).inc(h.openings);
      },
    });
    new Counter({
      name: 'sluice_store_overloads_total',
      help: 'Store calls refused as load, not failure (the store kept answering others): never admitted by failure open',
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const h of read()) this.labels(h.rule, h.limit).inc(h.overloads);
      },
    });
  }

  /** The decision channel of a rule: its limiters and its guard report to it. */
  channel(rule: string): DecisionEvents {
    let channel = this.channels.get(rule);
    if (channel === undefined) {
      const { tap } = this;
      channel = new DecisionEvents({
        onListenerError: () => {},
        ...(tap === undefined ? {} : { keyHash: tap.keyHash, keyHashOutcomes: tap.keyHashOutcomes }),
      });
      channel.subscribe(this.recorder(rule));
      if (tap !== undefined) channel.subscribe(tap.listener(rule));
      this.channels.set(rule, channel);
    }
    return channel;
  }

  /** A policy is served: from the start, or after a reload (`reloaded`). */
  served(hash: string, store: string, rules: number, reloaded: boolean): void {
    this.info.reset();
    this.info.labels(hash, store).set(1);
    this.rules.set(rules);
    this.lastReload.set(Date.now() / 1000);
    if (reloaded) {
      this.reloads.labels('applied').inc();
      this.lastReloadResult = { result: 'applied', at: Date.now() };
    }
  }

  /** A reload was refused: the previous policy stays. */
  rejected(): void {
    this.reloads.labels('rejected').inc();
    this.lastReloadResult = { result: 'rejected', at: Date.now() };
  }

  /** The text exposition, and its content type. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** Records a rule's events; the label sets are looked up once and their children reused. */
  private recorder(rule: string): (event: DecisionEvent) => void {
    const byLimit = new Map<string, LimitTallies>();
    const limitTallies = (limit: string): LimitTallies => {
      let found = byLimit.get(limit);
      if (found === undefined) {
        found = {
          decisions: new Map(),
          failures: new Map(),
          units: this.tally(this.units.labels(rule, limit)),
        };
        byLimit.set(limit, found);
      }
      return found;
    };
    const latencyByStore = new Map<string, Observer>();
    return (event) => {
      const limit = event.rule ?? NO_LIMIT;
      const { outcome } = event;
      const tallies = limitTallies(limit);
      let decided = tallies.decisions.get(outcome);
      if (decided === undefined) {
        decided = this.tally(this.decisions.labels(rule, limit, outcome));
        tallies.decisions.set(outcome, decided);
      }
      decided.pending++;
      if (outcome === 'admitted' && event.cost > 0) tallies.units.pending += event.cost;
      const policy = failurePolicies[outcome];
      if (policy !== undefined) {
        let failed = tallies.failures.get(policy);
        if (failed === undefined) {
          failed = this.tally(this.failures.labels(rule, limit, policy));
          tallies.failures.set(policy, failed);
        }
        failed.pending++;
      }
      // A cost the rule can never hold is refused without asking the store.
      const store = event.store;
      if (event.storeLatencyMs > 0 && event.retryAfterMs !== Infinity && store !== undefined) {
        let latency = latencyByStore.get(store);
        if (latency === undefined) {
          latency = this.latency.labels(store);
          latencyByStore.set(store, latency);
        }
        latency.observe(event.storeLatencyMs / 1000);
      }
    };
  }

  private tally(child: Child): Tally {
    const tally = new Tally(child);
    this.tallies.push(tally);
    return tally;
  }

  /** Hands every tally's count to its counter: prom-client calls it before it reads them. */
  private flush(): void {
    for (const tally of this.tallies) tally.flush();
  }
}

/**
 * The gateway's counters and its upstream latency, labelled by the route's name (configuration,
 * never a request value). Each label set is looked up once and its child kept.
 */
function gatewayMetrics(registers: Registry[]): GatewayObserver {
  const forwarded = new Counter({
    name: 'sluice_upstream_forwarded_total',
    help: "Requests (and WebSocket upgrades) the gateway sent to a route's upstream, by route",
    labelNames: ['route'],
    registers,
  });
  const failures = new Counter({
    name: 'sluice_upstream_failures_total',
    help: "Requests whose route's upstream could not be reached (answered 502, or cut), by route",
    labelNames: ['route'],
    registers,
  });
  const latency = new Histogram({
    name: 'sluice_upstream_latency_seconds',
    help: "Time from sending a request to its route's upstream to the start of the upstream's response, by route",
    labelNames: ['route'],
    buckets: UPSTREAM_BUCKETS_S,
    registers,
  });
  const unrouted = new Counter({
    name: 'sluice_gateway_unrouted_total',
    help: 'Requests no route of the gateway takes (answered 404 no_route)',
    registers,
  });
  const children = <T>(make: (route: string) => T) => {
    const found = new Map<string, T>();
    return (route: string): T => {
      let child = found.get(route);
      if (child === undefined) found.set(route, (child = make(route)));
      return child;
    };
  };
  const forwardedOf = children((route) => forwarded.labels(route));
  const failuresOf = children((route) => failures.labels(route));
  const latencyOf = children((route) => latency.labels(route));
  return {
    forwarded: (route) => forwardedOf(route).inc(),
    answered: (route, seconds) => latencyOf(route).observe(seconds),
    failed: (route) => failuresOf(route).inc(),
    unrouted: () => unrouted.inc(),
  };
}
