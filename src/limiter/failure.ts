import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { SluiceError, isSluiceError } from '../core/errors.js';
import type { SyncRuleBuckets } from '../stores/contract/store.js';
import type { CallLimit } from '../core/rules/rule.js';
import type { Breaker, BreakerState } from './breaker.js';

/**
 * What a rule does when its store fails or does not answer in time. A store failure is
 * never a 429: the client did nothing wrong. Errors that are the caller's (a bad key, cost or
 * limit, a closed limiter, a bad clock reading) are never store failures: they reach the caller
 * as they are, whatever the policy. An overloaded store (`SLUICE_STORE_OVERLOADED`: too many
 * decisions waiting) is load, not a failure: it is never admitted under `open`; the insurance
 * limiter decides when there is one, otherwise the call throws it (503). A call that timed out
 * while the limiter's breaker is closed (the store keeps answering: the call waited out its time
 * in sluice's own queue or pipeline behind a burst) is load too: `open` does not admit it
 * (`SLUICE_STORE_OVERLOADED`); `open` and `insurance` stand in for a timeout only once the
 * breaker says the store is failing (see `Breaker` in limiter/breaker.ts), and for a connection error at once.
 * - `closed` (default): the call throws `SLUICE_STORE_UNAVAILABLE` / `SLUICE_STORE_TIMEOUT`
 *   (status 503, or 500 with `closedStatus`): nothing is admitted without a decision.
 * - `open`: the request is admitted (explicit opt-in), counted in `stats()` and logged at most
 *   once a minute. For limits whose only job is comfort, never for brute-force protection.
 * - `insurance`: a limiter in this process's memory, with the same rule, decides while the store
 *   fails; the store decides again as soon as it answers. Each process then enforces the limit
 *   on its own (N processes admit up to N times the limit during the outage).
 */
export type FailurePolicy = 'closed' | 'open' | 'insurance';

/** The one method sluice logs through; pino, console and most loggers fit. */
export interface Logger {
  warn(details: Record<string, unknown>, message: string): void;
}

/** Counters of a limiter's store failures, for metrics. */
export interface LimiterStats {
  /** Store calls that failed or timed out. */
  storeFailures: number;
  /** Of those, how many timed out. */
  timeouts: number;
  /** Requests admitted without a decision under `open`. */
  failOpenAdmits: number;
  /** Decisions made by the insurance limiter. */
  insuranceDecisions: number;
  /**
   * Store calls refused as load, not failures (`SLUICE_STORE_OVERLOADED`): too many decisions
   * waiting, or a call that waited out its timeout in the store's queue while the store kept
   * answering others.
   */
  overloads: number;
  /**
   * Of the timeouts, those that came while the breaker was closed (the store still answering):
   * load, never admitted by `open`.
   */
  overloadTimeouts: number;
  /** The breaker's state: `open` while the store is known to be failing. */
  breaker: BreakerState;
  /** How many times the breaker has opened. */
  breakerOpenings: number;
  /** Calls answered by the failure policy without asking the store, because the breaker was open. */
  shortCircuited: number;
}

/**
 * One take as the limiter asked its store: its key, cost, time and per-call limit. Built only
 * when the failure policy must answer it (the store failed, or its breaker is open), or once per
 * reservation, so that a take the store answers allocates nothing for it.
 */
export interface TakeCall {
  readonly key: string;
  readonly cost: number;
  readonly now: number;
  readonly limit: CallLimit | undefined;
}

/** Logs through `console.warn` with a `[sluice]` prefix. */
export const consoleLogger: Logger = {
  warn(details, message) {
    console.warn(`[sluice] ${message}`, details);
  },
};

const LOG_INTERVAL_MS = 60_000;

/**
 * True for errors that mean "the store could not decide" rather than "the caller erred" (a bad
 * argument or key, a closed limiter, a bad clock reading: those propagate, never fail open).
 */
export function isStoreFailure(error: unknown): boolean {
  if (error instanceof SluiceError) return error.code.startsWith('SLUICE_STORE_');
  // Anything else escaping a store (a driver error it did not wrap) is the store failing too.
  return true;
}

/** Applies a rule's {@link FailurePolicy} to one failed store call. */
export class FailureHandler {
  readonly stats: LimiterStats = {
    storeFailures: 0,
    timeouts: 0,
    failOpenAdmits: 0,
    insuranceDecisions: 0,
    overloads: 0,
    overloadTimeouts: 0,
    breaker: 'closed',
    breakerOpenings: 0,
    shortCircuited: 0,
  };
  private lastLogAt = -Infinity;
  private failuresSinceLog = 0;

