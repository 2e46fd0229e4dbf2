import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import type { CallLimit, Rule } from '../core/rules/rule.js';
import type { TakeCall } from './failure.js';
import type { Limiter } from './limiter.js';

/*
 * What cascades and the limiter's own modules share of a limiter made by createLimiter, beyond
 * the public Limiter: its failure policy, its events and its breaker, behind symbols.
 */

/** Applies a limiter's failure policy to a failed store call (used by cascades). */
export const decideOnFailure = Symbol('sluice.decideOnFailure');

/** Tells a limiter's breaker that its store answered a call a cascade made for it. */
export const storeAnswered = Symbol('sluice.storeAnswered');

/** A limiter as cascades see it: with access to its failure policy and its breaker. */
export interface LimiterInternals extends Limiter {
  [decideOnFailure](error: unknown, take: TakeCall): Decision;
  /** The store answered a call made for this limiter (its breaker closes, its failures clear). */
  [storeAnswered](): void;
}

/** True for a limiter made by {@link createLimiter} (a cascade needs its failure policy). */
export function isLimiterInternals(value: unknown): value is LimiterInternals {
  return typeof value === 'object' && value !== null && decideOnFailure in value;
}

/**
 * The refusal of a cost that `rule` can never admit (more than a token bucket's burst or a
 * quota's limit): the pure algorithm's answer on an untouched bucket, with `retryAfterMs`
 * Infinity and `remaining` 0. No store is asked: waiting cannot help, and a shared store need
 * not count it.
 *
 * What the bucket holds is then unknown, and the untouched bucket's `remaining` (its whole
 * capacity) would tell the client, in its headers, that it has more than it may hold. 0 is never
 * more than the truth and is the same on every store; asking the store instead would spend a
 * round trip (and a failure policy) on a request that can never pass, which a client could send
 * at will.
 */
export function refusedForGood(
  rule: Rule,
  name: string,
  cost: number,
  now: number,
  limit: CallLimit | undefined,
): Decision {
  const untouched = rule.decide(rule.initialState(now, now), {
    now,
    epoch: now,
    name,
    cost,
    limit,
    commit: false,
  });
  return { ...untouched, remaining: 0 };
}

/** Throws when `limiter` has been closed; the message names the limit, never a key. */
export function assertOpen(limiter: Limiter): void {
  if (limiter.closed) throw closedError(limiter.name);
}

/** The error of a call on a closed limiter: it names the limit, never a key. */
export function closedError(name: string): SluiceError {
  return new SluiceError(
    'SLUICE_CONFIG',
    `limiter ${JSON.stringify(name)} is closed: create a new limiter to use this rule again`,
  );
}

/**
 * What a limit in shadow mode answers for a decision: an admission as it is; a refusal turned
 * into an admission with `source: 'shadow'`, keeping what enforcement would have said
 * (remaining, retryAfterMs, resetMs) for logs and events.
 */
export function shadowOf(decision: Decision): Decision {
  if (decision.allowed) return decision;
  return { ...decision, allowed: true, retryAfterSeconds: 0, source: 'shadow' } as Decision;
}
