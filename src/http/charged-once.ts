/**
 * What each bucket decided for a request, so that a request passing the same limit twice (the
 * middleware mounted twice, or at app level and again on the route) is charged once.
 *
 * Held on the request object itself, under a symbol private to this module: a short list of
 * (limit, key, decision) entries, most recent first. A WeakMap keyed by request would keep the
 * framework's object untouched, but every request would then add an entry to it, and entries
 * of a WeakMap are costly for the garbage collector: in a decision server that cost was larger
 * than the decision itself. A symbol-keyed property is invisible to JSON, `Object.keys` and
 * `for … in`. Objects that take no new property (frozen, sealed, non-extensible) are remembered
 * in a WeakMap instead.
 */
import type { Decision } from '../core/decision.js';

type Decided = Decision | readonly Decision[];

/** One limit's charge under one key; `next` is the charge remembered before it. */
interface Charge {
  readonly limit: object;
  readonly key: string;
  decided: Decided;
  readonly next: Charge | undefined;
}

const CHARGES = Symbol('sluice.charges');

interface Holder {
  [CHARGES]?: Charge;
}

/** The charges of requests that cannot take a property. */
const ofSealed = new WeakMap<object, Charge>();

/** The request's charges, most recent first: on the object, else (or once sealed) beside it. */
function chargesOf(request: object): Charge | undefined {
  const own = (request as Holder)[CHARGES];
  if (own !== undefined && Object.isExtensible(request)) return own;
  return ofSealed.get(request) ?? own;
}

function find(request: object, limit: object, key: string): Charge | undefined {
  for (let charge = chargesOf(request); charge !== undefined; charge = charge.next)
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
  const charge: Charge = { limit, key, decided, next: chargesOf(request) };
  if (Object.isExtensible(request)) {
    try {
      (request as Holder)[CHARGES] = charge;
      return;
    } catch {
      // A proxy that refuses the property: remembered beside it, as a sealed object is.
    }
  }
  ofSealed.set(request, charge);
}
