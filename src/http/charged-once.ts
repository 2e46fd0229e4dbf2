/**
 * What each bucket decided for a request, so that a request passing the same limit twice (the
 * middleware mounted twice, or at app level and again on the route) is charged once.
 *
 * Held with the request object in a {@link requestSlot} (a property under a private symbol, not a
 * WeakMap entry per request: in a decision server that cost more than the decision itself): a
 * short list of (limit, key, decision) entries, most recent first.
 */
import type { Decision } from '../core/decision.js';
import { requestSlot } from './request-slot.js';

type Decided = Decision | readonly Decision[];

/** One limit's charge under one key; `next` is the charge remembered before it. */
interface Charge {
  readonly limit: object;
  readonly key: string;
  decided: Decided;
  readonly next: Charge | undefined;
}

/** Each request's charges, most recent first. */
const charges = requestSlot<Charge>('sluice.charges');

function find(request: object, limit: object, key: string): Charge | undefined {
  for (let charge = charges.get(request); charge !== undefined; charge = charge.next)
    if (charge.limit === limit && charge.key === key) return charge;
  return undefined;
}

/**
 * The decision(s) a limit (a limiter or a cascade) already made for this request and key, or
 * undefined when it has not been asked yet (or the request is not an object it can remember).
 *
 * @example
 * earlierCharge(req, limiter, key) ?? limiter.takeSync(key)
 */
export function earlierCharge(request: unknown, limit: object, key: string): Decided | undefined {
  if (typeof request !== 'object' || request === null) return undefined;
  return find(request, limit, key)?.decided;
}

/**
 * Remembers what a limit decided for this request and key.
 *
 * @example
 * rememberCharge(req, limiter, key, decision)
 */
export function rememberCharge(request: unknown, limit: object, key: string, decided: Decided): void {
  if (typeof request !== 'object' || request === null) return;
  const known = find(request, limit, key);
  if (known !== undefined) {
    known.decided = decided;
    return;
  }
  charges.set(request, { limit, key, decided, next: charges.get(request) });
}
