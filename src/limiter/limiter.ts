import { systemClock, type Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { SluiceError, configError, optionError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import type { Rule } from '../core/rules/rule.js';
import {
  isSyncStore,
  type RuleBuckets,
  type Store,
  type SyncRuleBuckets,
  type SyncStore,
} from '../stores/contract/store.js';
import { MemoryStore } from '../stores/memory/store.js';
import { checkRuleName } from '../stores/shared/rule-name.js';
import { resolveTimeout } from './store-timeout.js';
import { DecisionEvents } from './events.js';
import { resolveRefusalCache } from './refusal-cache.js';
import type { Receipt, ReceiptedDecision } from './receipts.js';
import { WaitingRoom, readWaitingBounds } from './waiting-room.js';
import type { WaitOptions, WaitedDecision } from './wait-for-slot.js';
import { Breaker, readBreakerOptions, type StoreHealth } from './breaker.js';
import { FailureHandler, consoleLogger, type FailurePolicy, type LimiterStats } from './failure.js';
import type { LimiterMode, LimiterOptions, TakeOptions } from './limiter-options.js';
import { RuleLimiter } from './rule-limiter.js';
import { SyncRuleLimiter } from './sync-rule-limiter.js';

// The options have their own module; they are named here too, where createLimiter is.
export type { LimiterMode, LimiterOptions, TakeOptions } from './limiter-options.js';

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