  constructor(
    private readonly name: string,
    private readonly storeKind: string,
    readonly policy: FailurePolicy,
    private readonly closedStatus: number,
    private readonly insurance: SyncRuleBuckets | undefined,
    private readonly logger: Logger,
    private readonly clock: Clock,
    /** Tells a failing store from a busy one; fed by every take's outcome. */
    readonly breaker: Breaker,
    /** A limit in shadow mode never refuses: a timeout admits even while the store answers. */
    private readonly neverRefuses = false,
  ) {}

  /**
   * The decision for a take whose store call failed with `error`, or a throw under `closed`.
   * Errors that are the caller's (bad key, bad cost) are rethrown as they are.
   */
  decide(error: unknown, take: TakeCall): Decision {
    if (!isStoreFailure(error)) throw error;
    if (isSluiceError(error, 'SLUICE_STORE_OVERLOADED')) return this.overloaded(error, take);
    const stats = this.stats;
    stats.storeFailures++;
    const timedOut = isSluiceError(error, 'SLUICE_STORE_TIMEOUT');
    if (timedOut) stats.timeouts++;
    // A schema error is the store answering that it is not prepared: its own message says what
    // to do, and it tells nothing of the connection, so it does not move the breaker.
    if (!isSluiceError(error, 'SLUICE_STORE_SCHEMA')) {
      const failing = this.breaker.failed(take.now) && this.breaker.madeWhileOpen(take.now);
      if (timedOut && !failing) {
        stats.overloadTimeouts++;
        if (this.policy === 'open' && !this.neverRefuses) return this.overloaded(error, take);
      }
    }
    return this.applyPolicy(error, timedOut, take);
  }

  /** The failure policy's decision for a store known to be failing (or a timeout it decides anyway). */
  private applyPolicy(error: unknown, timedOut: boolean, take: TakeCall): Decision {
    const stats = this.stats;
    this.log(error, `rate-limit store failing; policy "${this.policy}" applies`);
    if (this.policy === 'open') {
      stats.failOpenAdmits++;
      const capacity = this.insuranceCapacity(take.limit);
      return {
        allowed: true,
        name: this.name,
        limit: capacity.limit,
        capacity: capacity.capacity,
        remaining: 0,
        cost: take.cost,
        retryAfterMs: 0,
        retryAfterSeconds: 0,
        resetMs: 0,
        source: 'fail-open',
        windowMs: 0,
      };
    }
    if (this.insurance !== undefined) return this.insured(take);
    if (isSluiceError(error, 'SLUICE_STORE_SCHEMA')) {
      // The store's own message says what to do ("run store.migrate()") and carries no request value.
      throw new SluiceError(
        'SLUICE_STORE_SCHEMA',
        `limit ${JSON.stringify(this.name)}: ${error.message}; failing closed`,
        { cause: error, status: this.closedStatus },
      );
    }
    throw new SluiceError(
      timedOut ? 'SLUICE_STORE_TIMEOUT' : 'SLUICE_STORE_UNAVAILABLE',
      `limit ${JSON.stringify(this.name)}: the ${this.storeKind} store could not decide (${describeFailure(error)}); failing closed`,
      { cause: withheldCause(error), status: this.closedStatus },
    );
  }

  /**
   * The error for a reset (or, with `operation`, a refund or settlement) whose store call failed.
   * No policy can stand in for one (admitting means nothing here, and an insurance limiter cannot
   * change a key in the store), so it fails closed under every policy; it is counted and logged
   * like any store failure.
   */
  resetFailed(error: unknown, operation = 'reset a key'): SluiceError {
    if (!isStoreFailure(error)) return error as SluiceError;
    const code = isSluiceError(error) ? error.code : 'SLUICE_STORE_UNAVAILABLE';
    if (code === 'SLUICE_STORE_OVERLOADED') this.stats.overloads++;
    else this.stats.storeFailures++;
    if (code === 'SLUICE_STORE_TIMEOUT') this.stats.timeouts++;
    this.log(error, `rate-limit store failing; could not ${operation}`);
    return new SluiceError(
      code,
      `limit ${JSON.stringify(this.name)}: the ${this.storeKind} store could not ${operation} (${describeFailure(error)})`,
      { cause: withheldCause(error), status: code === 'SLUICE_STORE_OVERLOADED' ? 503 : this.closedStatus },
    );
  }

