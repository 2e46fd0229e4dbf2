import type { RuleEncoder } from '../algorithms/index.js';
import { unavailable } from '../errors.js';
import type { CallContext, Pending } from './script-call.js';

/**
 * What the calls of a rule (take, adjust, reserve) need from its buckets: its encoder's side of
 * the scripts (see algorithms/algorithm.ts), whether its entries carry a per-call limit, and
 * how many integers of a reply each of its decisions takes (3, or 4 with the window's length).
 */
export interface CallRule extends Pick<RuleEncoder, 'spec' | 'timed' | 'windowOf' | 'decision'> {
  readonly callLimit: boolean;
  readonly replyWidth: number;
}

/**
 * Answers a request the script did not evaluate (status -3, nothing changed): server and Node
 * disagree on a calendar's period by more than a period. The offset to the server's clock has
 * just been learnt from this reply, so one retry sends the right periods.
 */
export function periodsRefused(request: Pending, context: CallContext): void {
  if (context.retryOnce(request)) return;
  request.reject(unavailable('clock disagrees with the calendar periods sent to it'));
}
