import { MAX_COUNT } from '../../core/bounds.js';
import type { Clock } from '../../core/clock.js';
import { makeDecision, type Decision } from '../../core/decision.js';
import { SluiceError, isSluiceError } from '../../core/errors.js';
import type { Duration } from '../../core/duration.js';
import { ENVOY_UNIT_WINDOWS, fixedWindow } from '../../core/rules/fixed-window.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { isSyncStore, type RuleBuckets, type Store, type TakeEntry } from '../../stores/contract/store.js';
import { ENVOY_UNITS, UNIT_SECONDS, type EnvoyUnit } from './units.js';

/**
 * One bucket to ask: its unit's fixed window (or, with `burst`, a token bucket refilling `limit`
 * per unit), its key, its cost and its limit (0: always over).
 */
export interface Ask {
  readonly unit: EnvoyUnit;
  readonly key: string;
  readonly cost: number;
  readonly limit: number;
  readonly burst: number | undefined;
}

/** How long a store call may take when the store sets no bound of its own. */
const DEFAULT_TIMEOUT_MS = 100;

/**
 * The buckets Envoy's descriptors are counted in: one fixed window per unit, aligned to the
 * epoch as envoyproxy/ratelimit's, bound once on the server's store, whose every take passes its
 * own limit (a rule's `requests_per_unit` or an override). They never change with the policy, so
 * a reload keeps every count, as upstream's cache keys do.
 */
export class EnvoyBuckets {
  private readonly units = new Map<EnvoyUnit, RuleBuckets>();
  /** Token buckets by unit, rate and burst, bound when a rule first asks for one. */
  private readonly tokenBuckets = new Map<string, RuleBuckets>();
  private readonly sync: boolean;
  readonly timeoutMs: number;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {
    for (const unit of ENVOY_UNITS)
      this.units.set(
        unit,
        store.bind(nameOf(unit), fixedWindow({ limit: MAX_COUNT, window: ENVOY_UNIT_WINDOWS[unit] })),
      );
    this.sync = isSyncStore(store);
    this.timeoutMs = store.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  now(): number {
    return this.clock();
  }

  /**
   * Charges every ask all or nothing (0-cost asks check only): each decision, charged only when
   * all admit. An ask of limit 0 is refused without a store call (and refuses the others).
   */
  async takeAll(asks: readonly Ask[], now: number): Promise<Decision[]> {
    const zero = asks.some((a) => a.limit === 0 && a.cost >= 0);
    const entries: TakeEntry[] = [];
    const index: number[] = [];
    asks.forEach((ask, i) => {
      if (ask.limit === 0) return;
      // With a refusal certain, the others are only looked at.
      entries.push({
        buckets: this.bucketsOf(ask),
        key: ask.key,
        cost: zero ? 0 : ask.cost,
        limit: ask.burst === undefined ? ask.limit : undefined,
      });
      index.push(i);
    });
    const decided = entries.length === 0 ? [] : await this.call(entries, now);
    const decisions: Decision[] = asks.map((ask) => refusedAtZero(ask, now));
    decided.forEach((decision, j) => (decisions[index[j]!] = decision));
    return decisions;
  }

  /** Charges `cost` to a bucket whatever it holds (a debit after the fact), past the limit if need be. */
  async charge(ask: Ask, now: number): Promise<void> {
    const buckets = this.bucketsOf(ask);
    const until = now + 1;
    if (this.sync && 'adjustSync' in buckets) {
      (buckets as RuleBuckets & { adjustSync: RuleBuckets['adjust'] }).adjustSync(
        ask.key,
        ask.cost,
        now,
        now,
        until,
      );
      return;
    }
    await this.bounded(buckets.adjust(ask.key, ask.cost, now, now, until));
  }

  close(): void {
    for (const unit of ENVOY_UNITS) this.store.unbind(nameOf(unit));
    for (const buckets of this.tokenBuckets.values()) this.store.unbind(buckets.name);
  }

  /** The ask's buckets: its unit's window, or the token bucket of its rate and burst. */
  bucketsOf(ask: Ask): RuleBuckets {
    if (ask.burst === undefined) return this.units.get(ask.unit)!;
    const name = `envoy:tb:${ask.unit.toLowerCase()}:${ask.limit}:${ask.burst}`;
    let buckets = this.tokenBuckets.get(name);
    if (buckets === undefined) {
      const period = `${UNIT_SECONDS[ask.unit]}s` as Duration;
      buckets = this.store.bind(name, tokenBucket({ limit: ask.limit, period, burst: ask.burst }));
      this.tokenBuckets.set(name, buckets);
    }
    return buckets;
  }

  private call(entries: TakeEntry[], now: number): Promise<Decision[]> | Decision[] {
    if (this.sync)
      return (this.store as Store & { takeAllSync(e: TakeEntry[], n: number): Decision[] }).takeAllSync(
        entries,
        now,
      );
    return this.bounded(this.store.takeAll(entries, now));
  }

  /** The store's answer, or SLUICE_STORE_TIMEOUT once its timeout (and a little) passed. */
  private bounded<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new SluiceError('SLUICE_STORE_TIMEOUT', 'the rate limit store did not answer in time')),
        this.timeoutMs + 20,
      );
    });
    return Promise.race([work, late]).finally(() => clearTimeout(timer));
  }
}

function nameOf(unit: EnvoyUnit): string {
  return `envoy:${unit.toLowerCase()}`;
}

/** The decision for an ask of limit 0: always over (a block list), charged nothing. */
function refusedAtZero(ask: Ask, now: number): Decision {
  const windowMs = windowMsOf(ask.unit);
  const resetMs = windowMs - (now % windowMs);
  return makeDecision(false, '', 0, 0, 0, ask.cost, resetMs, resetMs, windowMs);
}

function windowMsOf(unit: EnvoyUnit): number {
  return UNIT_SECONDS[unit] * 1000;
}

/** A store's failure as the error it answers with: its own SluiceError, else unavailable. */
export function storeFailure(error: unknown): SluiceError {
  if (isSluiceError(error) && error.status === 503) return error;
  return new SluiceError('SLUICE_STORE_UNAVAILABLE', 'the rate limit store failed', { cause: error });
}
