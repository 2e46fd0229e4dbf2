import type { Decision } from '../core/decision.js';
import type { Duration } from '../core/duration.js';
import type { Limiter, TakeOptions } from '../limiter/limiter.js';
import type { Receipt } from '../limiter/receipts.js';
import type { WaitedDecision } from '../limiter/wait-for-slot.js';

/** What the limits of a request in delay mode said, once every wait is over. */
export interface DelayedTake {
  /** The decisions, in the limits' order; a refusal among them, or none refused. */
  readonly decisions: Decision[];
  /** The admitted calls' receipts, in order (none after a refusal: they were given back). */
  readonly receipts: Receipt[];
  /** True when the client went away while waiting: every reservation was given back. */
  readonly gone: boolean;
}

/** Why a wait was cut short: the client went away, or another limit refused or failed. */
const clientGone = new Error('the client went away while waiting for a slot');
const cutShort = new Error('another limit of the request refused or failed');

/** One limit's call, or a decision the request was charged already (a limit applied twice). */
export interface DelayedCall {
  readonly limiter: Limiter;
  readonly key: string;
  /** The take's options (cost and the key's own parameters), undefined for a cost of 1 and none. */
  readonly options: TakeOptions | undefined;
  /** The decision of an earlier charge of this limit and key on this request, if any. */
  readonly earlier: Decision | undefined;
}

/**
 * The takes of a request in delay mode: every limit reserves its slot at once (in parallel) and
 * the request waits for the latest. A refusal, a failure or the client leaving (`signal`) cuts
 * every other wait short and gives every reservation back, so a request that does not go on is
 * charged nothing; a failure rejects with its error once the others are given back.
 */
export async function takeDelayed(
  calls: readonly DelayedCall[],
  cost: number,
  maxWait: Duration,
  signal: AbortSignal | undefined,
): Promise<DelayedTake> {
  if (signal?.aborted === true) return { decisions: [], receipts: [], gone: true };
  const waits = new AbortController();
  const leave = (): void => waits.abort(clientGone);
  signal?.addEventListener('abort', leave, { once: true });
  const pending = calls.map((call) =>
    call.earlier !== undefined
      ? Promise.resolve<WaitedDecision>({ decision: call.earlier, receipt: undefined, waitedMs: 0 })
      : call.limiter.takeOrWait(call.key, { ...call.options, maxWait, cost, signal: waits.signal }).then(
          (taken) => {
            if (!taken.decision.allowed) waits.abort(cutShort);
            return taken;
          },
          (error: unknown) => {
            waits.abort(cutShort);
            throw error;
          },
        ),
  );
  const settled = await Promise.allSettled(pending);
  signal?.removeEventListener('abort', leave);
  const decisions: Decision[] = [];
  const receipts: Receipt[] = [];
  const refunds: (() => Promise<void>)[] = [];
  let failure: { error: unknown } | undefined;
  let refused = false;
  for (let i = 0; i < settled.length; i++) {
    const outcome = settled[i]!;
    if (outcome.status === 'rejected') {
      const reason: unknown = outcome.reason;
      if (reason !== clientGone && reason !== cutShort && failure === undefined) failure = { error: reason };
      continue;
    }
    const { decision, receipt } = outcome.value;
    decisions.push(decision);
    if (!decision.allowed) refused = true;
    if (receipt === undefined) continue;
    receipts.push(receipt);
    const limiter = calls[i]!.limiter;
    refunds.push(() => limiter.refund(receipt));
  }
  const gone = waits.signal.reason === clientGone;
  // The calls admitted at once, before the others were cut short, give their charge back too.
  if (refused || failure !== undefined || gone) await Promise.allSettled(refunds.map((refund) => refund()));
  if (failure !== undefined) throw failure.error;
  return { decisions: gone ? [] : decisions, receipts: refused || gone ? [] : receipts, gone };
}
