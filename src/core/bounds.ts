/**
 * The largest numbers sluice accepts, in one place, so that every store and every header style
 * can represent whatever a rule, a per-call limit or a cost carries. They are checked at setup
 * (rules, options) or per call (cost, limit) with a coded error, before any store is asked.
 */

/**
 * The largest limit, burst, per-call limit or cost: 10^12.
 *
 * Why this bound: a count plus a cost (at most 2 × 10^12) is still an exact integer in a double
 * (Lua numbers, JavaScript) and far inside PostgreSQL's bigint; the IETF RateLimit fields carry
 * integers of at most 15 digits (RFC 9651), so `limit`, `remaining` and `q` always fit.
 */
export const MAX_COUNT = 1_000_000_000_000;

/**
 * The largest token-bucket `limit` (tokens per period): 10^6.
 *
 * Why this bound: a token bucket counts time in units of 1/limit ms, and the PostgreSQL store keeps
 * that scaled time in a bigint counted from 2025; at 10^6 units per ms it stays below 2^63 until
 * the year 2300. A higher rate is the same rate over a shorter period: 10^7 per hour is 2,778 per
 * second, i.e. `{ limit: 1_000_000, period: '360s' }`.
 */
export const MAX_TOKEN_RATE = 1_000_000;

/**
 * The longest timeout a timer can carry: 2^31 − 1 ms (about 24.8 days). Node and browsers fire a
 * longer `setTimeout` after 1 ms instead, which would time out every call.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Where a count charged under `penalty` stops growing: 2 × {@link MAX_COUNT}. Beyond twice the
 * largest limit a higher count changes no decision, and stopping there keeps every count an
 * exact integer in every store (doubles, Lua numbers, PostgreSQL bigint) however long a client
 * keeps hammering.
 *
 * @example
 * // fixedWindow({ limit: MAX_COUNT, window: '1h', penalty: true }) never counts past it
 * MAX_PENALTY_COUNT === 2 * MAX_COUNT; // true
 */
export const MAX_PENALTY_COUNT = 2 * MAX_COUNT;
