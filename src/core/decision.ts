/**
 * What one limit said about one request. A refusal is a value, never an exception: "over the
 * limit" is an ordinary outcome of a rate limiter, not an error.
 *
 * Times are relative to the moment of the decision, in milliseconds, so they mean the same on
 * every node whatever its clock says.
 */
interface DecisionFields {
  /** The name of the limit that decided (the limiter's `name`). Never holds the key. */
  readonly name: string;
  /** The limit per period (token bucket) or per calendar window (quota) that applied. */
  readonly limit: number;
  /** The most that can be taken at once: the bucket's `burst`, or the quota's limit. */
  readonly capacity: number;
  /**
   * Units left after this decision. For an admitted take, what is left after it; for a refusal,
   * what is there now (less than the cost asked for). Never negative.
   */
  readonly remaining: number;
  /** The cost this decision asked for (0 for a peek). */
  readonly cost: number;
  /**
   * Milliseconds until a take of the same cost can succeed: 0 when admitted. `Infinity` when the
   * cost is larger than the capacity, so waiting can never help.
   */
  readonly retryAfterMs: number;
  /**
   * `retryAfterMs` in whole seconds for a `Retry-After` header: rounded up and at least 1 when
   * refused (a client told "0" would retry at once); 0 when admitted; `Infinity` as above.
   */
  readonly retryAfterSeconds: number;
  /** Milliseconds until the bucket is full again (token bucket) or the window resets (quota). */
  readonly resetMs: number;
  /**
   * Who decided: `store` normally; `insurance` when the store failed and the rule's in-memory
   * insurance limiter decided; `fail-open` when the store failed and the rule admits on failure;
   * `shadow` when a limit in shadow mode would have refused and admitted instead (the other
   * fields, `retryAfterMs` included, say what enforcement would have said).
   */
  readonly source: DecisionSource;
  /**
   * The window the limit describes, in ms: the period of a token bucket, the length of the
   * current calendar day of a quota (23, 24 or 25 hours). 0 when unknown. Used for the
   * `w` parameter of the IETF RateLimit-Policy field.
   */
  readonly windowMs: number;
}

/** Who made a decision; see {@link Decision}. */
export type DecisionSource = 'store' | 'insurance' | 'fail-open' | 'shadow';

/** A take that was admitted (and charged, unless it was a peek). */
export interface AllowedDecision extends DecisionFields {
  readonly allowed: true;
}

/** A take that was refused; by default nothing was charged (no debt). */
export interface RefusedDecision extends DecisionFields {
  readonly allowed: false;
}

/**
 * The outcome of one take: `allowed` discriminates.
 *
 * @example
 * const d = login.takeSync(key);
 * if (!d.allowed) return reply429(d.retryAfterSeconds);
 */
export type Decision = AllowedDecision | RefusedDecision;

/**
 * A decision's `retryAfterSeconds`: 0 when admitted, else its retry time rounded up to whole
 * seconds and at least 1 (Retry-After 0 would invite an immediate retry).
 */
export function retryAfterSecondsOf(allowed: boolean, retryAfterMs: number): number {
  return allowed ? 0 : retryAfterMs <= 1000 ? 1 : Math.ceil(retryAfterMs / 1000);
}

/**
 * What {@link makeDecision} builds a decision from: every field of a {@link Decision} but those
 * it derives (`retryAfterSeconds` from `retryAfterMs`; `source`, always `store`), by name, so
 * that two numbers cannot be swapped unnoticed.
 */
export interface DecisionParts extends Pick<
  DecisionFields,
  'name' | 'limit' | 'capacity' | 'remaining' | 'cost' | 'retryAfterMs' | 'resetMs' | 'windowMs'
> {
  /** Whether the take was admitted. */
  readonly allowed: boolean;
}

/**
 * Builds a decision. Every decision has this one shape (same fields, same order), which keeps the
 * hot path monomorphic. The decision is written field by field from `parts`, never spread, so
 * that it keeps that shape whatever else `parts` carries.
 */
export function makeDecision(parts: DecisionParts): Decision {
  return {
    allowed: parts.allowed,
    name: parts.name,
    limit: parts.limit,
    capacity: parts.capacity,
    remaining: parts.remaining,
    cost: parts.cost,
    retryAfterMs: parts.retryAfterMs,
    retryAfterSeconds: retryAfterSecondsOf(parts.allowed, parts.retryAfterMs),
    resetMs: parts.resetMs,
    source: 'store',
    windowMs: parts.windowMs,
  } as Decision;
}
