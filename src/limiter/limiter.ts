import { systemClock, type Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { SluiceError, configError, optionError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import type { CallLimit, Rule } from '../core/rules/rule.js';
import {
  isSyncStore,
  type RuleBuckets,
  type Store,
  type SyncRuleBuckets,
  type SyncStore,
} from '../stores/contract/store.js';
import { MemoryStore } from '../stores/memory/store.js';
import { checkRuleName } from '../stores/shared/rule-name.js';
import type { Duration } from '../core/duration.js';
import { callLimitOf, checkKey, costOf, readClock, settledCost } from './call-input.js';
import { resolveTimeout } from './store-timeout.js';
import { withDeadline } from '../stores/shared/deadline.js';
import { DecisionEvents } from './events.js';
import { reportDecision, reportFailure } from './decision-report.js';
import { resolveRefusalCache, type RefusalCache, type RefusalCacheOptions } from './refusal-cache.js';
import { ReceiptBook, type Receipt, type ReceiptedDecision } from './receipts.js';
import { WaitingRoom, readWaitingBounds } from './waiting-room.js';
import { reserverOf } from '../core/reservation.js';
import {
  arrived,
  readWaitOptions,
  sleepUnlessAborted,
  type WaitOptions,
  type WaitedDecision,
} from './wait-for-slot.js';
import { Breaker, readBreakerOptions, type BreakerOptions, type StoreHealth } from './breaker.js';
import {
  FailureHandler,
  consoleLogger,
  type FailurePolicy,
  type LimiterStats,
  type Logger,
} from './failure.js';

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

/** A rule enforced on a store: take, peek and reset by key. */
export interface Limiter {
  /** The limit's name. */
  readonly name: string;
  /** The rule it enforces. */
  readonly rule: Rule;
  /** The store its buckets live in. */
  readonly store: Store;
  /** The clock it reads. */
  readonly clock: Clock;
  /** The store's buckets of this rule. */
  readonly buckets: RuleBuckets;
  /**
   * Takes `cost` (default 1) from `key`'s bucket. Over the limit is a refused decision, never an
   * exception; a missing key throws `SLUICE_KEY_MISSING`, a non-string key `SLUICE_KEY_INVALID`.
   */
  take(key: string, options?: TakeOptions): Promise<Decision>;
  /**
   * A take that also returns its receipt when it charged the store (see {@link Receipt}), for
   * settling it after the response: {@link Limiter.refund} or {@link Limiter.settle}.
   */
  takeWithReceipt(key: string, options?: TakeOptions): Promise<ReceiptedDecision>;
  /**
   * Gives back what the take of `receipt` charged, atomically in the store: a token bucket never
   * ends fuller than full, a window's count comes down only while the take's window still
   * counts, a lockout stays. A receipt settles once (`SLUICE_ARGUMENT` for one settled already,
   * issued by another limiter or made by hand); one whose store call failed may be tried again.
   */
  refund(receipt: Receipt): Promise<void>;
  /**
   * Settles the take of `receipt` at its real cost (a whole number from 0 to `MAX_COUNT`): less
   * than charged gives the difference back as {@link Limiter.refund} does; more charges the
   * difference now, whatever the bucket holds (the work is done: a token bucket's debt and a count
   * stop at the bounds a penalty stops at). Single use, like a refund.
   * @example
   * const { decision, receipt } = await tokens.takeWithReceipt(key, { cost: estimate });
   * // … call the model …
   * if (receipt) await tokens.settle(receipt, usage.totalTokens);
   */
  settle(receipt: Receipt, actualCost: number): Promise<void>;
  /**
   * Waits for a slot instead of being refused: reserves the earliest slot the rule gives, in the
   * same single store step as a take (the store orders reservations, so waiters of every process
   * are served in the order they reserved), and resolves when it arrives: one timer per call.
   * A slot further than `maxWait` is refused at once, charging nothing. Aborting `signal` gives
   * the reservation back and rejects with the signal's reason. Token buckets without a lockout
   * only (others are `SLUICE_CONFIG`); a store that fails decides as for a take, without waiting.
   * See docs/accounting.md.
   * @example
   * const { decision } = await api.takeOrWait(key, { maxWait: '2s', signal: request.signal });
   * if (!decision.allowed) return reply429(decision.retryAfterSeconds);
   */
  takeOrWait(key: string, options: WaitOptions): Promise<WaitedDecision>;
  /**
   * How many `takeOrWait` calls are in progress now (reserving or waiting for their slot), at
   * most `maxWaiters`: for metrics.
   */
  readonly waiting: number;
  /** What a take of 1 would get now, charging nothing. */
  peek(key: string, options?: Pick<TakeOptions, 'limit' | 'period' | 'burst'>): Promise<Decision>;
  /** Forgets `key` (the same key you pass to `take`): its next take finds a full bucket. */
  reset(key: string): Promise<void>;
  /**
   * Lifts a lockout (the rule's `block` option) for an operator: the key is forgotten whole (its
   * block, the escalation it earned, and its bucket), so its next take is decided as a new key's
   * and its next block, if any, lasts the first `duration`. The same as {@link Limiter.reset},
   * named for what an operator means.
   */
  unblock(key: string): Promise<void>;
  /**
   * Frees the limiter's rule in its store (`store.unbind(name)`): a memory store drops its
   * buckets, a shared store keeps them (other processes use them; they expire as usual), and
   * the name can be bound again. After it, take, peek and reset reject with `SLUICE_CONFIG`.
   * Closing twice does nothing. Use it for limiters made per tenant or per test, so that
   * creating and dropping them does not grow the store.
   */
  close(): void;
  /** True once {@link Limiter.close} has run. */
  readonly closed: boolean;
  /** The failure policy. */
  readonly failure: FailurePolicy;
  /** `'enforce'`, or `'shadow'` for a limit that never refuses (see {@link LimiterOptions.mode}). */
  readonly mode: LimiterMode;
  /** The store timeout in ms. */
  readonly timeoutMs: number;
  /** Store failure counters since the limiter was created, and the breaker's state. */
  stats(): Readonly<LimiterStats>;
  /**
   * What the limiter knows of its store's health: its breaker's state (`open` while the store is
   * known to be failing), since when, the failures in a row and how often it opened. For
   * readiness checks and metrics; reads no store.
   */
  storeHealth(): StoreHealth;
  /**
   * The channel every take's outcome is reported to (peeks are not reported): subscribe to it
   * for logs or metrics. Costs nothing while no one listens.
   */
  readonly events: DecisionEvents;
}

/** A limiter on a synchronous store (the memory store): every method also has a sync form. */
export interface SyncLimiter extends Limiter {
  readonly store: SyncStore;
  readonly buckets: SyncRuleBuckets;
  /** Synchronous {@link Limiter.take}. */
  takeSync(key: string, options?: TakeOptions): Decision;
  /** Synchronous {@link Limiter.peek}. */
  peekSync(key: string, options?: Pick<TakeOptions, 'limit' | 'period' | 'burst'>): Decision;
  /** Synchronous {@link Limiter.reset}. */
  resetSync(key: string): void;
  /** Synchronous {@link Limiter.unblock}. */
  unblockSync(key: string): void;
  /** Synchronous {@link Limiter.takeWithReceipt}. */
  takeWithReceiptSync(key: string, options?: TakeOptions): ReceiptedDecision;
  /** Synchronous {@link Limiter.refund}. */
  refundSync(receipt: Receipt): void;
  /** Synchronous {@link Limiter.settle}. */
  settleSync(receipt: Receipt, actualCost: number): void;
}

const limiterKeys = [
  'name',
  'rule',
  'store',
  'clock',
  'failure',
  'closedStatus',
  'timeout',
  'logger',
  'events',
  'refusalCache',
  'mode',
  'maxWaiters',
  'maxWaitersPerKey',
  'breaker',
] as const;
const failurePolicies: readonly FailurePolicy[] = ['closed', 'open', 'insurance'];

/**
 * Creates a limiter: a rule enforced on a store under a name.
 *
 * @example
 * const store = new MemoryStore();
 * const login = createLimiter({ name: 'login', rule: tokenBucket({ limit: 10, period: '10m' }), store });
 * const decision = login.takeSync(loginKey);
 * if (!decision.allowed) console.log(`retry in ${decision.retryAfterSeconds} s`);
 */
export function createLimiter(options: LimiterOptions<SyncStore>): SyncLimiter;
export function createLimiter(options: LimiterOptions): Limiter;
export function createLimiter(options: LimiterOptions): Limiter {
  checkOptionKeys('createLimiter', options, limiterKeys);
  const { name, rule, store, clock = systemClock } = options;
  checkRuleName(name, 'createLimiter name');
  if (rule === undefined || rule === null) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `limiter ${JSON.stringify(name)} has no rule: pass tokenBucket({...}) or calendarQuota({...}); there is no disabled mode`,
    );
  }
  if (typeof rule !== 'object' || typeof rule.decide !== 'function') {
    throw configError(
      `limiter ${JSON.stringify(name)} rule`,
      'the result of tokenBucket() or calendarQuota()',
      rule,
    );
  }
  if (store === undefined || store === null) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `limiter ${JSON.stringify(name)} has no store: pass new MemoryStore() or a shared store; there is no disabled mode`,
    );
  }
  if (typeof store !== 'object' || typeof store.bind !== 'function') {
    throw configError(
      `limiter ${JSON.stringify(name)} store`,
      'a Store (MemoryStore, RedisStore, PostgresStore)',
      store,
    );
  }
  if (typeof clock !== 'function')
    throw configError(`limiter ${JSON.stringify(name)} clock`, 'a function returning ms', clock);
  const { mode = 'enforce' } = options;
  if (mode !== 'enforce' && mode !== 'shadow')
    throw optionError(`limiter ${JSON.stringify(name)} mode`, '"enforce" or "shadow"');
  const {
    failure = mode === 'shadow' ? 'open' : 'closed',
    closedStatus = 503,
    logger = consoleLogger,
  } = options;
  if (!failurePolicies.includes(failure)) {
    throw configError(`limiter ${JSON.stringify(name)} failure`, '"closed", "open" or "insurance"', failure);
  }
  if (mode === 'shadow' && failure !== 'open')
    throw optionError(
      `limiter ${JSON.stringify(name)} failure`,
      '"open" (or left out) for a limit in shadow mode, which never refuses',
    );
  if (closedStatus !== 503 && closedStatus !== 500) {
    throw configError(`limiter ${JSON.stringify(name)} closedStatus`, '503 or 500', closedStatus);
  }
  const timeoutMs = resolveTimeout(name, options.timeout, store);
  if (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function') {
    throw configError(
      `limiter ${JSON.stringify(name)} logger`,
      'an object with a warn(details, message) method',
      logger,
    );
  }
  const { events = new DecisionEvents() } = options;
  if (!(events instanceof DecisionEvents)) {
    throw new SluiceError('SLUICE_CONFIG', `limiter ${JSON.stringify(name)} events must be a DecisionEvents`);
  }
  const insurance = failure === 'insurance' ? new MemoryStore().bind(name, rule) : undefined;
  const refusals = resolveRefusalCache(name, options.refusalCache, rule, isSyncStore(store));
  const breaker = new Breaker(
    readBreakerOptions(`limiter ${JSON.stringify(name)}`, options.breaker),
    clock,
    (state, at) => {
      if (events.listeningHealth) events.emitHealth({ rule: name, store: store.kind, breaker: state, at });
    },
    () => store.replies ?? 0,
  );
  const handler = new FailureHandler(
    name,
    store.kind,
    failure,
    closedStatus,
    insurance,
    logger,
    clock,
    breaker,
    mode === 'shadow',
  );
  const room = new WaitingRoom(readWaitingBounds(name, options.maxWaiters, options.maxWaitersPerKey));
  return isSyncStore(store)
    ? new SyncRuleLimiter(name, rule, store, clock, timeoutMs, handler, events, mode, room)
    : new RuleLimiter(name, rule, store, clock, timeoutMs, handler, events, mode, room, refusals);
}

