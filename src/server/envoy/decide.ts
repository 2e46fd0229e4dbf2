import { MAX_COUNT } from '../../core/bounds.js';
import type { Clock } from '../../core/clock.js';
import { makeDecision, type Decision } from '../../core/decision.js';
import type { Duration } from '../../core/duration.js';
import type { Rule } from '../../core/rules/rule.js';
import { ENVOY_UNIT_WINDOWS, fixedWindow } from '../../core/rules/fixed-window.js';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import type { Logger } from '../../limiter/failure.js';
import { createLimiter } from '../../limiter/limiter.js';
import { decideOnFailure, storeAnswered, type LimiterInternals } from '../../limiter/limiter-internals.js';
import { isPending, stepsOf, type BucketSteps } from '../../stores/contract/bucket-steps.js';
import { isSyncStore, type Store, type SyncStore, type TakeEntry } from '../../stores/contract/store.js';
import { withDeadline } from '../../stores/shared/deadline.js';
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

/**
 * Envoy's service logs store failures itself, once a minute with the count since (see
 * `startEnvoy`): the limiters' own lines would say the same again.
 */
const silent: Logger = { warn() {} };

/**
 * The buckets Envoy's descriptors are counted in: one fixed window per unit, aligned to the
 * epoch as envoyproxy/ratelimit's, bound once on the server's store, whose every take passes its
 * own limit (a rule's `requests_per_unit` or an override). They never change with the policy, so
 * a reload keeps every count, as upstream's cache keys do.
 *
 * Each bucket is a limiter's, failing closed: a store that fails or passes the limiter's timeout
 * is the limiter's 503 error, which Envoy gets as UNAVAILABLE so that its failure_mode_deny
 * decides. Several buckets are charged all or nothing in one store call, as an all-or-nothing
 * cascade charges them, with the first one's timeout and failure policy (a cascade cannot carry
 * a per-bucket cost and limit, nor one limit under several keys).
 */
export class EnvoyBuckets {
  private readonly units = new Map<EnvoyUnit, LimiterInternals>();
  /** Token buckets by unit, rate and burst, bound when a rule first asks for one. */
  private readonly tokenBuckets = new Map<string, LimiterInternals>();
  /** Each limiter's buckets as steps: a synchronous store's answer without a promise. */
  private readonly steps = new Map<LimiterInternals, BucketSteps>();
  /** The store, when it decides synchronously (the memory store): no timer, no failure policy. */
  private readonly sync: SyncStore | undefined;
  /** What a deadline's error names: the store, never a key. */
  private readonly what: string;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {
    for (const unit of ENVOY_UNITS)
      this.units.set(
        unit,
        this.limiter(nameOf(unit), fixedWindow({ limit: MAX_COUNT, window: ENVOY_UNIT_WINDOWS[unit] })),
      );
    this.sync = isSyncStore(store) ? store : undefined;
    this.what = `the ${store.kind} store (envoy)`;
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
    // Only a store call that may fail needs them (for its timeout and failure policy): on the
    // memory store a decision allocates no more than before.
    const limiters: LimiterInternals[] | undefined = this.sync === undefined ? [] : undefined;
    const index: number[] = [];
    asks.forEach((ask, i) => {
      if (ask.limit === 0) return;
      const limiter = this.limiterOf(ask);
      // With a refusal certain, the others are only looked at.
      entries.push({
        buckets: limiter.buckets,
        key: ask.key,
        cost: zero ? 0 : ask.cost,
        limit: ask.burst === undefined ? ask.limit : undefined,
      });
      limiters?.push(limiter);
      index.push(i);
    });
    const decided = entries.length === 0 ? [] : await this.call(entries, limiters, now);
    const decisions: Decision[] = asks.map((ask) => refusedAtZero(ask, now));
    decided.forEach((decision, j) => (decisions[index[j]!] = decision));
    return decisions;
  }

