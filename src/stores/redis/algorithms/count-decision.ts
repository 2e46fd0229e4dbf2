import { makeDecision, type Decision } from '../../../core/decision.js';
import type { ScriptDecision } from './algorithm.js';

/**
 * The decision of a count per window (fixed and sliding windows, calendar quotas) from its
 * script's reply: the count the window admits, the per-call one or else `ruleLimit`, is both the
 * limit and the capacity. `windowMs` is the window's length as the encoder knows it.
 */
export function countDecision(
  reply: ScriptDecision,
  name: string,
  ruleLimit: number,
  windowMs: number,
): Decision {
  const quota = typeof reply.limit === 'number' ? reply.limit : ruleLimit;
  return makeDecision({
    allowed: reply.allowed,
    name,
    limit: quota,
    capacity: quota,
    remaining: reply.remaining,
    cost: reply.cost,
    retryAfterMs: reply.retryAfterMs,
    resetMs: reply.resetMs,
    windowMs,
  });
}
