import type { Decision } from '../core/decision.js';
import { isConcurrentDecision } from '../core/concurrency-decision.js';
import { serializeBareItem } from './structured-fields.js';

/**
 * Every rate-limit header style, in the order error messages list them. This list is the one
 * place a style is named: the guard's `headers` option accepts exactly these, and
 * {@link HeaderStyle} is made from it, so a new style is added here and in the writers of this
 * file (which the compiler then asks for), nowhere else.
 *
 * @default the guard and `limitedResponse` use `"draft"` when no style is given
 * @example
 * HEADER_STYLES.includes(style) // true for 'none', 'legacy' and 'draft'
 */
export const HEADER_STYLES = ['none', 'legacy', 'draft'] as const;

/**
 * Which rate-limit headers a response carries:
 * - `none`: only `Retry-After` on refusals.
 * - `legacy`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` describing the
 *   decisive limit. Reset is the number of seconds until the bucket is full (or the quota
 *   resets), not a Unix time: a relative number means the same whatever the client's clock says.
 * - `draft`: the IETF fields `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10),
 *   one list member per limit that decided.
 *
 * @default "draft"
 * @example
 * const style: HeaderStyle = 'legacy';
 */
export type HeaderStyle = (typeof HEADER_STYLES)[number];

/**
 * Plain header values: name to value. Adapters copy them onto their framework's response.
 *
 * @example
 * const headers: HeaderValues = { 'Retry-After': '30' };
 */
export type HeaderValues = Record<string, string>;

const exposedByStyle: Record<HeaderStyle, string> = {
  none: 'Retry-After',
  legacy: 'Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset',
  draft: 'Retry-After, RateLimit, RateLimit-Policy',
};

/**
 * The `Access-Control-Expose-Headers` value for a style, so that cross-origin pages can read
 * Retry-After and the rate-limit headers; add `X-Auth-Mode` where identity modes are used.
 *
 * @example
 * exposedHeaders('none') // 'Retry-After'
 */
export function exposedHeaders(style: HeaderStyle, extra?: readonly string[]): string {
  return extra === undefined || extra.length === 0
    ? exposedByStyle[style]
    : `${exposedByStyle[style]}, ${extra.join(', ')}`;
}

/**
 * The decision that speaks for several: the first refusal, otherwise the one with the fewest
 * units left. Decisions that no bucket made (`fail-open`) never speak, nor those `among` leaves out.
 */
export function decisiveOf(
  decisions: readonly Decision[],
  among?: (decision: Decision) => boolean,
): Decision | undefined {
  let decisive: Decision | undefined;
  for (const decision of decisions) {
    if (decision.source === 'fail-open' || (among !== undefined && !among(decision))) continue;
    if (!decision.allowed) return decision;
    if (decisive === undefined || decision.remaining < decisive.remaining) decisive = decision;
  }
  return decisive;
}

/** A rate limit's decision, not a concurrency limit's: what the legacy fields can describe. */
const isRateDecision = (decision: Decision): boolean => !isConcurrentDecision(decision);

/**
 * Rate-limit headers describing exactly the bucket(s) that decided, in the given style. Nothing
 * for `none`, and nothing for decisions no bucket made (a store failure under the `open` policy).
 * A number a header field cannot carry is clamped (see `headerInteger`): it never throws.
 *
 * @default no default style: pass one of {@link HEADER_STYLES}
 *
 * @example
 * rateLimitHeaders([decision], 'draft')
 * // { 'RateLimit-Policy': '"login";q=10;w=600', RateLimit: '"login";r=9;t=60' }
 */
