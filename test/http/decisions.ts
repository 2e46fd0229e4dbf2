/** Decisions for the header and problem tests, built the way stores build them. */
import { makeDecision, type Decision } from '../../src/core/decision.js';

/** A decision of limit `name` with the given fields (a 60 s window unless told). */
export function decision(
  name: string,
  fields: {
    allowed: boolean;
    limit: number;
    remaining: number;
    retryAfterMs?: number;
    resetMs: number;
    windowMs?: number;
  },
): Decision {
  const { allowed, limit, remaining, retryAfterMs = 0, resetMs, windowMs = 60_000 } = fields;
  return makeDecision({
    allowed,
    name,
    limit,
    capacity: limit,
    remaining,
    cost: 1,
    retryAfterMs,
    resetMs,
    windowMs,
  });
}

/** What a limiter under the `open` failure policy returns: admitted, and no bucket decided. */
export function failOpen(name: string): Decision {
  return {
    ...decision(name, { allowed: true, limit: 10, remaining: 0, resetMs: 0, windowMs: 0 }),
    source: 'fail-open',
  };
}
