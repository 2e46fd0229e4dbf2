import type { BucketTier } from '../../../core/rules/rule.js';
import { adjustScript, adjustScriptSha } from '../adjust-scripts.js';
import { oneKeySpec, pushOneKeyClock, pushTier } from './call-arguments.js';
import { periodsRefused, type CallRule } from './call-rule.js';
import { Command, type CallContext, type Pending, type Script, type ScriptCall } from './script-call.js';
import type { Pipeline } from '../pipeline.js';

/*
 * Adjustments: each alone, in a call of the adjustment script (see adjust-scripts.ts), one key
 * and its reset marker. A request's fields: `subject` its rule, `limit` the take's tier (or
 * undefined), `detail` the {@link Adjustment}.
 */

/**
 * What an adjustment settles: `delta` units (a refund below 0) of a take made at `takenAt`,
 * whose units a token bucket had refilled by `until`.
 */
export interface Adjustment {
  /** Units to give back (below 0) or to charge more. */
  readonly delta: number;
  /** The app's clock at the take (ms since the Unix epoch). */
  readonly takenAt: number;
  /** The take's time plus its decision's `resetMs`, on the app's clock. */
  readonly until: number;
  /** The key's reset marker (see `resetScript`), in the bucket's slot. */
  readonly marker: string;
  /** How long the rule's reset markers live (see `refundHorizonMs`). */
  readonly horizonMs: number;
}

const ADJUSTMENT: Script = { source: adjustScript, sha: adjustScriptSha };

const ADJUST: ScriptCall = { alone: true, encode, decode };

/**
 * Settles `adjustment` of a take of `key`, its times on the app's clock (see
 * `RuleBuckets.adjust`), under the take's tier (undefined: none): one call of its own, with the
 * deadline and the failures of a take. `now` is ignored on the server's clock; `slot` is the
 * key's Cluster slot (0 without a cluster).
 */
export function queueAdjustment(
  pipeline: Pipeline,
  rule: CallRule,
  key: string,
  now: number,
  tier: BucketTier | undefined,
  slot: number,
  adjustment: Adjustment,
): Promise<void> {
  return pipeline.enqueue(ADJUST, key, 1, now, slot, rule, 0, tier, adjustment);
}

/**
 * On the server's clock the take's time and `until` are translated to the server's with the
 * measured offset, which is short of the true one (see server-clock-offset.ts): the window found
 * for the take is never later than the one it was charged in, and `until` never later than the
 * server's end of the take's units, so a refund gives back at most what it should (a token
 * bucket keeps up to the offset's error of the take). For the same reason the take's time sent is
 * never later than the server's time when the take ran, so a refund of a take made before a
 * reset is always found to be so (one made shortly after it may be too: it then gives nothing
 * back, the safe side).
 */
function encode(requests: Pending[], context: CallContext): Command {
  const request = requests[0]!;
  const rule = request.subject as CallRule;
  const { delta, takenAt, until, marker, horizonMs } = request.detail as Adjustment;
  context.startClocks(requests);
  const offset = context.serverClock ? context.offsetMs : 0;
  const spec = oneKeySpec(rule, request, context);
  const args = [
    String(delta),
    String(rule.windowOf(takenAt + offset)),
    String(until + offset),
    String(takenAt + offset),
    String(horizonMs),
  ];
  for (let i = 0; i < spec.length; i++) args.push(spec[i]!);
  pushTier(args, request.limit as BucketTier | undefined);
  pushOneKeyClock(args, request, context);
  return new Command(requests, [request.key, marker], args, 2, ADJUSTMENT, request.deadline);
}

/** `[now, status]`: done, or -3, a calendar's periods that did not hold the server's time. */
function decode(requests: readonly Pending[], reply: readonly unknown[], context: CallContext): void {
  const request = requests[0]!;
  if (Number(reply[1]) === -3) periodsRefused(request, context);
  else request.resolve(undefined as never);
}
