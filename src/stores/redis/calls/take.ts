import type { Decision } from '../../../core/decision.js';
import type { CallLimit } from '../../../core/rules/rule.js';
import {
  decisionScript,
  decisionScriptSha,
  singleDecisionScript,
  singleDecisionScriptSha,
} from '../scripts.js';
import { limitArg, oneKeySpec, pushOneKeyClock, pushTier } from './call-arguments.js';
import { periodsRefused, type CallRule } from './call-rule.js';
import { Command, type CallContext, type Pending, type Script, type ScriptCall } from './script-call.js';
import type { Pipeline } from '../pipeline.js';

/*
 * Takes: single ones and all-or-nothing groups, batched together in calls of the decision script
 * (see scripts.ts), a lone single take in a call of the single decision script. A request's
 * fields: `subject` its rule (null for a group), `cost`, `limit` as sent (a count for a rule
 * counted per window, a token bucket's tier, or undefined), `detail` the group's entries (null
 * for a single take).
 */

/** One entry of an all-or-nothing take, its Redis key already built. */
export interface GroupEntry {
  readonly rule: CallRule;
  readonly key: string;
  readonly cost: number;
  /** As sent: a count for a rule counted per window, a token bucket's tier, or undefined. */
  readonly limit: CallLimit | undefined;
}

const DECISION: Script = { source: decisionScript, sha: decisionScriptSha };
const SINGLE_DECISION: Script = { source: singleDecisionScript, sha: singleDecisionScriptSha };

const TAKE: ScriptCall = { alone: false, encode, decode };

/** A single take (cost 0: peek). `now` is ignored on the server's clock. */
export function queueTake(
  pipeline: Pipeline,
  rule: CallRule,
  key: string,
  cost: number,
  now: number,
  limit: CallLimit | undefined,
  slot: number,
): Promise<Decision> {
  return pipeline.enqueue(TAKE, key, 1, now, slot, rule, cost, limit, null);
}

/** An all-or-nothing take; every key must lie in `slot` on a Cluster. */
export function queueGroup(
  pipeline: Pipeline,
  entries: readonly GroupEntry[],
  now: number,
  slot: number,
): Promise<Decision[]> {
  return pipeline.enqueue(TAKE, '', entries.length, now, slot, null, 0, undefined, entries);
}

function encode(requests: Pending[], context: CallContext): Command {
  if (requests.length === 1 && requests[0]!.detail === null) return encodeSingle(requests, context);
  const { serverClock, slackMs } = context;
  const keys: string[] = [];
  // The rules' parameters first, each once (see scripts.ts), then the entries.
  const args: string[] = [serverClock ? '' : String(slackMs), '', ''];
  const refs = new Map<readonly string[], string>();
  const entries: string[] = [];
  let replyLength = 1;
  const estimate = Date.now() + context.offsetMs;
  const deadline = context.startClocks(requests);
  // Consecutive single takes alike (rule, cost, limit, and `now` on the caller's clock) go as
  // one run: their keys, and their entry once.
  let run: Pending | undefined;
  let runLength = 0;
  const closeRun = () => {
    if (run === undefined) return;
    const rule = run.subject as CallRule;
    const limit = run.limit as CallLimit | undefined;
    if (runLength > 1) entries.push('0', String(runLength));
    entries.push(specRef(rule, serverClock ? estimate : run.now, args, refs));
    if (!serverClock) entries.push(String(run.now));
    const tiered = typeof limit === 'object';
    entries.push(String(tiered ? -1 - run.cost : run.cost));
    if (rule.callLimit) entries.push(limitArg(limit));
    if (tiered) pushTier(entries, limit);
    run = undefined;
  };
  for (const request of requests) {
    const group = request.detail as readonly GroupEntry[] | null;
    if (group === null) {
      const rule = request.subject as CallRule;
      keys.push(request.key);
      replyLength += rule.replyWidth;
      if (
        run !== undefined &&
        run.subject === rule &&
        run.cost === request.cost &&
        run.limit === request.limit &&
        (serverClock || run.now === request.now)
      ) {
        runLength++;
        continue;
      }
      closeRun();
      run = request;
      runLength = 1;
    } else {
      closeRun();
      const now = serverClock ? estimate : request.now;
      entries.push(String(-group.length));
      if (!serverClock) entries.push(String(request.now));
      for (const entry of group) {
        const rule = entry.rule;
        keys.push(entry.key);
        const tiered = typeof entry.limit === 'object';
        entries.push(specRef(rule, now, args, refs), String(tiered ? -1 - entry.cost : entry.cost));
        if (rule.callLimit) entries.push(limitArg(entry.limit));
        if (tiered) pushTier(entries, entry.limit);
        replyLength += rule.replyWidth;
      }
    }
  }
  closeRun();
  args[1] = context.serverDeadline(deadline);
  args[2] = String(args.length - 3);
  for (let i = 0; i < entries.length; i++) args.push(entries[i]!);
  return new Command(requests, keys, args, replyLength, DECISION, deadline);
}

