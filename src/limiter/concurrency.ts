import { Breaker, readBreakerOptions } from './breaker.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { ConcurrencyDecision } from '../core/concurrency-decision.js';
import { parseTimerDuration, type Duration } from '../core/duration.js';
import { SluiceError, configError, optionError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import {
  isLeaseStore,
  MAX_LEASES,
  type LeaseBuckets,
  type LeaseGrant,
  type LeaseStore,
} from '../stores/contract/lease-store.js';
import { promised, type MaybePromise } from '../stores/contract/bucket-steps.js';
import { withDeadline } from '../stores/shared/deadline.js';
import { checkRuleName } from '../stores/shared/rule-name.js';
import { checkKey, readClock } from './call-input.js';
import { FailureHandler, consoleLogger, type Logger } from './failure.js';
import { LeaseBook, type Lease } from './leases.js';
import { resolveTimeout } from './store-timeout.js';

export type { Lease } from './leases.js';

/** Options of {@link concurrencyLimit}. */
export interface ConcurrencyLimitOptions {
  /**
   * The limit's name: unique per store (rules and concurrency limits share the names), shown in
   * headers and problem bodies. Letters, digits, `.`, `_`, `-` and `:` only.
   */
  name: string;
  /** The most requests of one key in flight at once: a whole number from 1 to 100,000. */
  max: number;
  /**
   * How long a lease lives when nobody releases it (a process that crashed, a request that hung):
   * each lease ends on its own this long after it was granted. Longer than your slowest request.
   */
  leaseTtl: Duration;
  /** Where leases live: `new MemoryStore()`, a `RedisStore` or a `PostgresStore`. */
  store: LeaseStore;
  /** The clock (a {@link manualClock} in tests); shared stores decide on their own. @default Date.now */
  clock?: Clock;
  /** The longest a store call may take, as a limiter's `timeout`. @default the store's, else "100ms" */
  timeout?: Duration;
  /** Where store failures are logged (at most once a minute, never a key). @default console */
  logger?: Logger;
}

/** An acquisition's answer: the decision, and the lease when it was granted. */
export interface LeaseDecision {
  /**
   * A decision as a take's (the 429 contract's fields): `limit` and `capacity` are `max`,
   * `remaining` the slots left, and a refusal's `retryAfterMs` the time until the earliest lease
   * held expires (a release may free a slot sooner); `resetMs` until the last one does.
   */
  readonly decision: Decision;
  /** The lease to release once the work is done; undefined when refused. */
  readonly lease: Lease | undefined;
}

/** A limit on the requests of one key in flight at once, on any store with leases. */
export interface ConcurrencyLimiter {
  readonly name: string;
  readonly max: number;
  /** A lease's life when not released, in ms. */
  readonly leaseTtlMs: number;
  readonly store: LeaseStore;
  readonly clock: Clock;
  /** The store timeout in ms. */
  readonly timeoutMs: number;
  /**
   * Acquires a lease on `key` when fewer than `max` are held: atomically, one store call. A
   * refusal is a decision, never an exception; a store that fails rejects with its coded error
   * (`SLUICE_STORE_UNAVAILABLE`, `SLUICE_STORE_TIMEOUT`: a 503, nothing is admitted without a
   * lease).
   */
  acquire(key: string): Promise<LeaseDecision>;
  /**
   * Releases `lease`: resolves true when it freed a slot, false when the lease had expired or was
   * released already (releasing twice is harmless). A lease of another limit, a copy or one made
   * by hand is `SLUICE_ARGUMENT`. A release whose store call fails rejects and may be tried again.
   */
  release(lease: Lease): Promise<boolean>;
  /** Frees the limit's name in its store; later calls reject with `SLUICE_CONFIG`. */
  close(): void;
  readonly closed: boolean;
}

const optionKeys = ['name', 'max', 'leaseTtl', 'store', 'clock', 'timeout', 'logger'] as const;

/**
 * A concurrency limit (nginx `limit_conn`): at most `max` requests of a key in flight, each
 * holding a lease from `acquire` until `release`, or until `leaseTtl` has passed when it is
 * never released. The same on every store: memory, Redis, PostgreSQL.
 *
 * @example
 * const exports = concurrencyLimit({ name: 'exports', max: 2, leaseTtl: '5m', store });
 * const { decision, lease } = await exports.acquire(`user:${id}`);
 * if (!lease) return reply429(decision.retryAfterSeconds);
 * try { await runExport(); } finally { await exports.release(lease); }
 */
export function concurrencyLimit(options: ConcurrencyLimitOptions): ConcurrencyLimiter {
  checkOptionKeys('concurrencyLimit', options, optionKeys);
  const { name, max, leaseTtl, store, clock = systemClock, logger = consoleLogger } = options;
  checkRuleName(name, 'concurrencyLimit name');
  if (!Number.isSafeInteger(max) || max < 1 || max > MAX_LEASES)
    throw optionError(
      `concurrencyLimit ${JSON.stringify(name)} max`,
      `a whole number from 1 to ${MAX_LEASES}`,
    );
  if (leaseTtl === undefined)
    throw optionError(`concurrencyLimit ${JSON.stringify(name)} leaseTtl`, 'a duration such as "30s"');
  const ttlMs = parseTimerDuration(leaseTtl, `concurrencyLimit ${JSON.stringify(name)} leaseTtl`);
  if (!isLeaseStore(store))
    throw configError(
      `concurrencyLimit ${JSON.stringify(name)} store`,
      'a store with leases (MemoryStore, RedisStore, PostgresStore)',
      store,
    );
  if (typeof clock !== 'function')
    throw configError(`concurrencyLimit ${JSON.stringify(name)} clock`, 'a function returning ms', clock);
  if (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function')
    throw configError(
      `concurrencyLimit ${JSON.stringify(name)} logger`,
      'an object with a warn method',
      logger,
    );
  const timeoutMs = resolveTimeout(name, options.timeout, store);
  // Always closed: the breaker only tells a timeout under load from a failing store in its stats.
  const breaker = new Breaker(
    readBreakerOptions(`concurrencyLimit ${JSON.stringify(name)}`, undefined),
    clock,
  );
  const handler = new FailureHandler(name, store.kind, 'closed', 503, undefined, logger, clock, breaker);
  return new LeaseLimiter(name, max, ttlMs, store, clock, timeoutMs, handler);
}

/** True for a limit made by {@link concurrencyLimit}. */
export function isConcurrencyLimiter(value: unknown): value is ConcurrencyLimiter {
  return value instanceof LeaseLimiter;
}

class LeaseLimiter implements ConcurrencyLimiter {
  closed = false;
  private readonly buckets: LeaseBuckets;
  private readonly book = new LeaseBook();
  private readonly what: string;
  private readonly selfTimed: boolean;

  constructor(
    readonly name: string,
    readonly max: number,
    readonly leaseTtlMs: number,
    readonly store: LeaseStore,
    readonly clock: Clock,
    readonly timeoutMs: number,
    private readonly handler: FailureHandler,
  ) {
    this.buckets = store.bindLeases(name, max, leaseTtlMs);
    this.what = `the ${store.kind} store (limit ${JSON.stringify(name)})`;
    this.selfTimed = store.timeoutMs === timeoutMs;
  }

  acquire(key: string): Promise<LeaseDecision> {
    return promised(this, this.acquireStep, key, undefined);
  }

  release(lease: Lease): Promise<boolean> {
    return promised(this, this.releaseStep, lease, undefined);
  }

  private acquireStep(key: string): Promise<LeaseDecision> {
    this.assertOpen();
    checkKey(key);
    const now = readClock(this.clock);
    const id = this.book.nextId();
    let pending: Promise<LeaseGrant>;
    try {
      pending = this.bounded(this.buckets.acquire(key, id, now));
    } catch (error) {
      throw this.failure(error, 'acquire a lease');
    }
    // One `then` for both outcomes: a promise less per acquisition than a `catch` and a `then`.
    return pending.then(
      (grant) => ({
        decision: this.decisionOf(grant),
        lease: grant.acquired ? this.book.issue(this.name, key, id, now, this.leaseTtlMs) : undefined,
      }),
      (error: unknown) => {
        throw this.failure(error, 'acquire a lease');
      },
    );
  }

  private releaseStep(lease: Lease): MaybePromise<boolean> {
    this.assertOpen();
    // Released already: harmless, nothing is freed twice.
    if (!this.book.take(lease)) return false;
    let pending: Promise<boolean>;
    try {
      pending = this.bounded(this.buckets.release(lease.key, lease.id, readClock(this.clock)));
    } catch (error) {
      this.book.reopen(lease);
      throw this.failure(error, 'release a lease');
    }
    return pending.catch((error: unknown) => {
      this.book.reopen(lease);
      throw this.failure(error, 'release a lease');
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.store.unbind(this.name);
  }

  private assertOpen(): void {
    if (this.closed)
      throw new SluiceError(
        'SLUICE_CONFIG',
        `concurrency limit ${JSON.stringify(this.name)} is closed: create a new one to use it again`,
      );
  }

  /** A store call within the timeout (the store's own, when it bounds its calls itself). */
  private bounded<T>(pending: Promise<T>): Promise<T> {
    return this.selfTimed ? pending : withDeadline(pending, this.timeoutMs, this.what);
  }

  /** A failed store call as a coded error, logged at most once a minute; a caller's error as it is. */
  private failure(error: unknown, operation: string): unknown {
    return this.handler.resetFailed(error, operation);
  }

  private decisionOf(grant: LeaseGrant): Decision {
    return new ConcurrencyDecision(
      grant.acquired,
      this.name,
      this.max,
      Math.max(0, this.max - grant.held),
      grant.acquired ? 0 : Math.max(1, grant.retryAfterMs),
      Math.max(0, grant.resetMs),
    );
  }
}
