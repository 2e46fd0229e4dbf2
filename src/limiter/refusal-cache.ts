import { makeDecision, type Decision } from '../core/decision.js';
import { SluiceError, optionError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import { sameCallLimit } from '../core/call-limit.js';
import type { CallLimit, Rule } from '../core/rules/rule.js';

/**
 * Options of a limiter's local cache of refusals (the `refusalCache` option of `createLimiter`).
 * `true` takes every default.
 */
export interface RefusalCacheOptions {
  /**
   * Keys per generation: when the newest generation holds this many keys it becomes the older
   * one and the older one is dropped whole, so the cache never holds more than 2 × maxKeys
   * refusals, however many keys are refused.
   * @default 10000
   */
  maxKeys?: number;
}

const refusalCacheKeys = ['maxKeys'] as const;
const DEFAULT_MAX_KEYS = 10_000;
const MAX_MAX_KEYS = 10_000_000;

/**
 * How much earlier than the store's advice a remembered refusal stops answering, in ms. Stores
 * round their advice up to a whole ms, and a store deciding on its own clock may read it in whole
 * ms: either can make the advice up to 1 ms later than the first instant that admits. Ending the
 * local answer 1 ms early keeps every local refusal one the store would have given.
 */
const ROUNDING_MARGIN_MS = 1;

/** What one remembered refusal holds; one fixed shape, updated in place when a key is refused again. */
class RememberedRefusal {
  /** When the refusal was learnt, by the limiter's clock (read before the store was asked). */
  since = 0;
  /** When a take of `cost` may succeed: `since` + the store's retryAfterMs. */
  retryAt = 0;
  /** When the refusal's window ends or its bucket is full (`since` + its resetMs). */
  resetAt = 0;
  /** The smallest cost the refusal holds for: the cost that was refused. */
  cost = 0;
  /** The per-call limit it was refused under (undefined: the rule's own). */
  callLimit: CallLimit | undefined = undefined;
  /** The refused decision's reported limit, capacity and window. */
  limit = 0;
  capacity = 0;
  windowMs = 0;

  /** Holds `decision`, the refusal of a take of `cost` under `callLimit` learnt at `since`. */
  learn(since: number, cost: number, callLimit: CallLimit | undefined, decision: Decision): void {
    this.since = since;
    this.retryAt = since + decision.retryAfterMs;
    this.resetAt = since + decision.resetMs;
    this.cost = cost;
    this.callLimit = callLimit;
    this.limit = decision.limit;
    this.capacity = decision.capacity;
    this.windowMs = decision.windowMs;
  }
}

/**
 * Refusals a shared store gave, remembered per key until the store's retry instant, so that a
 * flood of takes on a refused key is answered without a round trip. It only ever answers takes
 * the store would certainly refuse:
 *
 * The store refused a take of cost c under a per-call limit L at some instant s, saying a take of
 * c cannot succeed before s + retryAfterMs. Until then, nothing this rule does can make room
 * sooner: admitted takes only consume, refusals consume nothing (rules with `penalty` are
 * excluded, see {@link resolveRefusalCache}), and time only gives room back at the pace the advice
 * already counts on. A take of a cost c' ≥ c under the same L needs at least as much room as c,
 * so it is refused too before that instant; a smaller cost or another limit might fit, and asks
 * the store. The limiter's clock is read before the store is asked, so the store decided no
 * earlier than `since`, and `since` + retryAfterMs − {@link ROUNDING_MARGIN_MS} is never later
 * than the store's own instant. What the cache cannot see is a reset made elsewhere (another
 * process, or the store's buckets reset directly): such a key stays refused here until the
 * remembered instant, at most the retry advice the client was given anyway.
 *
 * Memory: two generations of at most `maxKeys` keys (as the memory store's buckets), no timers;
 * a refusal past its instant is dropped when its key is next looked up, or with its generation.
 * The keys are the limiter's own (pseudonymous when the docs are followed); they are never logged.
 */
export class RefusalCache {
  /** The limiter's name, which its decisions carry. */
  readonly name: string;
  readonly maxKeys: number;
  private current = new Map<string, RememberedRefusal>();
  private previous = new Map<string, RememberedRefusal>();
  /**
   * Bumped when a reset starts and when it ends: a take whose store call overlapped a reset may
   * carry the state from before it, so its refusal is not remembered.
   */
  private resets = 0;

  constructor(name: string, maxKeys: number = DEFAULT_MAX_KEYS) {
    this.name = name;
    this.maxKeys = maxKeys;
  }

  /** Refusals held in both generations (expired ones included until they are dropped). */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  /** A token to pass to {@link remember}: which resets a store call started after. */
  get epoch(): number {
    return this.resets;
  }

  /**
   * The refusal the store would give a take of `cost` on `key` under `callLimit` at `now`, or
   * undefined when only the store can tell. A local refusal: remaining 0, retry counted down to
   * the remembered instant, source `store` (the store's refusal, still in force).
   */
  answer(key: string, cost: number, callLimit: CallLimit | undefined, now: number): Decision | undefined {
    let entry = this.current.get(key);
    let older = false;
    if (entry === undefined) {
      entry = this.previous.get(key);
      if (entry === undefined) return undefined;
      older = true;
    }
    // A clock that went back before the refusal was learnt cannot say how long it has held.
    if (now >= entry.retryAt - ROUNDING_MARGIN_MS || now < entry.since) {
      if (older) this.previous.delete(key);
      else this.current.delete(key);
      return undefined;
    }
    if (cost < entry.cost || cost > entry.capacity || !sameCallLimit(callLimit, entry.callLimit))
      return undefined;
    if (older) this.promote(key, entry);
    const retryAfterMs = entry.retryAt - now;
    let resetMs = entry.resetAt - now;
    // Only a sliding window's retry can lie past its window's end; the next window ends windowMs later.
    if (resetMs <= 0)
      resetMs = entry.windowMs > 0 ? entry.windowMs - (-resetMs % entry.windowMs) : retryAfterMs;
    return makeDecision({
      allowed: false,
      name: this.name,
      limit: entry.limit,
      capacity: entry.capacity,
      remaining: 0,
      cost,
      retryAfterMs,
      resetMs,
      windowMs: entry.windowMs,
    });
  }

  /**
   * Remembers `decision`, the store's answer to a take of `cost` on `key` asked at `now`, when it
   * is a refusal that waiting ends (finite advice) and no reset overlapped the call (`epoch`
   * taken before it).
   */
  remember(
    key: string,
    cost: number,
    callLimit: CallLimit | undefined,
    now: number,
    decision: Decision,
    epoch: number,
  ): void {
    if (decision.allowed || decision.source !== 'store' || cost === 0 || epoch !== this.resets) return;
    const retryAfterMs = decision.retryAfterMs;
    // Advice of a ms or less, after the margin, would answer nothing.
    if (!(retryAfterMs > ROUNDING_MARGIN_MS) || retryAfterMs === Infinity) return;
    let entry = this.current.get(key);
    if (entry === undefined) {
      this.previous.delete(key);
      entry = new RememberedRefusal();
      this.store(key, entry);
    }
    entry.learn(now, cost, callLimit, decision);
  }

  /** Forgets `key` (a reset of it starts or ends) and stops remembering takes that overlap it. */
  forget(key: string): void {
    this.resets++;
    this.current.delete(key);
    this.previous.delete(key);
  }

  /** Drops everything (the limiter closed). */
  clear(): void {
    this.resets++;
    this.current = new Map();
    this.previous = new Map();
  }

  private promote(key: string, entry: RememberedRefusal): void {
    this.previous.delete(key);
    this.store(key, entry);
  }

  private store(key: string, entry: RememberedRefusal): void {
    if (this.current.size >= this.maxKeys) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(key, entry);
  }
}

/**
 * The cache a limiter's `refusalCache` option asks for, or undefined: not asked for, or a memory
 * store (its answers are local already: the option does nothing there, so that one set of limiter
 * options works on the memory store in development and a shared store in production).
 * @throws SluiceError `SLUICE_CONFIG` for a malformed option, or with a rule that has `penalty`
 */
export function resolveRefusalCache(
  limiterName: string,
  option: unknown,
  rule: Rule,
  storeIsLocal: boolean,
): RefusalCache | undefined {
  if (option === undefined || option === false) return undefined;
  const owner = `limiter ${JSON.stringify(limiterName)} refusalCache`;
  if (option !== true && (typeof option !== 'object' || option === null || Array.isArray(option))) {
    throw optionError(owner, 'true, false or an object { maxKeys?: number }');
  }
  let maxKeys = DEFAULT_MAX_KEYS;
  if (option !== true) {
    checkOptionKeys(owner, option, refusalCacheKeys);
    const given = (option as RefusalCacheOptions).maxKeys;
    if (given !== undefined) {
      if (!Number.isSafeInteger(given) || given < 1 || given > MAX_MAX_KEYS) {
        throw optionError(`${owner} maxKeys`, `a whole number from 1 to ${MAX_MAX_KEYS}`);
      }
      maxKeys = given;
    }
  }
  if (rule.penalty) {
    // Under penalty every refusal is charged in the store; one answered here would not be, so a
    // flood would cost its sender less with the cache than without it.
    throw new SluiceError(
      'SLUICE_CONFIG',
      `${owner} cannot be used with a rule that has penalty: every refusal must reach the store to be charged`,
    );
  }
  return storeIsLocal ? undefined : new RefusalCache(limiterName, maxKeys);
}