  /**
   * A store with too many decisions waiting is busy, not broken: admitting would let a flood
   * through exactly when the store is saturated, so `open` does not apply. The insurance limiter
   * decides when there is one; otherwise the caller gets a 503 it may retry shortly.
   */
  private overloaded(error: SluiceError, take: TakeCall): Decision {
    if (error.code === 'SLUICE_STORE_OVERLOADED') this.stats.overloads++;
    // A limit in shadow mode never refuses, not even under load: it admits as it does on failure.
    if (this.neverRefuses) return this.applyPolicy(error, false, take);
    this.log(error, 'rate-limit store overloaded; no request is admitted without a decision');
    if (this.insurance !== undefined) return this.insured(take);
    throw new SluiceError(
      'SLUICE_STORE_OVERLOADED',
      error.code === 'SLUICE_STORE_OVERLOADED'
        ? `limit ${JSON.stringify(this.name)}: the ${this.storeKind} store is overloaded (${error.message}); not admitted`
        : `limit ${JSON.stringify(this.name)}: a call timed out while the ${this.storeKind} store still answers (load, not a failure); not admitted`,
      { cause: error },
    );
  }

  /**
   * A take the open breaker answers without asking the store: the store is known to be failing,
   * so the policy decides as for a failed call (without counting another failure).
   */
  shortCircuit(take: TakeCall): Decision {
    this.stats.shortCircuited++;
    return this.applyPolicy(breakerOpenError(this.storeKind), false, take);
  }

  private insured({ key, cost, now, limit }: TakeCall): Decision {
    this.stats.insuranceDecisions++;
    return { ...(this.insurance as SyncRuleBuckets).takeSync(key, cost, now, limit), source: 'insurance' };
  }

  private insuranceCapacity(limit: CallLimit | undefined): { limit: number; capacity: number } {
    const rule = this.insurance?.rule;
    if (rule === undefined) {
      if (typeof limit === 'object') return { limit: limit.limit, capacity: limit.burst };
      return { limit: limit ?? 0, capacity: limit ?? 0 };
    }
    return { limit: rule.limitFor(limit), capacity: rule.capacityFor(limit) };
  }

  /**
   * At most one line a minute per limit, and never the key (it may be personal data): the details carry the error's
   * code; only a schema error adds its message, which the store writes without request values.
   */
  private log(error: unknown, message: string): void {
    this.failuresSinceLog++;
    const now = this.clock();
    if (now - this.lastLogAt < LOG_INTERVAL_MS) return;
    this.lastLogAt = now;
    const failures = this.failuresSinceLog;
    this.failuresSinceLog = 0;
    const schema = isSluiceError(error, 'SLUICE_STORE_SCHEMA');
    this.logger.warn(
      {
        limit: this.name,
        store: this.storeKind,
        policy: this.policy,
        failures,
        error: describeFailure(error),
      },
      schema ? `rate-limit store not prepared: ${error.message}; policy "${this.policy}" applies` : message,
    );
  }
}

/** The failure a call answered by an open breaker stands for. */
function breakerOpenError(storeKind: string): SluiceError {
  return new SluiceError(
    'SLUICE_STORE_UNAVAILABLE',
    `the ${storeKind} store is failing (its breaker is open); not asked until a probe succeeds`,
  );
}

/** An error's code (a SluiceError's, a driver's `code` such as a SQLSTATE) or its name: no message text. */
function describeFailure(error: unknown): string {
  if (error instanceof SluiceError) return error.code;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' || typeof code === 'number' ? `${error.name} ${code}` : error.name;
  }
  return typeof error;
}

/**
 * The cause to attach when failing closed. A SluiceError's message is sluice's own and names no
 * request value. Any other error (a driver's, a custom store's) may quote the key or a
 * statement's parameters in its message, so the cause keeps its name, code and stack frames
 * and withholds the message.
 */
function withheldCause(error: unknown): unknown {
  if (error instanceof SluiceError) return error;
  // A thrown non-error value: its type is already in the message.
  if (!(error instanceof Error)) return undefined;
  const summary = `${describeFailure(error)} (message withheld: it may carry request data)`;
  const withheld = new Error(summary);
  withheld.name = error.name;
  const stack = typeof error.stack === 'string' ? error.stack : '';
  const frames = stack.indexOf('\n    at ');
  withheld.stack = `${error.name}: ${summary}${frames === -1 ? '' : stack.slice(frames)}`;
  return withheld;
}