/** Applies a limiter's failure policy to a failed store call (used by cascades). */
export const decideOnFailure = Symbol('sluice.decideOnFailure');

/** Reports a decision a cascade made for a limiter (an all-or-nothing take bypasses the limiter). */
export const reportTake = Symbol('sluice.reportTake');

/** Tells a limiter's breaker that its store answered a call a cascade made for it. */
export const storeAnswered = Symbol('sluice.storeAnswered');

/** A limiter as cascades see it: with access to its failure policy and its events. */
export interface LimiterInternals extends Limiter {
  [decideOnFailure](
    error: unknown,
    key: string,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
  ): Decision;
  /** The store answered a call made for this limiter (its breaker closes, its failures clear). */
  [storeAnswered](): void;
  /**
   * Reports a take's decision, or (`decision` undefined) its failure with `error`, to the
   * limiter's events. Callers check `events.listening` first.
   */
  [reportTake](
    key: string,
    cost: number,
    decision: Decision | undefined,
    error: unknown,
    latencyMs: number,
  ): void;
}

/** True for a limiter made by {@link createLimiter} (a cascade needs its failure policy). */
export function isLimiterInternals(value: unknown): value is LimiterInternals {
  return typeof value === 'object' && value !== null && decideOnFailure in value;
}

/**
 * The refusal of a cost that `rule` can never admit (more than a token bucket's burst or a
 * quota's limit): the pure algorithm's answer on an untouched bucket, with `retryAfterMs`
 * Infinity and `remaining` 0. No store is asked: waiting cannot help, and a shared store need
 * not count it.
 *
 * What the bucket holds is then unknown, and the untouched bucket's `remaining` (its whole
 * capacity) would tell the client, in its headers, that it has more than it may hold. 0 is never
 * more than the truth and is the same on every store; asking the store instead would spend a
 * round trip (and a failure policy) on a request that can never pass, which a client could send
 * at will.
 */
