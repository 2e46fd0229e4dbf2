import type { Decision } from '../core/decision.js';
import { isSluiceError } from '../core/errors.js';
import type { DecisionEvents, DecisionOutcome } from './events.js';
import type { Limiter } from './limiter.js';
import { shadowOf } from './limiter-internals.js';

/** The outcome a decision reports: who decided, and whether it admitted. */
export function outcomeOf(decision: Decision): DecisionOutcome {
  if (decision.source === 'fail-open') return 'failed-open';
  if (decision.source === 'insurance') return 'insurance';
  if (decision.source === 'shadow') return 'shadow-refused';
  return decision.allowed ? 'admitted' : 'refused';
}

/** Emits one decision of rule `rule` on a `store` store; callers check `events.listening` first. */
export function reportDecision(
  events: DecisionEvents,
  rule: string,
  store: string,
  key: string,
  decision: Decision,
  storeLatencyMs: number,
): void {
  const outcome = outcomeOf(decision);
  events.emit({
    rule,
    outcome,
    store,
    cost: decision.cost,
    remaining: decision.remaining,
    retryAfterMs: decision.retryAfterMs,
    storeLatencyMs,
    keyHash: events.hashFor(outcome, key),
  });
}

/**
 * Emits a take that failed closed: the store failed and the rule's policy refused with a 503 or
 * 500 (the error the caller gets). Errors that are the caller's own (a bad key, a bad cost)
 * are not decisions and report nothing.
 */
export function reportFailure(
  events: DecisionEvents,
  rule: string,
  store: string,
  key: string,
  cost: number,
  error: unknown,
  storeLatencyMs: number,
): void {
  if (!isSluiceError(error) || !error.code.startsWith('SLUICE_STORE_')) return;
  events.emit({
    rule,
    outcome: 'failed-closed',
    store,
    cost,
    remaining: 0,
    retryAfterMs: 0,
    storeLatencyMs,
    keyHash: events.hashFor('failed-closed', key),
  });
}

/**
 * Reports a take of `limiter` to its events: its decision, as its mode answers it, or (`decision`
 * undefined) its failure with `error`. Also for the takes a cascade decided for it (an
 * all-or-nothing take bypasses the limiter). Callers check `events.listening` first.
 */
export function reportTake(
  limiter: Pick<Limiter, 'name' | 'store' | 'mode' | 'events'>,
  key: string,
  cost: number,
  decision: Decision | undefined,
  error: unknown,
  latencyMs: number,
): void {
  const { events, name } = limiter;
  if (decision !== undefined) {
    const reported = limiter.mode === 'shadow' ? shadowOf(decision) : decision;
    reportDecision(events, name, limiter.store.kind, key, reported, latencyMs);
  } else reportFailure(events, name, limiter.store.kind, key, cost, error, latencyMs);
}
