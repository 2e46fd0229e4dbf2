import type { Decision } from '../core/decision.js';
import type { ConcurrencyLimiter } from './concurrency.js';
import type { Limiter, TakeOptions } from './limiter.js';
import type { Lease } from './leases.js';
import type { Receipt } from './receipts.js';

/** One rate limit to pass before a lease: the limiter, its key, and the take's options. */
export interface RateStep {
  readonly limiter: Limiter;
  readonly key: string;
  readonly options?: TakeOptions;
}

/** What {@link acquireAfter} decided. */
export interface CascadeLease {
  /** True when every rate limit admitted and the lease was granted. */
  readonly allowed: boolean;
  /** The decisions made in order: the rate limits', then the lease's when it was asked for. */
  readonly decisions: readonly Decision[];
  /** The lease, to release when the work is done; undefined when refused. */
  readonly lease: Lease | undefined;
  /** The admitted rate takes' receipts (empty when refused: they were refunded). */
  readonly receipts: readonly Receipt[];
}

/**
 * A rate cascade ending in a concurrency limit: takes from each rate limit in order (the first
 * refusal stops, as in a first-refusal cascade, and limits before it keep their charge), then,
 * when all admitted, acquires the lease. A lease refused (or an acquisition that failed) refunds
 * the rate takes through their receipts: a request that never ran is not charged to rates.
 *
 * @example
 * const { allowed, decisions, lease } = await acquireAfter(inFlight, `user:${id}`, [
 *   { limiter: perMinute, key: `user:${id}` },
 * ]);
 * if (!lease) return reply429(decisions);
 * try { await work(); } finally { await inFlight.release(lease); }
 */
export async function acquireAfter(
  concurrency: ConcurrencyLimiter,
  key: string,
  rates: readonly RateStep[],
): Promise<CascadeLease> {
  const decisions: Decision[] = [];
  const receipts: Receipt[] = [];
  for (const step of rates) {
    const taken = await step.limiter.takeWithReceipt(step.key, step.options);
    decisions.push(taken.decision);
    if (taken.receipt !== undefined) receipts.push(taken.receipt);
    if (!taken.decision.allowed) return { allowed: false, decisions, lease: undefined, receipts };
  }
  const limiters = new Map(rates.map((step) => [step.limiter.name, step.limiter]));
  const { decision, lease } = await leaseOrRefund(concurrency, key, receipts, (receipt) =>
    limiters.get(receipt.rule)?.refund(receipt),
  );
  decisions.push(decision);
  return { allowed: lease !== undefined, decisions, lease, receipts: lease === undefined ? [] : receipts };
}

/**
 * Acquires a lease on `key` after rate takes whose `receipts` are given; when the lease is
 * refused or the acquisition fails, hands each receipt to `refund` (the guard and
 * {@link acquireAfter} share this). A refund that fails is the limiter's to log: it never
 * replaces the answer.
 */
export async function leaseOrRefund(
  concurrency: ConcurrencyLimiter,
  key: string,
  receipts: readonly Receipt[],
  refund: (receipt: Receipt) => Promise<void> | void,
): Promise<{ decision: Decision; lease: Lease | undefined }> {
  let answer: { decision: Decision; lease: Lease | undefined };
  try {
    answer = await concurrency.acquire(key);
  } catch (error) {
    await refundAll(receipts, refund);
    throw error;
  }
  if (answer.lease === undefined) await refundAll(receipts, refund);
  return answer;
}

async function refundAll(
  receipts: readonly Receipt[],
  refund: (receipt: Receipt) => Promise<void> | void,
): Promise<void> {
  await Promise.allSettled(receipts.map(async (receipt) => refund(receipt)));
}
