/**
 * What each bucket decided for a request, so that a request passing the same limit twice (the
 * middleware mounted twice, or at app level and again on the route) is charged once. Held per
 * request object in a WeakMap: the entry goes when the request does, and nothing is added to the
 * framework's request.
 */
import type { Decision } from '../core/decision.js';

type Charges = Map<object, Map<string, Decision | readonly Decision[]>>;

const byRequest = new WeakMap<object, Charges>();

/**
 * The decision(s) a limit (a limiter or a cascade) already made for this request and key, or
 * undefined when it has not been asked yet (or the request is not an object it can remember).
 *
 * @example
 * earlierCharge(req, limiter, key) ?? limiter.takeSync(key)
 */
export function earlierCharge(
  request: unknown,
  limit: object,
  key: string,
): Decision | readonly Decision[] | undefined {
  if (typeof request !== 'object' || request === null) return undefined;
  return byRequest.get(request)?.get(limit)?.get(key);
}

/**
 * Remembers what a limit decided for this request and key.
 *
 * @example
 * rememberCharge(req, limiter, key, decision)
 */
export function rememberCharge(
  request: unknown,
  limit: object,
  key: string,
  decided: Decision | readonly Decision[],
): void {
  if (typeof request !== 'object' || request === null) return;
  let charges = byRequest.get(request);
  if (charges === undefined) {
    charges = new Map();
    byRequest.set(request, charges);
  }
  let byKey = charges.get(limit);
  if (byKey === undefined) {
    byKey = new Map();
    charges.set(limit, byKey);
  }
  byKey.set(key, decided);
}
