import type { Clock } from '../core/clock.js';
import type { Duration } from '../core/duration.js';
import type { Rule } from '../core/rules/rule.js';
import type { Store } from '../stores/contract/store.js';
import type { BreakerOptions } from './breaker.js';
import type { DecisionEvents } from './events.js';
import type { FailurePolicy, Logger } from './failure.js';
import type { RefusalCacheOptions } from './refusal-cache.js';

/** Options of {@link createLimiter}. */
export interface LimiterOptions<S extends Store = Store> {
  /**
   * The limit's name: unique per store, shown in headers and problem bodies, and the prefix of
   * its buckets. Letters, digits, `.`, `_`, `-` and `:` only, so it can never carry a key.
   */
  name: string;
  /**
   * What to enforce: `tokenBucket({...})`, `fixedWindow({...})`, `slidingWindow({...})` or
   * `calendarQuota({...})`. Required: there is no default limit to guess.
   */
  rule: Rule;
  /**
   * Where buckets live: `new MemoryStore()`, a Redis or PostgreSQL store. Required: whether the
   * limit is per process or shared is a choice to make, not a default.
   */
  store: S;
  /**
   * The clock in ms since the Unix epoch; inject a {@link manualClock} in tests so that counts
   * are exact without sleeping. Stores shared between nodes use their own clock instead, so that
   * nodes with drifting clocks still agree on one bucket.
   * @default Date.now
   */
  clock?: Clock;
  /**
   * What happens when the store fails or times out; see {@link FailurePolicy}.
   * @default "closed"
   */
  failure?: FailurePolicy;
  /**
   * The status a `closed` failure carries: 503 (the store is unavailable) or 500.
   * @default 503
   */
  closedStatus?: 503 | 500;
  /**
   * The longest a store call may take before the failure policy applies, so a hung store cannot
   * hang requests. Applies to asynchronous stores; the memory store decides synchronously.
   *
   * One timeout, agreeing with the store's: a store that bounds its own calls (`RedisStore` and
   * `PostgresStore` have a `timeout` option, exposed as `store.timeoutMs`) sets this default, so
   * `new RedisStore({ client, timeout: '5s' })` waits 5 s. A limiter timeout that differs from
   * such a store's is `SLUICE_CONFIG` at setup: a longer one would be cut by the store's timer,
   * and a shorter one would answer a decision the store could still charge afterwards (the
   * store refuses to write only past its own deadline). Set the store's `timeout` instead.
   * @default the store's `timeoutMs` when it has one, else "100ms"
   */
  timeout?: Duration;
  /**
   * When the store counts as failing (see {@link BreakerOptions}): `open` and `insurance` stand
   * in for a timeout only while the breaker is open; a timeout while it is closed (the store
   * still answers) is load, refused with `SLUICE_STORE_OVERLOADED` under `open`. While open, the
   * store is asked once per `probeInterval`; a success closes it. One breaker per limiter.
   * @default { failures: 5, window: "1s", probeInterval: "200ms" }
   */
  breaker?: BreakerOptions;
  /** Where store failures are logged (at most once a minute per limit, never a key). @default console */
  logger?: Logger;
  /**
   * Where this limiter reports every take's outcome (see {@link DecisionEvents}). Pass one channel
   * to several limiters (and guards) to listen to all of them in one place, e.g. for metrics.
   * @default a channel of this limiter's own, `limiter.events`
   */
  events?: DecisionEvents;
  /**
   * Remembers the refusals of a shared store per key until their retry instant, and answers a
   * take it would certainly refuse (the same per-call limit, a cost at least the one refused)
   * without a round trip: a flood on a refused key costs the store one call per retry period.
   * Admissions always ask the store. Not for rules with `penalty` (every refusal must be charged
   * in the store: `SLUICE_CONFIG`); does nothing on the memory store. See docs/policies.md.
   * @default false
   * @example
   * createLimiter({ name: 'api', rule, store: redisStore, refusalCache: { maxKeys: 50_000 } })
   */
  refusalCache?: boolean | RefusalCacheOptions;
  /**
   * `'shadow'` tries a rule out before enforcing it: the limit decides and charges its own
   * buckets exactly as enforcement would (a take it would refuse charges what an enforced refusal
   * charges), but never refuses. A would-be refusal comes back admitted with `source: 'shadow'`
   * (its other fields say what enforcement would have said) and is reported as the
   * `shadow-refused` outcome. Switching the same name to `'enforce'` keeps the buckets, so
   * enforcement starts from what it would have held. A shadow limit never refuses when its store
   * fails either: its failure policy is `'open'`. It cannot join an all-or-nothing cascade (it
   * could not veto the group). See docs/policies.md.
   * @default "enforce"
   */
  mode?: LimiterMode;
  /**
   * The most `takeOrWait` calls that may be in progress at once on this limiter, over all keys
   * (each holds about half a kilobyte until its slot arrives). A call beyond it is refused at once
   * with `SLUICE_WAIT_QUEUE_FULL`, nothing reserved. A whole number from 1 to 10,000,000.
   * @default 10000
   */
  maxWaiters?: number;
  /**
   * The most `takeOrWait` calls that may be in progress at once for one key; beyond it, as for
   * `maxWaiters`. A whole number from 1 to 10,000,000.
   * @default 1000
   * @example createLimiter({ name: 'api', rule, store, maxWaiters: 50_000, maxWaitersPerKey: 200 })
   */
  maxWaitersPerKey?: number;
}

/** Whether a limit refuses (`enforce`) or only reports what it would refuse (`shadow`). */
export type LimiterMode = 'enforce' | 'shadow';

/** Per-call options of a take. */
export interface TakeOptions {
  /**
   * Units to take: a whole number from 0 to `MAX_COUNT` (10^12); 0 peeks. A cost larger than
   * the rule can ever admit (a token bucket's burst, a quota's limit) is refused at once
   * (`retryAfterMs` Infinity, `remaining` 0: the bucket was not read) without asking the store.
   * Anything else is `SLUICE_ARGUMENT`.
   * @default 1
   */
  cost?: number;
  /**
   * This call's limit instead of the rule's: a per-key limit from data (e.g. an API key's own
   * daily limit, as in examples/reports/README.md, or a plan's rate). For rules counted per
   * window (calendar quotas, fixed and sliding windows) the count, a whole number from 1 to
   * `MAX_COUNT`; for a token bucket the tokens per period, from 1 to `MAX_TOKEN_RATE`.
   */
  limit?: number;
  /**
   * A token bucket's period for this call instead of the rule's, e.g. `"1m"`. With `limit` and
   * `burst`, a plan's tier from data: the bucket of a key whose tier changes keeps both the
   * fraction of its capacity in use and its time until full (see docs/accounting.md), so that a
   * plan switch never adds tokens.
   */
  period?: Duration;
  /**
   * A token bucket's burst for this call instead of the rule's, from 1 to `MAX_COUNT`.
   * @default the call's `limit` when it gives one, otherwise the rule's burst
   */
  burst?: number;
}
