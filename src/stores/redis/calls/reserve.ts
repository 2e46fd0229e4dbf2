import type { Decision } from '../../../core/decision.js';
import type { BucketTier } from '../../../core/rules/rule.js';
import { reserveScript, reserveScriptSha } from '../scripts.js';
import { oneKeySpec, pushOneKeyClock, pushTier } from './call-arguments.js';
import type { CallRule } from './call-rule.js';
import { Command, type CallContext, type Pending, type Script, type ScriptCall } from './script-call.js';
import type { Pipeline } from '../pipeline.js';

/*
 * Reservations: each alone, in a call of the reservation script (see scripts.ts), one key. A
 * request's fields: `subject` its rule, `cost`, `limit` the call's tier (or undefined), `detail`
 * the longest wait in ms.
 */

const RESERVATION: Script = { source: reserveScript, sha: reserveScriptSha };

const RESERVE: ScriptCall = { alone: true, encode, decode };

/**
 * Reserves a slot for a take of `cost` at most `maxWaitMs` ahead (see `RuleBuckets.reserve`):
 * one call of its own, with the deadline and the failures of a take; Redis runs the calls one
 * at a time, so reservations queue in the order it runs them. The decision carries the wait.
 * `tier`: the call's (undefined: none).
 */
export function queueReservation(
  pipeline: Pipeline,
  rule: CallRule,
  key: string,
  cost: number,
  now: number,
  maxWaitMs: number,
  tier: BucketTier | undefined,
  slot: number,
): Promise<Decision> {
  return pipeline.enqueue(RESERVE, key, 1, now, slot, rule, cost, tier, maxWaitMs);
}

function encode(requests: Pending[], context: CallContext): Command {
  const request = requests[0]!;
  const rule = request.subject as CallRule;
  context.startClocks(requests);
  const spec = oneKeySpec(rule, request, context);
  const args = [String(request.cost), String(request.detail as number)];
  for (let i = 0; i < spec.length; i++) args.push(spec[i]!);
  pushTier(args, request.limit as BucketTier | undefined);
  pushOneKeyClock(args, request, context);
  return new Command(requests, [request.key], args, 5, RESERVATION, request.deadline);
}

/** `[now, retry, remaining, reset, waited]`: an admitted decision carries its wait. */
function decode(requests: readonly Pending[], reply: readonly unknown[]): void {
  const request = requests[0]!;
  const rule = request.subject as CallRule;
  const retry = Number(reply[1]);
  const decision = rule.decision({
    allowed: retry === 0,
    remaining: Number(reply[2]),
    retryAfterMs: retry === 0 ? Number(reply[4]) : retry < 0 ? Infinity : retry,
    resetMs: Number(reply[3]),
    windowMs: 0,
    cost: request.cost,
    limit: request.limit as BucketTier | undefined,
  });
  request.resolve(decision as never);
}
