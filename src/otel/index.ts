/**
 * sluice/otel: decision events as OpenTelemetry metrics. The only entry that imports
 * `@opentelemetry/api` (an optional peer dependency); the rest of sluice has no dependency.
 *
 * @module sluice/otel
 */
export {
  bindDecisionMetrics,
  STORE_LATENCY_BOUNDARIES_MS,
  type DecisionMetricsOptions,
} from './decision-metrics.js';
export { ABSENT_ATTRIBUTE } from './metric-attributes.js';
