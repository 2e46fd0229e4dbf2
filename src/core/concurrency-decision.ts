import { retryAfterSecondsOf, type Decision } from './decision.js';

/**
 * A decision's fields as a class to extend, writable while a constructor fills them: declared
 * once, on {@link Decision}. No code and no fields of its own: the subclass's constructor writes
 * every field, in the order of every decision.
 */
const DecisionFields = class {} as new () => { -readonly [F in keyof Decision]: Decision[F] };

/**
 * A concurrency limit's decision (a lease granted or refused) of `max` slots, cost 1 and no
 * window: the fields and their order of every decision, in a class of its own so that header
 * writers can tell it from a rate's without a field more (`isConcurrentDecision`), and without a
 * WeakSet entry per decision, which costs the garbage collector more than it seems on a hot path.
 * Headers describe it with the IETF draft's `qu="concurrent-requests"` quota unit and no window,
 * and leave it out of the legacy `X-RateLimit-*` set, which has no way to say "in flight".
 *
 * @example new ConcurrencyDecision(false, 'exports', 2, 0, 45_000, 55_000)
 */
export class ConcurrencyDecision extends DecisionFields {
  constructor(
    allowed: boolean,
    name: string,
    max: number,
    remaining: number,
    retryAfterMs: number,
    resetMs: number,
  ) {
    super();
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
