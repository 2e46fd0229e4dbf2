import { retryAfterSecondsOf, type Decision, type DecisionSource } from './decision.js';

/**
 * A concurrency limit's decision (a lease granted or refused): the fields and their order of
 * every decision, in a class of its own so that header writers can tell it from a rate's
 * without a field more (`isConcurrentDecision`), and without a WeakSet entry per decision, which
 * costs the garbage collector more than it seems on a hot path. Headers describe it with the IETF
 * draft's `qu="concurrent-requests"` quota unit and no window, and leave it out of the legacy
 * `X-RateLimit-*` set, which has no way to say "in flight".
 */
class ConcurrencyDecision {
  readonly allowed: boolean;
  readonly name: string;
  readonly limit: number;
  readonly capacity: number;
  readonly remaining: number;
  readonly cost: number;
  readonly retryAfterMs: number;
  readonly retryAfterSeconds: number;
  readonly resetMs: number;
  readonly source: DecisionSource;
  readonly windowMs: number;

  constructor(
    allowed: boolean,
    name: string,
    max: number,
    remaining: number,
    retryAfterMs: number,
    resetMs: number,
  ) {
    this.allowed = allowed;
    this.name = name;
    this.limit = max;
    this.capacity = max;
    this.remaining = remaining;
    this.cost = 1;
    this.retryAfterMs = retryAfterMs;
    this.retryAfterSeconds = retryAfterSecondsOf(allowed, retryAfterMs);
    this.resetMs = resetMs;
    this.source = 'store';
    this.windowMs = 0;
  }
}

/**
 * The decision of a concurrency limit of `max` slots: cost 1, no window.
 *
 * @example concurrencyDecision(false, 'exports', 2, 0, 45_000, 55_000)
 */
export function concurrencyDecision(
  allowed: boolean,
  name: string,
  max: number,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
): Decision {
  return new ConcurrencyDecision(allowed, name, max, remaining, retryAfterMs, resetMs) as Decision;
}

/**
 * True for a decision of a concurrency limit.
 *
 * @example
 * if (isConcurrentDecision(decision)) console.log('requests in flight');
 */
export function isConcurrentDecision(decision: Decision): boolean {
  // A concurrency decision has no window: a rate decision with one is told apart without
  // walking its prototype chain (this runs for every decision a response describes).
  return decision.windowMs === 0 && decision instanceof ConcurrencyDecision;
}