  /** Charges `cost` to a bucket whatever it holds (a debit after the fact), past the limit if need be. */
  async charge(ask: Ask, now: number): Promise<void> {
    const limiter = this.limiterOf(ask);
    const until = now + 1;
    const adjusted = this.steps.get(limiter)!.adjust(ask.key, { delta: ask.cost, now, takenAt: now, until });
    // Settled already on a synchronous store: no timer, no failure policy.
    if (!isPending(adjusted)) return;
    await withDeadline(adjusted, limiter.timeoutMs, this.what).then(
      () => limiter[storeAnswered](),
      (error: unknown) => failed(limiter, error, ask.key, ask.cost, now),
    );
  }

  close(): void {
    for (const limiter of this.units.values()) limiter.close();
    for (const limiter of this.tokenBuckets.values()) limiter.close();
  }

  /** The name of the ask's buckets: two asks of one name and key count in one bucket. */
  bucketName(ask: Ask): string {
    return this.limiterOf(ask).name;
  }

  /** The ask's limiter: its unit's window, or the token bucket of its rate and burst. */
  private limiterOf(ask: Ask): LimiterInternals {
    if (ask.burst === undefined) return this.units.get(ask.unit)!;
    const name = `envoy:tb:${ask.unit.toLowerCase()}:${ask.limit}:${ask.burst}`;
    let limiter = this.tokenBuckets.get(name);
    if (limiter === undefined) {
      const period = `${UNIT_SECONDS[ask.unit]}s` as Duration;
      limiter = this.limiter(name, tokenBucket({ limit: ask.limit, period, burst: ask.burst }));
      this.tokenBuckets.set(name, limiter);
    }
    return limiter;
  }

  private limiter(name: string, rule: Rule): LimiterInternals {
    const { store, clock } = this;
    const limiter = createLimiter({
      name,
      rule,
      store,
      clock,
      failure: 'closed',
      logger: silent,
    }) as LimiterInternals;
    this.steps.set(limiter, stepsOf(limiter.buckets));
    return limiter;
  }

  /**
   * One store call for all entries: synchronous on the memory store; otherwise bounded by the
   * first limiter's timeout, and failing by its failure policy (closed: a 503 error).
   */
  private call(
    entries: TakeEntry[],
    limiters: readonly LimiterInternals[] | undefined,
    now: number,
  ): Promise<Decision[]> | Decision[] {
    if (this.sync !== undefined) return this.sync.takeAllSync(entries, now);
    // Collected whenever the store is not synchronous: the entries' limiters, in order.
    const asked = limiters!;
    const first = asked[0]!;
    return withDeadline(this.store.takeAll(entries, now), first.timeoutMs, this.what).then(
      (decisions) => {
        for (const limiter of asked) limiter[storeAnswered]();
        return decisions;
      },
      (error: unknown) => failed(first, error, entries[0]!.key, entries[0]!.cost, now),
    );
  }
}

/**
 * A failed store call as its limiter's failure policy answers it: `closed` throws the store's
 * 503 (SLUICE_STORE_UNAVAILABLE, _TIMEOUT or _OVERLOADED, naming no key), and an error that is
 * no store failure passes as it is.
 */
function failed(limiter: LimiterInternals, error: unknown, key: string, cost: number, now: number): never {
  limiter[decideOnFailure](error, { key, cost, now, limit: undefined });
  // Unreachable: a closed limiter never admits without the store.
  throw error;
}

function nameOf(unit: EnvoyUnit): string {
  return `envoy:${unit.toLowerCase()}`;
}

/** The decision for an ask of limit 0: always over (a block list), charged nothing. */
function refusedAtZero(ask: Ask, now: number): Decision {
  const windowMs = windowMsOf(ask.unit);
  const resetMs = windowMs - (now % windowMs);
  return makeDecision({
    allowed: false,
    name: '',
    limit: 0,
    capacity: 0,
    remaining: 0,
    cost: ask.cost,
    retryAfterMs: resetMs,
    resetMs,
    windowMs,
  });
}

function windowMsOf(unit: EnvoyUnit): number {
  return UNIT_SECONDS[unit] * 1000;
}
