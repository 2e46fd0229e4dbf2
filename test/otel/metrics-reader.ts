/**
 * A meter whose metrics a test reads when it wants: a MeterProvider with a MetricReader that
 * collects on demand (no export interval, no timer), and the collected data points keyed by
 * their attributes so that a test can assert exact counts per series.
 */
import type { Attributes, Meter } from '@opentelemetry/api';
import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type Histogram,
  type MetricData,
  type ScopeMetrics,
} from '@opentelemetry/sdk-metrics';

/** Collects whenever `collect()` is called; nothing to flush, nothing to shut down. */
class OnDemandReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** One data point: its attributes and, for a counter, its sum; for a histogram, the histogram. */
export interface Series<T> {
  readonly attributes: Attributes;
  readonly value: T;
}

/** What one collection holds, by instrument name. */
export class Collected {
  constructor(readonly scopes: readonly ScopeMetrics[]) {}

  /** The instrument named `name`; fails the test when none was recorded. */
  metric(name: string): MetricData {
    for (const scope of this.scopes) {
      const found = scope.metrics.find((metric) => metric.descriptor.name === name);
      if (found !== undefined) return found;
    }
    throw new Error(`no metric named ${name} was collected`);
  }

  /** The instrument names collected, sorted. */
  names(): string[] {
    return this.scopes.flatMap((scope) => scope.metrics.map((metric) => metric.descriptor.name)).sort();
  }

  /** A counter's sums, keyed by `seriesKey` of their attributes. */
  sums(name: string): Map<string, number> {
    const metric = this.metric(name);
    if (metric.dataPointType !== DataPointType.SUM) throw new Error(`${name} is not a counter`);
    return new Map(metric.dataPoints.map((point) => [seriesKey(point.attributes), point.value]));
  }

  /** A histogram's data points, keyed by `seriesKey` of their attributes. */
  histograms(name: string): Map<string, Histogram> {
    const metric = this.metric(name);
    if (metric.dataPointType !== DataPointType.HISTOGRAM) throw new Error(`${name} is not a histogram`);
    return new Map(metric.dataPoints.map((point) => [seriesKey(point.attributes), point.value]));
  }

  /** Every attribute set of every data point collected. */
  allAttributes(): Attributes[] {
    return this.scopes.flatMap((scope) =>
      scope.metrics.flatMap((metric) =>
        (metric.dataPoints as { attributes: Attributes }[]).map((point) => point.attributes),
      ),
    );
  }
}

/** `outcome=admitted,rule=login,store=memory`: attributes sorted by name, one string per series. */
export function seriesKey(attributes: Attributes): string {
  return Object.keys(attributes)
    .sort()
    .map((name) => `${name}=${String(attributes[name])}`)
    .join(',');
}

/** A meter provider read on demand. */
export function meterProvider(): {
  provider: MeterProvider;
  meter: Meter;
  collect: () => Promise<Collected>;
} {
  const reader = new OnDemandReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    provider,
    meter: provider.getMeter('sluice-test'),
    collect: async () => {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed');
      return new Collected(resourceMetrics.scopeMetrics);
    },
  };
}