/** A lone single take: {@link singleDecisionScript}, the same decision for less work. */
function encodeSingle(requests: Pending[], context: CallContext): Command {
  const request = requests[0]!;
  const rule = request.subject as CallRule;
  const limit = request.limit as CallLimit | undefined;
  context.startClocks(requests);
  const spec = oneKeySpec(rule, request, context);
  const args = [String(request.cost)];
  for (let i = 0; i < spec.length; i++) args.push(spec[i]!);
  if (rule.callLimit) args.push(limitArg(limit));
  pushTier(args, limit);
  pushOneKeyClock(args, request, context);
  const replyLength = 1 + rule.replyWidth;
  return new Command(requests, [request.key], args, replyLength, SINGLE_DECISION, request.deadline);
}

/** `[now, then per decision: retry, remaining, reset (, window)]`, in the order sent. */
function decode(requests: readonly Pending[], reply: readonly unknown[], context: CallContext): void {
  let o = 1;
  for (const request of requests) {
    const group = request.detail as readonly GroupEntry[] | null;
    // -3 in the first entry: a group the script did not evaluate.
    const failed = Number(reply[o]) === -3;
    if (group === null) {
      const rule = request.subject as CallRule;
      if (failed) periodsRefused(request, context);
      else {
        const limit = request.limit as CallLimit | undefined;
        request.resolve(decisionAt(reply, o, rule, request.cost, limit) as never);
      }
      o += rule.replyWidth;
    } else {
      const decisions: Decision[] = [];
      for (const entry of group) {
        if (!failed) decisions.push(decisionAt(reply, o, entry.rule, entry.cost, entry.limit));
        o += entry.rule.replyWidth;
      }
      if (failed) periodsRefused(request, context);
      else request.resolve(decisions as never);
    }
  }
}

function decisionAt(
  reply: readonly unknown[],
  o: number,
  rule: CallRule,
  cost: number,
  limit: CallLimit | undefined,
): Decision {
  const retry = Number(reply[o]);
  return rule.decision({
    allowed: retry === 0,
    remaining: Number(reply[o + 1]),
    retryAfterMs: retry < 0 ? Infinity : retry,
    resetMs: Number(reply[o + 2]),
    windowMs: rule.replyWidth === 4 ? Number(reply[o + 3]) : 0,
    cost,
    limit,
  });
}

/** The index in ARGV of `rule`'s parameters, adding them to `args` the first time. */
function specRef(rule: CallRule, now: number, args: string[], refs: Map<readonly string[], string>): string {
  const spec = rule.spec(now);
  let ref = refs.get(spec);
  if (ref === undefined) {
    ref = String(args.length + 1);
    refs.set(spec, ref);
    for (let i = 0; i < spec.length; i++) args.push(spec[i]!);
  }
  return ref;
}
