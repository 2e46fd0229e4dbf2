import { metrics, type Meter } from '@opentelemetry/api';
import { optionError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import type { DecisionEvent, DecisionEvents } from '../limiter/events.js';
import { MetricAttributes } from './metric-attributes.js';
import { SLUICE_VERSION } from './version.js';

/**
 * Bucket boundaries of the store latency histogram, in ms: from 0.05 ms (a memory store) through
 * the round trip of a shared store on the same host or network (0.1 to 5 ms) to 1 s (a store in
 * trouble, or a timeout). Given as advice: a View of your meter provider can replace them.
 */
export const STORE_LATENCY_BOUNDARIES_MS: readonly number[] = Object.freeze([
  0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000,
]);

/** Options of {@link bindDecisionMetrics}. */
export interface DecisionMetricsOptions {
  /**
   * The meter the instruments are made on.
   * @default metrics.getMeter('sluice', version): the global meter provider's
   */
  meter?: Meter;
  /**
   * The first part of every instrument's name: `<prefix>.decisions`, `<prefix>.units`,
   * `<prefix>.store.latency`. A letter, then letters, digits, `_`, `.`, `-` or `/`.
   * @default "sluice"
   */
  prefix?: string;
}

const optionKeys = ['meter', 'prefix'] as const;
const DEFAULT_PREFIX = 'sluice';
/** An instrument name (OpenTelemetry's syntax) less the suffix we add (`.store.latency`, 14). */
const metricPrefix = /^[A-Za-z][\w.\-/]{0,240}$/;

/**
 * Records the decisions reported to `events` as OpenTelemetry metrics; returns the function that
 * stops recording (it unsubscribes; the instruments stay on the meter). Three instruments:
 *
 * - `sluice.decisions`, a counter of decisions, by `rule`, `outcome` and `store`;
 * - `sluice.units`, a counter of the units (cost) charged by admitted takes, by `rule`, `store`;
 * - `sluice.store.latency`, a histogram of how long the store took to answer (ms), by `rule` and
 *   `store`, for the events where a store was asked (`storeLatencyMs > 0`, and not a refusal for
 *   good, `retryAfterMs` Infinity): every decision and failure of a rule on its store, the time
 *   to fail or time out included; not a cost the rule can never hold (refused without asking),
 *   nor the guard's lists and skip.
 *
 * Attributes hold configuration only: the rule's name, the store's kind (`memory`, `redis`,
 * `postgres`) and the outcome; `"-"` stands for the rule and store of an event that ran none.
 * Never a key or its pseudonym, so the number of series is bounded by your rules.
 *
 * @throws SluiceError `SLUICE_CONFIG` for events that are not a channel or a bad option
 * @example
 * const events = new DecisionEvents();
 * const login = createLimiter({ name: 'login', rule, store, events });
 * const unbind = bindDecisionMetrics(events); // on the global meter provider
 * unbind(); // stops recording
 */
export function bindDecisionMetrics(
  events: DecisionEvents,
  options: DecisionMetricsOptions = {},
): () => void {
  // Checked by shape rather than class: the channel may come from the other build (ESM or
  // CommonJS) of sluice, whose DecisionEvents is a different class.
  if (typeof events !== 'object' || events === null || typeof events.subscribe !== 'function') {
    throw optionError('bindDecisionMetrics events', 'a DecisionEvents (limiter.events or the events option)');
  }
  // Checked before checkOptionKeys, whose message would quote a string given in their place.
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw optionError('bindDecisionMetrics options', 'an object');
  }
  checkOptionKeys('bindDecisionMetrics', options, optionKeys);
  const { meter = metrics.getMeter('sluice', SLUICE_VERSION), prefix = DEFAULT_PREFIX } = options;
  if (
    typeof meter !== 'object' ||
    meter === null ||
    typeof meter.createCounter !== 'function' ||
    typeof meter.createHistogram !== 'function'
  ) {
    throw optionError('bindDecisionMetrics meter', 'an OpenTelemetry Meter');
  }
  if (typeof prefix !== 'string' || !metricPrefix.test(prefix)) {
    throw optionError(
      'bindDecisionMetrics prefix',
      'a string of at most 241 characters: a letter, then letters, digits, _ . - or /',
    );
  }

  const decisions = meter.createCounter(`${prefix}.decisions`, {
    description: 'Rate limit decisions, by rule, outcome and store',
    unit: '{decision}',
  });
  const units = meter.createCounter(`${prefix}.units`, {
    description: 'Units (cost) charged by admitted takes, by rule and store',
    unit: '{unit}',
  });
  const latency = meter.createHistogram(`${prefix}.store.latency`, {
    description: 'Time the store took to answer a take (also when it failed), by rule and store',
    unit: 'ms',
    advice: { explicitBucketBoundaries: [...STORE_LATENCY_BOUNDARIES_MS] },
  });
  const attributes = new MetricAttributes();

  const record = (event: DecisionEvent): void => {
    decisions.add(1, attributes.decision(event.rule, event.store, event.outcome));
    if (event.outcome === 'admitted' && event.cost > 0) {
      units.add(event.cost, attributes.ruleAndStore(event.rule, event.store));
    }
    // A cost the rule can never hold is refused (retry: Infinity) without asking the store, even
    // when an asynchronous limiter still measures the turn of its promise as a latency.
    if (event.storeLatencyMs > 0 && event.retryAfterMs !== Infinity) {
      latency.record(event.storeLatencyMs, attributes.ruleAndStore(event.rule, event.store));
    }
  };
  return events.subscribe(record);
}
