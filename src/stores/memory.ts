import { createHash } from 'node:crypto';
import type { Decision } from '../core/decision.js';
import { SluiceError, configError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import type { Rule } from '../core/rule.js';
import type { BucketState } from '../core/state.js';
import type { SyncRuleBuckets, SyncStore, TakeEntry } from '../store.js';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Keys per generation and rule (ADR-055: N). When the current generation reaches N keys it
   * becomes the previous one and the old previous is dropped whole, so a rule never holds more
   * than 2N buckets, however many distinct keys arrive.
   * @default 4096
   */
  maxKeysPerGeneration?: number;
}

/** Keys longer than this are stored as a hash, so that memory per bucket stays bounded. */
export const MAX_RAW_KEY_LENGTH = 128;
const memoryStoreKeys = ['maxKeysPerGeneration'] as const;
// A hashed key is padded to MAX_RAW_KEY_LENGTH + 1 characters: no raw key is that long, so a
// hashed key can never equal a raw one.
const hashedKeyPadding = '#'.repeat(MAX_RAW_KEY_LENGTH + 1 - 43);

/**
 * Buckets in this process's memory: the embedded default (E1). Exact, synchronous and bounded
 * (B1): per rule two generations of at most N keys each, no timers, no background work.
 *
 * The trade-off (B2): a flood of new keys rotates generations faster, and a key that has not
 * been used for two rotations is forgotten, which equals a full bucket. A million distinct keys
 * cost about a megabyte per rule instead of a gigabyte. A process restart forgets everything too.
 *
 * Independent memory stores in N processes enforce N times the limit (E4): use the Redis or
 * PostgreSQL store when several processes must share one limit.
 *
 * @example
 * const store = new MemoryStore();
 * const login = createLimiter({ name: 'login', rule: tokenBucket({ limit: 10, period: '10m' }), store });
 */
export class MemoryStore implements SyncStore {
  readonly kind = 'memory';
  /** Keys per generation and rule. */
  readonly maxKeysPerGeneration: number;
  private readonly rules = new Map<string, MemoryRuleBuckets>();

  constructor(options: MemoryStoreOptions = {}) {
    checkOptionKeys('MemoryStore', options, memoryStoreKeys);
    const { maxKeysPerGeneration = 4096 } = options;
    if (!Number.isSafeInteger(maxKeysPerGeneration) || maxKeysPerGeneration < 1) {
      throw configError('MemoryStore maxKeysPerGeneration', 'a positive whole number', maxKeysPerGeneration);
    }
    this.maxKeysPerGeneration = maxKeysPerGeneration;
  }

  bind(name: string, rule: Rule): MemoryRuleBuckets {
    if (this.rules.has(name)) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `a rule named ${JSON.stringify(name)} is already bound to this MemoryStore; every limit needs its own name`,
      );
    }
    const buckets = new MemoryRuleBuckets(name, rule, this.maxKeysPerGeneration);
    this.rules.set(name, buckets);
    return buckets;
  }

  /** How many buckets a rule holds now (both generations): at most 2 × maxKeysPerGeneration. */
  bucketCount(name: string): number {
    const buckets = this.rules.get(name);
    return buckets === undefined ? 0 : buckets.size;
  }

  unbind(name: string): void {
    this.rules.delete(name);
  }

  takeAllSync(entries: readonly TakeEntry[], now: number): Decision[] {
    const decisions: Decision[] = [];
    let admitted = true;
    for (const entry of entries) {
      const decision = this.bucketsOf(entry).evaluate(entry.key, entry.cost, now, entry.limit);
      decisions.push(decision);
      if (!decision.allowed) admitted = false;
    }
    if (!admitted) return decisions;
    // Nothing can run between the evaluation above and the charge below: one synchronous pass.
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as TakeEntry;
      decisions[i] = this.bucketsOf(entry).takeSync(entry.key, entry.cost, now, entry.limit);
    }
    return decisions;
  }

  takeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    try {
      return Promise.resolve(this.takeAllSync(entries, now));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async close(): Promise<void> {
    this.rules.clear();
  }

  private bucketsOf(entry: TakeEntry): MemoryRuleBuckets {
    const buckets = entry.buckets;
    if (!(buckets instanceof MemoryRuleBuckets) || this.rules.get(buckets.name) !== buckets) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `rule ${JSON.stringify(buckets.name)} is not bound to this MemoryStore`,
      );
    }
    return buckets;
  }
}

/** One rule's buckets in a {@link MemoryStore}: two generations of at most N keys. */
export class MemoryRuleBuckets implements SyncRuleBuckets {
  readonly name: string;
  readonly rule: Rule;
  private readonly maxKeys: number;
  private current = new Map<string, BucketState>();
  private previous = new Map<string, BucketState>();
  /** Origin of this rule's scaled time: the first `now` seen, which keeps GCRA integers small. */
  private epoch = Number.NaN;

  constructor(name: string, rule: Rule, maxKeys: number) {
    this.name = name;
    this.rule = rule;
    this.maxKeys = maxKeys;
  }

  /** Buckets held in both generations. */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  takeSync(key: string, cost: number, now: number, limit: number | undefined): Decision {
    const id = key.length > MAX_RAW_KEY_LENGTH ? hashKey(key) : key;
    if (this.epoch !== this.epoch) this.epoch = now;
    let state = this.find(id);
    if (state === undefined) {
      if (cost === 0)
        return this.rule.decide(
          this.rule.initialState(now, this.epoch),
          now,
          this.epoch,
          this.name,
          0,
          limit,
          false,
        );
      state = this.rule.initialState(now, this.epoch);
      const decision = this.rule.decide(state, now, this.epoch, this.name, cost, limit, true);
      // A key that changed nothing (a refused take without penalty) needs no bucket.
      if (decision.allowed || this.rule.penalty) this.insert(id, state);
      return decision;
    }
    return this.rule.decide(state, now, this.epoch, this.name, cost, limit, true);
  }

  /** The decision a take would get, without charging anything. */
  evaluate(key: string, cost: number, now: number, limit: number | undefined): Decision {
    const id = key.length > MAX_RAW_KEY_LENGTH ? hashKey(key) : key;
    if (this.epoch !== this.epoch) this.epoch = now;
    const state = this.find(id) ?? this.rule.initialState(now, this.epoch);
    return this.rule.decide(state, now, this.epoch, this.name, cost, limit, false);
  }

  resetSync(key: string): void {
    const id = key.length > MAX_RAW_KEY_LENGTH ? hashKey(key) : key;
    this.current.delete(id);
    this.previous.delete(id);
  }

  take(key: string, cost: number, now: number, limit: number | undefined): Promise<Decision> {
    try {
      return Promise.resolve(this.takeSync(key, cost, now, limit));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  reset(key: string): Promise<void> {
    this.resetSync(key);
    return Promise.resolve();
  }

  /** Looks a key up in both generations; a key found in the previous one moves to the current. */
  private find(id: string): BucketState | undefined {
    const state = this.current.get(id);
    if (state !== undefined) return state;
    const old = this.previous.get(id);
    if (old !== undefined) {
      this.previous.delete(id);
      this.insert(id, old);
    }
    return old;
  }

  private insert(id: string, state: BucketState): void {
    if (this.current.size >= this.maxKeys) {
      // Generation change (ADR-055): the current map becomes the previous one, the old previous
      // is dropped whole. O(1), no scan, no timer.
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(id, state);
  }
}

function hashKey(key: string): string {
  return hashedKeyPadding + createHash('sha256').update(key).digest('base64url');
}