export function refusedForGood(
  rule: Rule,
  name: string,
  cost: number,
  now: number,
  limit: CallLimit | undefined,
): Decision {
  const untouched = rule.decide(rule.initialState(now, now), now, now, name, cost, limit, false);
  return { ...untouched, remaining: 0 };
}

/** Throws when `limiter` has been closed; the message names the limit, never a key. */
export function assertOpen(limiter: Limiter): void {
  if (limiter.closed) throw closedError(limiter.name);
}

function closedError(name: string): SluiceError {
  return new SluiceError(
    'SLUICE_CONFIG',
    `limiter ${JSON.stringify(name)} is closed: create a new limiter to use this rule again`,
  );
}

class RuleLimiter implements LimiterInternals {
  readonly buckets: RuleBuckets;
  readonly failure: FailurePolicy;
  closed = false;
  /** Receipts issued and not settled yet. */
  protected readonly receipts = new ReceiptBook();
  private readonly what: string;
  private readonly selfTimed: boolean;

  constructor(
    readonly name: string,
    readonly rule: Rule,
    readonly store: Store,
    readonly clock: Clock,
    readonly timeoutMs: number,
    private readonly handler: FailureHandler,
    readonly events: DecisionEvents,
    readonly mode: LimiterMode,
    private readonly room: WaitingRoom,
    private readonly refusals?: RefusalCache,
  ) {
    this.buckets = store.bind(name, rule);
    this.failure = handler.policy;
    this.what = `the ${store.kind} store (limit ${JSON.stringify(name)})`;
    // The store's own bound is never longer than ours (see resolveTimeout); when it is the same,
    // the store's timer is enough and a second one per call would only cost.
    this.selfTimed = store.timeoutMs === timeoutMs;
  }

