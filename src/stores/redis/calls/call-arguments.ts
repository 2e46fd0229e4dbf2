import type { CallLimit } from '../../../core/rules/rule.js';
import type { CallRule } from './call-rule.js';
import type { CallContext, Pending } from './script-call.js';

/*
 * Arguments several calls send alike (see scripts.ts for where each goes).
 */

/**
 * The rule's parameters for a one-key script (a lone take, an adjustment, a reservation): only a
 * calendar's depend on the time (its periods), read at the server's time as best known, or at
 * the caller's `now`.
 */
export function oneKeySpec(rule: CallRule, request: Pending, context: CallContext): readonly string[] {
  if (!rule.timed) return rule.spec(0);
  return rule.spec(context.serverClock ? Date.now() + context.offsetMs : request.now);
}

/**
 * Appends a one-key script's clock: on the server's clock the call's deadline there, on the
 * caller's the slack and the request's `now`. The request's clock has started.
 */
export function pushOneKeyClock(args: string[], request: Pending, context: CallContext): void {
  if (context.serverClock) args.push(context.serverDeadline(request.deadline));
  else args.push(String(context.slackMs), String(request.now));
}

/** A per-call count as an argument: empty for none. */
export function limitArg(limit: CallLimit | undefined): string {
  return limit === undefined ? '' : String(limit);
}

/**
 * Appends a per-call tier's rate, period and burst (see scripts.ts), when `limit` is one: the
 * rule's buckets send a tier only for a token bucket, and only one that differs from the rule.
 */
export function pushTier(args: string[], limit: CallLimit | undefined): void {
  if (typeof limit === 'object') args.push(String(limit.limit), String(limit.periodMs), String(limit.burst));
}