export function rateLimitHeaders(
  decisions: Decision | readonly Decision[],
  style: HeaderStyle,
): HeaderValues {
  const list: readonly Decision[] = Array.isArray(decisions) ? decisions : [decisions as Decision];
  const headers: HeaderValues = {};
  if (style === 'legacy') {
    // The legacy fields count per window; a concurrency limit's slots are no such count.
    const decisive = decisiveOf(list, isRateDecision);
    if (decisive === undefined) return headers;
    headers['X-RateLimit-Limit'] = String(headerInteger(decisive.limit));
    headers['X-RateLimit-Remaining'] = String(headerInteger(decisive.remaining));
    headers['X-RateLimit-Reset'] = String(headerInteger(secondsUp(decisive.resetMs)));
  } else if (style === 'draft') {
    // Written in one pass rather than through serializeList: this runs on every admitted request.
    // The parameter keys are fixed and valid; numbers are clamped into the field's integer range
    // and a name the field cannot carry drops its member, so that writing headers never throws.
    let policy = '';
    let state = '';
    for (const decision of list) {
      if (decision.source === 'fail-open') continue;
      const name = fieldString(decision.name);
      if (name === undefined) continue;
      if (policy !== '') {
        policy += ', ';
        state += ', ';
      }
      if (isConcurrentDecision(decision)) {
        // The draft's unit for requests in flight: no window, and a reset only when refused
        // (the latest a slot frees, when the earliest lease held expires unreleased).
        policy += `${name};q=${headerInteger(decision.limit)};qu="concurrent-requests"`;
        state += `${name};r=${headerInteger(decision.remaining)}`;
        if (!decision.allowed) state += `;t=${headerInteger(decision.retryAfterSeconds)}`;
        continue;
      }
      policy += policyMember(name, decision.limit, decision.windowMs);
      state += `${name};r=${headerInteger(decision.remaining)};t=${headerInteger(secondsUp(decision.resetMs))}`;
    }
    if (policy === '') return headers;
    headers['RateLimit-Policy'] = policy;
    headers['RateLimit'] = state;
  }
  return headers;
}

/** The largest integer an RFC 9651 structured field carries (15 digits). */
export const LARGEST_HEADER_INTEGER = 999_999_999_999_999;

/**
 * A count or a number of seconds as a header integer: whole, 0 for a negative number or NaN, and
 * at most {@link LARGEST_HEADER_INTEGER} (an infinite wait or a count beyond 15 digits is written
 * as the largest). Limits never get there (sluice bounds them at 10^12); this keeps a header
 * writer from throwing on a decision it did not expect.
 *
 * @example
 * headerInteger(Infinity) // 999999999999999
 */
export function headerInteger(value: number): number {
  if (!(value > 0)) return 0;
  return value >= LARGEST_HEADER_INTEGER ? LARGEST_HEADER_INTEGER : Math.floor(value);
}

const printableAscii = /^[\x20-\x7e]*$/;

// The last name and policy member written, kept because a route's responses name the same limit
// over and over: the next response reuses the strings instead of building them again.
// (A name not yet written is undefined, whose field is undefined too.)
let lastName: unknown;
let lastField: string | undefined;
let lastPolicyField = '';
let lastPolicyLimit = Number.NaN;
let lastPolicyWindowMs = Number.NaN;
let lastPolicy = '';

/** A limit name as a structured-field string, or undefined when it holds other characters. */
function fieldString(name: unknown): string | undefined {
  if (name !== lastName) {
    lastField = typeof name === 'string' && printableAscii.test(name) ? serializeBareItem(name) : undefined;
    lastName = name;
  }
  return lastField;
}

/** A rate limit's member of `RateLimit-Policy`: its name, quota and window in seconds. */
function policyMember(field: string, limit: number, windowMs: number): string {
  if (field !== lastPolicyField || limit !== lastPolicyLimit || windowMs !== lastPolicyWindowMs) {
    lastPolicy =
      windowMs > 0
        ? `${field};q=${headerInteger(limit)};w=${headerInteger(secondsUp(windowMs))}`
        : `${field};q=${headerInteger(limit)}`;
    lastPolicyField = field;
    lastPolicyLimit = limit;
    lastPolicyWindowMs = windowMs;
  }
  return lastPolicy;
}

/** Whole seconds, rounded up: a client told "0" would come back too early. */
export function secondsUp(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}