  take(key: string, options?: TakeOptions): Promise<Decision> {
    try {
      if (this.closed) throw closedError(this.name);
      checkKey(key);
      const cost = options === undefined ? 1 : costOf(options.cost);
      const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
      const decided = this.decideTake(key, cost, readClock(this.clock), limit);
      return this.mode === 'shadow' ? decided.then(shadowOf) : decided;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  takeWithReceipt(key: string, options?: TakeOptions): Promise<ReceiptedDecision> {
    try {
      if (this.closed) throw closedError(this.name);
      checkKey(key);
      const cost = options === undefined ? 1 : costOf(options.cost);
      const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
      const now = readClock(this.clock);
      // Read before the take: a reset between the two can then only make the refund give nothing.
      const generation = this.buckets.resetGeneration?.(key);
      return this.decideTake(key, cost, now, limit).then((decision) => ({
        decision: this.mode === 'shadow' ? shadowOf(decision) : decision,
        receipt: this.receipts.issue(this.name, key, decision, now, limit, generation),
      }));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  takeOrWait(key: string, options: WaitOptions): Promise<WaitedDecision> {
    let maxWaitMs: number;
    let signal: AbortSignal | undefined;
    let cost: number;
    let limit: CallLimit | undefined;
    let now: number;
    try {
      if (this.closed) throw closedError(this.name);
      checkKey(key);
      ({ maxWaitMs, signal, cost } = readWaitOptions(options));
      limit = callLimitOf(options, this.rule);
      reserverOf(this.rule);
      if (this.mode === 'shadow')
        throw new SluiceError(
          'SLUICE_CONFIG',
          `limiter ${JSON.stringify(this.name)} is in shadow mode, which never refuses: it has nothing to wait for`,
        );
      if (this.buckets.reserve === undefined)
        throw new SluiceError(
          'SLUICE_CONFIG',
          `the ${this.store.kind} store of limiter ${JSON.stringify(this.name)} cannot reserve slots (its buckets have no reserve)`,
        );
      if (signal?.aborted === true) return Promise.reject(signal.reason);
      now = readClock(this.clock);
      // Counted from before the reservation until the call settles: a crowd beyond the bounds is
      // refused here, before anything is reserved.
      this.room.enter(this.name, key);
    } catch (error) {
      return Promise.reject(error);
    }
    const room = this.room;
    return this.waitForSlot(key, cost, now, maxWaitMs, limit, signal).finally(() => room.leave(key));
  }

  get waiting(): number {
    return this.room.size;
  }

  /** A checked `takeOrWait` call: its reservation, then its wait. */
  private waitForSlot(
    key: string,
    cost: number,
    now: number,
    maxWaitMs: number,
    limit: CallLimit | undefined,
    signal: AbortSignal | undefined,
  ): Promise<WaitedDecision> {
    const started = this.events.listening ? performance.now() : 0;
    const generation = this.buckets.resetGeneration?.(key);
    return this.reserveSlot(key, cost, now, maxWaitMs, limit).then((decision) => {
      const wait = decision.allowed && decision.source === 'store' ? decision.retryAfterMs : 0;
      const answer = wait > 0 ? arrived(decision, wait) : decision;
      if (this.events.listening) this[reportTake](key, cost, answer, undefined, performance.now() - started);
      const receipt = this.receipts.issue(this.name, key, decision, now, limit, generation);
      if (wait === 0) return { decision: answer, receipt, waitedMs: 0 };
      return sleepUnlessAborted(wait, signal).then(
        () => ({ decision: answer, receipt, waitedMs: wait }),
        (reason: unknown) => this.giveBack(receipt, reason),
      );
    });
  }

  /** An aborted wait: its reservation refunded (a failed refund is logged), then `reason` rejected. */
  private giveBack(receipt: Receipt | undefined, reason: unknown): Promise<never> {
    const refunded = receipt === undefined ? Promise.resolve() : this.refund(receipt);
    return refunded.then(
      () => Promise.reject(reason),
      () => Promise.reject(reason),
    );
  }

  /**
   * A reservation in the store, bounded by the store timeout; a store that fails decides as for
   * a take (the failure policy), without waiting.
   */
  protected reserveSlot(
    key: string,
    cost: number,
    now: number,
    maxWaitMs: number,
    limit: CallLimit | undefined,
  ): Promise<Decision> {
    if (cost > this.rule.capacityFor(limit))
      return Promise.resolve(refusedForGood(this.rule, this.name, cost, now, limit));
    if (this.shortCircuited()) return settle(() => this.handler.shortCircuit(key, cost, now, limit));
    let pending: Promise<Decision>;
    try {
      pending = this.buckets.reserve!(key, cost, now, maxWaitMs, limit);
    } catch (error) {
      return settle(() => this.handler.decide(error, key, cost, now, limit));
    }
    const bounded = this.selfTimed ? pending : withDeadline(pending, this.timeoutMs, this.what);
    return bounded.then(this.answered, (error: unknown) => this.handler.decide(error, key, cost, now, limit));
  }

  refund(receipt: Receipt): Promise<void> {
    return this.adjustBy(receipt, undefined);
  }

  settle(receipt: Receipt, actualCost: number): Promise<void> {
    return this.adjustBy(receipt, actualCost);
  }

  /** A refund (`actualCost` undefined) or a settlement: one store call, the receipt reopened if it fails. */
  private adjustBy(receipt: Receipt, actualCost: number | undefined): Promise<void> {
    let delta: number;
    let now: number;
    try {
      if (this.closed) throw closedError(this.name);
      const actual = actualCost === undefined ? 0 : settledCost(actualCost);
      this.receipts.close(receipt, this.name);
      delta = actual - receipt.cost;
      if (delta === 0) return Promise.resolve();
      now = readClock(this.clock);
    } catch (error) {
      return Promise.reject(error);
    }
    const { key, at, until } = receipt;
    const refusals = this.refusals;
    let pending: Promise<void>;
    try {
      pending = this.buckets.adjust(key, delta, now, at, until, receipt.limit, receipt.generation);
    } catch (error) {
      pending = Promise.reject(error);
    }
    const bounded = this.selfTimed ? pending : withDeadline(pending, this.timeoutMs, this.what);
    const operation = delta < 0 ? 'refund a take' : 'settle a take';
    const settled = bounded.catch((error: unknown) => {
      this.receipts.reopen(receipt);
      return Promise.reject(this.handler.resetFailed(error, operation));
    });
    // A refund makes room: a refusal remembered for the key may no longer hold.
    if (refusals === undefined || delta > 0) return settled;
    refusals.forget(key);
    return settled.finally(() => refusals.forget(key));
  }

  peek(key: string, options?: Pick<TakeOptions, 'limit' | 'period' | 'burst'>): Promise<Decision> {
    try {
      if (this.closed) throw closedError(this.name);
      checkKey(key);
      const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
      const decided = this.decide(key, 0, readClock(this.clock), limit);
      return this.mode === 'shadow' ? decided.then(shadowOf) : decided;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  reset(key: string): Promise<void> {
    try {
      if (this.closed) throw closedError(this.name);
      checkKey(key);
    } catch (error) {
      return Promise.reject(error);
    }
    const refusals = this.refusals;
    refusals?.forget(key);
    let pending: Promise<void>;
    try {
      pending = this.buckets.reset(key, readClock(this.clock));
    } catch (error) {
      return Promise.reject(this.handler.resetFailed(error));
    }
    const bounded = this.selfTimed ? pending : withDeadline(pending, this.timeoutMs, this.what);
    const settled = bounded.catch((error: unknown) => Promise.reject(this.handler.resetFailed(error)));
    if (refusals === undefined) return settled;
    // Forgotten again once the store has reset: a refusal learnt meanwhile may predate the reset.
    return settled.finally(() => refusals.forget(key));
  }

  unblock(key: string): Promise<void> {
    return this.reset(key);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.refusals?.clear();
    this.store.unbind(this.name);
  }

  stats(): Readonly<LimiterStats> {
    const health = this.handler.breaker.health();
    return { ...this.handler.stats, breaker: health.breaker, breakerOpenings: health.openings };
  }

  storeHealth(): StoreHealth {
    return this.handler.breaker.health();
  }

  [storeAnswered](): void {
    this.handler.breaker.succeeded();
  }

  /** A reply of the store: the breaker learns that it answers (a compare while nothing failed). */
  private readonly answered = (decision: Decision): Decision => {
    this.handler.breaker.succeeded();
    return decision;
  };

  /**
   * Whether the open breaker answers this call instead of the store: the store is known to be
   * failing, and the call is not the probe of this interval.
   */
  protected shortCircuited(): boolean {
    const breaker = this.handler.breaker;
    return breaker.isOpen && !breaker.probe();
  }

  [decideOnFailure](
    error: unknown,
    key: string,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
  ): Decision {
    return this.handler.decide(error, key, cost, now, limit);
  }

  [reportTake](
    key: string,
    cost: number,
    decision: Decision | undefined,
    error: unknown,
    latencyMs: number,
  ): void {
    if (decision !== undefined) {
      const reported = this.mode === 'shadow' ? shadowOf(decision) : decision;
      reportDecision(this.events, this.name, this.store.kind, key, reported, latencyMs);
    } else reportFailure(this.events, this.name, this.store.kind, key, cost, error, latencyMs);
  }

  /** A take: decided, and reported when someone listens (peeks are not reported). */
  protected decideTake(
    key: string,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
  ): Promise<Decision> {
    if (this.refusals !== undefined) {
      const remembered = this.refusals.answer(key, cost, limit, now);
      if (remembered !== undefined) {
        if (this.events.listening) this[reportTake](key, cost, remembered, undefined, 0);
        return Promise.resolve(remembered);
      }
    }
    if (!this.events.listening) return this.decide(key, cost, now, limit);
    if (cost > this.rule.capacityFor(limit)) {
      // Refused for good without asking the store: no store latency to report.
      const refused = refusedForGood(this.rule, this.name, cost, now, limit);
      this[reportTake](key, cost, refused, undefined, 0);
      return Promise.resolve(refused);
    }
    const started = performance.now();
    return this.decide(key, cost, now, limit).then(
      (decision) => {
        this[reportTake](key, cost, decision, undefined, performance.now() - started);
        return decision;
      },
      (error: unknown) => {
        this[reportTake](key, cost, undefined, error, performance.now() - started);
        throw error;
      },
    );
  }

  protected decide(key: string, cost: number, now: number, limit: CallLimit | undefined): Promise<Decision> {
    if (cost > this.rule.capacityFor(limit)) {
      return Promise.resolve(refusedForGood(this.rule, this.name, cost, now, limit));
    }
    if (this.shortCircuited()) return settle(() => this.handler.shortCircuit(key, cost, now, limit));
    let pending: Promise<Decision>;
    try {
      pending = this.buckets.take(key, cost, now, limit);
    } catch (error) {
      // A store that throws synchronously is failing like one that rejects.
      return settle(() => this.handler.decide(error, key, cost, now, limit));
    }
    const bounded = this.selfTimed ? pending : withDeadline(pending, this.timeoutMs, this.what);
    const refusals = this.refusals;
    if (refusals === undefined || cost === 0) {
      return bounded.then(this.answered, (error: unknown) =>
        this.handler.decide(error, key, cost, now, limit),
      );
    }
    const epoch = refusals.epoch;
    return bounded.then(
      (decision) => {
        this.handler.breaker.succeeded();
        refusals.remember(key, cost, limit, now, decision, epoch);
        return decision;
      },
      (error: unknown) => this.handler.decide(error, key, cost, now, limit),
    );
  }
}

function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** No key checked yet: equal to no key a caller can pass. */
const NOT_CHECKED = Symbol('no key checked');

class SyncRuleLimiter extends RuleLimiter implements SyncLimiter {
  declare readonly store: SyncStore;
  declare readonly buckets: SyncRuleBuckets;
  /** The key the last synchronous take checked; never equal to a key before the first (a symbol). */
  private checkedKey: unknown = NOT_CHECKED;

  // The memory store decides synchronously and cannot hang: no timeout timer, no failure policy.
  override take(key: string, options?: TakeOptions): Promise<Decision> {
    try {
      return Promise.resolve(this.takeSync(key, options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  override peek(key: string, options?: Pick<TakeOptions, 'limit' | 'period' | 'burst'>): Promise<Decision> {
    try {
      return Promise.resolve(this.peekSync(key, options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  override reset(key: string): Promise<void> {
    try {
      this.resetSync(key);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  // The memory store reserves synchronously and cannot hang: no timer, no failure policy.
  protected override reserveSlot(
    key: string,
    cost: number,
    now: number,
    maxWaitMs: number,
    limit: CallLimit | undefined,
  ): Promise<Decision> {
    // A synchronous store written elsewhere may reserve only asynchronously.
    if (this.buckets.reserveSync === undefined) return super.reserveSlot(key, cost, now, maxWaitMs, limit);
    try {
      if (cost > this.rule.capacityFor(limit))
        return Promise.resolve(refusedForGood(this.rule, this.name, cost, now, limit));
      return Promise.resolve(this.buckets.reserveSync(key, cost, now, maxWaitMs, limit));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  takeSync(key: string, options?: TakeOptions): Decision {
    if (this.closed) throw closedError(this.name);
    // A key checked on the previous call (one client taking again and again) is not scanned again.
    if (key !== this.checkedKey) {
      checkKey(key);
      this.checkedKey = key;
    }
    const cost = options === undefined ? 1 : costOf(options.cost);
    const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
    const decision = this.takeEnforced(key, cost, limit, readClock(this.clock));
    return this.mode === 'shadow' ? shadowOf(decision) : decision;
  }

  /** The decision enforcement makes at `now` (reported as the limit's mode says), its input checked. */
  private takeEnforced(key: string, cost: number, limit: CallLimit | undefined, now: number): Decision {
    // Refused the same way as on a shared store (which is never asked), so that a decision does
    // not depend on the store behind the limiter.
    if (cost > this.rule.capacityFor(limit)) {
      const refused = refusedForGood(this.rule, this.name, cost, now, limit);
      if (this.events.listening) this[reportTake](key, cost, refused, undefined, 0);
      return refused;
    }
    if (!this.events.listening) return this.buckets.takeSync(key, cost, now, limit);
    const started = performance.now();
    const decision = this.buckets.takeSync(key, cost, now, limit);
    this[reportTake](key, cost, decision, undefined, performance.now() - started);
    return decision;
  }

  takeWithReceiptSync(key: string, options?: TakeOptions): ReceiptedDecision {
    if (this.closed) throw closedError(this.name);
    checkKey(key);
    const cost = options === undefined ? 1 : costOf(options.cost);
    const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
    const now = readClock(this.clock);
    const generation = this.buckets.resetGeneration?.(key);
    const decision = this.takeEnforced(key, cost, limit, now);
    return {
      decision: this.mode === 'shadow' ? shadowOf(decision) : decision,
      receipt: this.receipts.issue(this.name, key, decision, now, limit, generation),
    };
  }

  override refund(receipt: Receipt): Promise<void> {
    try {
      this.refundSync(receipt);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  override settle(receipt: Receipt, actualCost: number): Promise<void> {
    try {
      this.settleSync(receipt, actualCost);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  refundSync(receipt: Receipt): void {
    this.adjustSyncBy(receipt, undefined);
  }

  settleSync(receipt: Receipt, actualCost: number): void {
    this.adjustSyncBy(receipt, actualCost);
  }

  private adjustSyncBy(receipt: Receipt, actualCost: number | undefined): void {
    if (this.closed) throw closedError(this.name);
    const actual = actualCost === undefined ? 0 : settledCost(actualCost);
    this.receipts.close(receipt, this.name);
    const delta = actual - receipt.cost;
    if (delta === 0) return;
    try {
      this.buckets.adjustSync(
        receipt.key,
        delta,
        readClock(this.clock),
        receipt.at,
        receipt.until,
        receipt.limit,
        receipt.generation,
      );
    } catch (error) {
      this.receipts.reopen(receipt);
      throw error;
    }
  }

  peekSync(key: string, options?: Pick<TakeOptions, 'limit' | 'period' | 'burst'>): Decision {
    if (this.closed) throw closedError(this.name);
    checkKey(key);
    const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
    const decision = this.buckets.takeSync(key, 0, readClock(this.clock), limit);
    return this.mode === 'shadow' ? shadowOf(decision) : decision;
  }

  resetSync(key: string): void {
    if (this.closed) throw closedError(this.name);
    checkKey(key);
    this.buckets.resetSync(key);
  }

  unblockSync(key: string): void {
    this.resetSync(key);
  }
}

/**
 * What a limit in shadow mode answers for a decision: an admission as it is; a refusal turned
 * into an admission with `source: 'shadow'`, keeping what enforcement would have said
 * (remaining, retryAfterMs, resetMs) for logs and events.
 */
export function shadowOf(decision: Decision): Decision {
  if (decision.allowed) return decision;
  return { ...decision, allowed: true, retryAfterSeconds: 0, source: 'shadow' } as Decision;
}
