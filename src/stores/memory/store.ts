import type { Decision } from '../../core/decision.js';
import { SluiceError, configError, optionError } from '../../core/errors.js';
import { checkOptionKeys } from '../../core/options.js';
import type { CallLimit, Rule } from '../../core/rules/rule.js';
import { checkReservation, reserverOf } from '../../core/reservation.js';
import {
  assertDistinctEntries,
  type SyncRuleBuckets,
  type SyncStore,
  type TakeEntry,
} from '../contract/store.js';
import { EvictedSummary } from './evicted-summary.js';
import { KeyHasher } from './key-hash.js';
import { newBucket, resetBucket, type MemoryBucket } from './bucket.js';
import { MemoryLeaseBuckets } from './lease-buckets.js';
import { checkLeaseGroup, type LeaseStore } from '../contract/lease-store.js';
import { bucketId } from '../shared/bucket-id.js';
import { assertNameFree, checkRuleName } from '../shared/rule-name.js';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Keys per generation and rule (N). When the current generation reaches N keys it
   * becomes the previous one and the old previous is dropped whole, so a rule never holds more
   * than 2N buckets, however many distinct keys arrive.
   * @default 4096
   */
  maxKeysPerGeneration?: number;
  /**
   * Names of the rules whose forgotten buckets are remembered (see {@link MemoryStore}): for each
   * of them a fixed-size, conservative summary of the buckets that left the maps, so that a key
   * flood cannot hand any key its bucket back fuller than it left. The price is false refusals
   * of fresh keys while a flood is heavy (docs/stores.md measures them). Every other rule
   * forgets: a forgotten bucket is a new bucket, and a fresh key is never refused because of
   * other keys. Rule names as `createLimiter` takes them, each once.
   * @default []
   * @example new MemoryStore({ rememberForgotten: ['login'] })
   */
  rememberForgotten?: readonly string[];
  /**
   * Rows of the evicted-bucket summary of a rule named in `rememberForgotten`: how many cells a
   * forgotten key is remembered in. More rows make false refusals of fresh keys rarer while the summary is
   * lightly loaded, and cost one more cell read per key that is not in the maps.
   * A whole number from 1 to 16.
   * @default 4
   */
  summaryDepth?: number;
  /**
   * Cells per row of the evicted-bucket summary of a rule named in `rememberForgotten`: a power
   * of two from 2^4 to 2^24. Memory per such rule is `summaryDepth × summaryWidth × 8` bytes, allocated the first time the rule forgets
   * a bucket that was not full (at the defaults: 512 KiB).
   * @default 16384
   */
  summaryWidth?: number;
}

const memoryStoreKeys = [
  'maxKeysPerGeneration',
  'rememberForgotten',
  'summaryDepth',
  'summaryWidth',
] as const;

/**
 * Buckets in this process's memory: the embedded default. Exact, synchronous and bounded: per
 * rule two generations of at most N keys each, no timers, no background work.
 *
 * What "bounded" costs. A flood of new keys rotates generations faster, and a key not used for
 * two rotations leaves the maps. By default a bucket that left the maps is forgotten: the key
 * comes back with a new bucket, exactly as after a restart, and a fresh key is never refused
 * because of other keys, whatever the flood. A flood of throwaway keys can therefore refill a
 * bucket that one of them once drained; put a rule keyed by something the client cannot mint
 * cheaply (its address) ahead of a rule keyed by something it can (a nick), and each throwaway
 * key costs from the first rule's budget.
 *
 * A rule named in `rememberForgotten` makes the other choice: a bucket that leaves its maps
 * while not full is folded into a fixed-size summary of the rule (`summaryDepth` rows ×
 * `summaryWidth` cells, each cell the most restrictive state folded into it), and a key that is
 * not in the maps starts from the least restrictive of its cells. That is never looser than the
 * key's own state, and exact while the key holds the maximum of one of its cells. The price is
 * paid by fresh keys while many evicted buckets are still not full: some start short of full,
 * and a heavy enough flood refuses them (docs/stores.md has the measured table and the command
 * that produces it). What counts is the number of evicted buckets not yet full (rate × refill
 * time of one take, less the 2N in the maps) against the width: a wider summary moves the
 * thresholds up in proportion. A reset hides what the summary holds for that key until it is
 * next evicted.
 *
 * Memory per rule: at most 2N buckets (about 1.4 MB with N = 4096 and short keys), plus, for a
 * rule named in `rememberForgotten`, the summary's `summaryDepth × summaryWidth × 8` bytes (512
 * KiB by default, allocated the first time a bucket that is not full leaves the maps): under
 * 2 MB however many keys arrive. A process restart forgets everything.
 *
 * Independent memory stores in N processes enforce N times the limit: use the Redis or
 * PostgreSQL store when several processes must share one limit.
 *
 * @example
 * const store = new MemoryStore();
 * const login = createLimiter({ name: 'login', rule: tokenBucket({ limit: 10, period: '10m' }), store });
 */
export class MemoryStore implements SyncStore, LeaseStore {
  readonly kind = 'memory';
  /** Keys per generation and rule. */
  readonly maxKeysPerGeneration: number;
  /** Rows of each rule's evicted-bucket summary. */
  readonly summaryDepth: number;
  /** Cells per row of each rule's evicted-bucket summary. */
  readonly summaryWidth: number;
  /** The rules that remember their forgotten buckets in a summary (`rememberForgotten`). */
  readonly rememberForgotten: ReadonlySet<string>;
  private readonly rules = new Map<string, MemoryRuleBuckets>();
  private readonly leaseGroups = new Map<string, MemoryLeaseBuckets>();
  /** One seed per store, drawn at random, so that nobody outside can aim hash collisions. */
  private readonly hasher = new KeyHasher();

  constructor(options: MemoryStoreOptions = {}) {
    checkOptionKeys('MemoryStore', options, memoryStoreKeys);
    const { maxKeysPerGeneration = 4096, summaryDepth = 4, summaryWidth = 16384 } = options;
    if (!Number.isSafeInteger(maxKeysPerGeneration) || maxKeysPerGeneration < 1) {
      throw configError('MemoryStore maxKeysPerGeneration', 'a positive whole number', maxKeysPerGeneration);
    }
    if (!Number.isSafeInteger(summaryDepth) || summaryDepth < 1 || summaryDepth > 16) {
      throw configError('MemoryStore summaryDepth', 'a whole number from 1 to 16', summaryDepth);
    }
    if (!isPowerOfTwo(summaryWidth) || summaryWidth < 2 ** 4 || summaryWidth > 2 ** 24) {
      throw configError('MemoryStore summaryWidth', 'a power of two from 16 to 16777216', summaryWidth);
    }
    this.maxKeysPerGeneration = maxKeysPerGeneration;
    this.summaryDepth = summaryDepth;
    this.summaryWidth = summaryWidth;
    this.rememberForgotten = checkRememberForgotten(options.rememberForgotten);
  }

  bind(name: string, rule: Rule): MemoryRuleBuckets {
    checkRuleName(name, 'MemoryStore rule name');
    assertNameFree('MemoryStore', name, this.rules, this.leaseGroups);
    // A sliding window's summary ages its counts window by window, so it needs the length.
    const slidingMs = rule.shape === 'sliding-count' ? rule.windowMs : 0;
    if (
      slidingMs !== 0 &&
      (typeof slidingMs !== 'number' || !Number.isSafeInteger(slidingMs) || slidingMs < 1)
    )
      throw optionError(
        'MemoryStore bind rule windowMs',
        "a positive whole number for a 'sliding-count' rule",
      );
    const summary = this.rememberForgotten.has(name)
      ? new EvictedSummary(this.summaryDepth, this.summaryWidth, slidingMs)
      : undefined;
    const buckets = new MemoryRuleBuckets(name, rule, this.maxKeysPerGeneration, summary, this.hasher);
    this.rules.set(name, buckets);
    return buckets;
  }

  /**
   * Binds a lease group (see `concurrencyLimit`): per key the leases held, at most `max`, each
   * expiring `ttlMs` after it was granted; bounded like the buckets (two generations of N keys,
   * and a fixed-size summary of the keys that left them holding leases).
   */
  bindLeases(name: string, max: number, ttlMs: number): MemoryLeaseBuckets {
    checkRuleName(name, 'MemoryStore lease group name');
    checkLeaseGroup('MemoryStore', max, ttlMs);
    assertNameFree('MemoryStore', name, this.rules, this.leaseGroups);
    const group = new MemoryLeaseBuckets(name, max, ttlMs, this.maxKeysPerGeneration, this.hasher);
    this.leaseGroups.set(name, group);
    return group;
  }

  /** How many buckets a rule holds now (both generations): at most 2 × maxKeysPerGeneration. */
  bucketCount(name: string): number {
    const buckets = this.rules.get(name);
    return buckets === undefined ? 0 : buckets.size;
  }

  /** Bytes of a rule's evicted-bucket summary: 0 until the rule first forgets a bucket that was not full. */
  summaryBytes(name: string): number {
    const buckets = this.rules.get(name);
    return buckets === undefined ? 0 : buckets.summaryBytes;
  }

  /** Frees a rule: its maps and its summary are dropped, and its buckets answer SLUICE_CONFIG. */
  unbind(name: string): void {
    const group = this.leaseGroups.get(name);
    if (group !== undefined) {
      this.leaseGroups.delete(name);
      group.free();
    }
    const buckets = this.rules.get(name);
    if (buckets === undefined) return;
    this.rules.delete(name);
    buckets.free();
  }

  takeAllSync(entries: readonly TakeEntry[], now: number): Decision[] {
    assertDistinctEntries(entries);
    const owners: MemoryRuleBuckets[] = [];
    const states: MemoryBucket[] = [];
    const decisions: Decision[] = [];
    let admitted = true;
    for (const entry of entries) {
      const buckets = this.bucketsOf(entry);
      const state = buckets.stateOf(entry.key, now);
      owners.push(buckets);
      states.push(state);
      const decision = buckets.decide(state, entry.cost, now, entry.limit, false);
      decisions.push(decision);
      if (!decision.allowed) admitted = false;
    }
    if (!admitted) return decisions;
    // Nothing can run between the evaluation above and the charge below: one synchronous pass,
    // on the very states evaluated, so that every charge decides as its evaluation did even when
    // a long list rotated a bucket out of the maps in between.
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as TakeEntry;
      const buckets = owners[i] as MemoryRuleBuckets;
      const state = states[i] as MemoryBucket;
      decisions[i] = buckets.decide(state, entry.cost, now, entry.limit, true);
      if (entry.cost !== 0) buckets.keep(entry.key, state, now);
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
    for (const name of [...this.rules.keys(), ...this.leaseGroups.keys()]) this.unbind(name);
  }

  private bucketsOf(entry: TakeEntry): MemoryRuleBuckets {
    const buckets = entry.buckets;
    if (!(buckets instanceof MemoryRuleBuckets) || this.rules.get(buckets.name) !== buckets) {
      throw notBound(buckets.name);
    }
    return buckets;
  }
}

function notBound(name: string): SluiceError {
  return new SluiceError('SLUICE_CONFIG', `rule ${JSON.stringify(name)} is not bound to this MemoryStore`);
}

/** The `rememberForgotten` option as a set: an array of distinct rule names, or nothing. */
function checkRememberForgotten(names: unknown): ReadonlySet<string> {
  const expected = 'an array of distinct rule names';
  if (names === undefined) return new Set();
  if (!Array.isArray(names)) throw optionError('MemoryStore rememberForgotten', expected);
  const set = new Set<string>();
  for (const name of names as unknown[]) {
    checkRuleName(name, 'MemoryStore rememberForgotten entry');
    if (set.has(name)) throw optionError('MemoryStore rememberForgotten', expected);
    set.add(name);
  }
  return Object.freeze(set) as ReadonlySet<string>;
}

function isPowerOfTwo(value: unknown): value is number {
  return (
    Number.isSafeInteger(value) &&
    (value as number) > 0 &&
    ((value as number) & ((value as number) - 1)) === 0
  );
}

/**
 * One rule's buckets in a {@link MemoryStore}: two generations of at most N keys, and a summary
 * of the buckets that left them.
 */
export class MemoryRuleBuckets implements SyncRuleBuckets {
  readonly name: string;
  readonly rule: Rule;
  private readonly maxKeys: number;
  private current = new Map<string, MemoryBucket>();
  private previous = new Map<string, MemoryBucket>();
  /** The summary of forgotten buckets, for a rule named in `rememberForgotten`; else none. */
  private summary: EvictedSummary | undefined;
  private readonly hasher: KeyHasher;
  /** Origin of this rule's scaled time: the first `now` seen, which keeps GCRA integers small. */
  private epoch = Number.NaN;
  /** The key of the last take and its id (see takeSync). */
  private lastKey = '';
  private lastId = '';
  /**
   * The bucket of `lastKey` while it is in the current map: cleared whenever a bucket leaves the
   * current map (a generation change, a reset, a state kept anew, unbind).
   */
  private lastState: MemoryBucket | undefined = undefined;
  /** The latest time a bucket was inserted at (NaN before the first): a fold's time when a reset's is unknown. */
  private latest = Number.NaN;
  /** Set by unbind: every later call is a configuration error. */
  private freed = false;
  /** Whether the rule has a lockout, whose buckets keep its two numbers. */
  private readonly blocking: boolean;
  /**
   * Reset generations (see resetGeneration): the number of the last reset of each key reset
   * since `resetFloor` was set, at most `maxKeys` of them. When full the map is cleared and every
   * key reads `resetFloor`, the latest number, which only makes older receipts refund nothing.
   */
  private resets = new Map<string, number>();
  private resetCount = 0;
  private resetFloor = 0;

  constructor(
    name: string,
    rule: Rule,
    maxKeys: number,
    summary: EvictedSummary | undefined,
    hasher: KeyHasher,
  ) {
    this.name = name;
    this.rule = rule;
    this.maxKeys = maxKeys;
    this.summary = summary;
    this.hasher = hasher;
    this.blocking = rule.block !== undefined;
  }

  /** Buckets held in both generations. */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  /** Bytes of the evicted-bucket summary. */
  get summaryBytes(): number {
    return this.summary === undefined ? 0 : this.summary.byteLength;
  }

  takeSync(key: string, cost: number, now: number, limit: CallLimit | undefined): Decision {
    // The key taken last keeps its bucket while the bucket stays in the current map: a key taken
    // again and again (one client flooding) costs a comparison of equal strings, no lookup. Small,
    // so that it inlines into the limiter; everything else is in takeLooked.
    const state = this.lastState;
    if (state !== undefined && key === this.lastKey)
      return this.rule.decide(state, now, this.epoch, this.name, cost, limit, true);
    return this.takeLooked(key, cost, now, limit);
  }

  /** A take that looks its key up (see takeSync). */
  private takeLooked(key: string, cost: number, now: number, limit: CallLimit | undefined): Decision {
    if (this.freed) throw notBound(this.name);
    // The id of the key taken last is kept as well: no second scan of the key for characters to hash.
    let id: string;
    if (key === this.lastKey) id = this.lastId;
    else {
      id = bucketId(key);
      this.lastKey = key;
      this.lastId = id;
      this.lastState = undefined;
    }
    if (this.epoch !== this.epoch) this.epoch = now;
    const state = this.find(id, now);
    if (state !== undefined) {
      this.lastState = state;
      return this.rule.decide(state, now, this.epoch, this.name, cost, limit, true);
    }
    const fresh = this.recall(id, now);
    if (cost === 0) return this.rule.decide(fresh, now, this.epoch, this.name, 0, limit, false);
    const value = fresh.value;
    const window = fresh.window;
    const previous = fresh.previous;
    const blockedUntil = fresh.blockedUntil;
    const decision = this.rule.decide(fresh, now, this.epoch, this.name, cost, limit, true);
    // A take that changed nothing (a refusal without penalty or lockout, or a cost beyond the
    // burst) needs no bucket: storing an untouched full bucket would differ from the shared
    // stores, which write nothing then, as soon as the clock steps back.
    if (
      fresh.value !== value ||
      fresh.window !== window ||
      fresh.previous !== previous ||
      fresh.blockedUntil !== blockedUntil
    )
      this.insert(id, fresh, now);
    return decision;
  }

  /**
   * The state `key` would be decided on now, for an all-or-nothing take: found in the maps, or
   * recalled from the summary (not inserted: {@link keep} does that once it is charged).
   */
  stateOf(key: string, now: number): MemoryBucket {
    if (this.freed) throw notBound(this.name);
    const id = bucketId(key);
    if (this.epoch !== this.epoch) this.epoch = now;
    return this.find(id, now) ?? this.recall(id, now);
  }

  /** Decides a take on a state from {@link stateOf}. */
  decide(
    state: MemoryBucket,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
    commit: boolean,
  ): Decision {
    return this.rule.decide(state, now, this.epoch, this.name, cost, limit, commit);
  }

  /** Makes sure a charged state from {@link stateOf} is the one the maps hold for `key`. */
  keep(key: string, state: MemoryBucket, now: number): void {
    const id = bucketId(key);
    if (this.current.get(id) === state) return;
    this.lastState = undefined;
    this.previous.delete(id);
    this.insert(id, state, now);
  }

  resetGeneration(key: string): number {
    return this.resets.get(bucketId(key)) ?? this.resetFloor;
  }

  resetSync(key: string): void {
    if (this.freed) throw notBound(this.name);
    const id = bucketId(key);
    this.lastState = undefined;
    this.resetCount++;
    if (this.resets.size >= this.maxKeys) {
      this.resets.clear();
      this.resetFloor = this.resetCount;
    } else this.resets.set(id, this.resetCount);
    this.current.delete(id);
    this.previous.delete(id);
    const summary = this.summary;
    if (summary === undefined || summary.isEmpty) return;
    // The summary cannot forget one key; a bucket that reads as full, kept in the maps, hides it.
    const hasher = this.hasher;
    hasher.hash(id);
    const probe = resetBucket(this.rule.shape, this.blocking);
    if (
      summary.estimate(hasher.first, hasher.second, -Infinity, probe) ||
      summary.estimateBlock(hasher.first, hasher.second, probe)
    ) {
      this.insert(id, resetBucket(this.rule.shape, this.blocking), Number.NaN);
    }
  }

  adjustSync(
    key: string,
    delta: number,
    now: number,
    takenAt: number,
    until: number,
    limit?: CallLimit,
    generation?: number,
  ): void {
    if (this.freed) throw notBound(this.name);
    const id = bucketId(key);
    // A refund of a charge made before the key's last reset: the reset gave the key a new
    // bucket already, and the charge is not in it. A settlement above the charge still charges.
    if (delta < 0 && generation !== undefined && generation !== (this.resets.get(id) ?? this.resetFloor))
      return;
    if (this.epoch !== this.epoch) this.epoch = now;
    const found = this.find(id, now);
    if (found !== undefined) {
      this.rule.adjust(found, now, this.epoch, delta, takenAt, until, limit);
      return;
    }
    // A key that left the maps settles on the state it would be decided on (never looser than
    // its own), and is kept only when that changed.
    const fresh = this.recall(id, now);
    if (this.rule.adjust(fresh, now, this.epoch, delta, takenAt, until, limit)) this.insert(id, fresh, now);
  }

  reserveSync(key: string, cost: number, now: number, maxWaitMs: number, limit?: CallLimit): Decision {
    if (this.freed) throw notBound(this.name);
    const reserve = reserverOf(this.rule);
    checkReservation(cost, maxWaitMs);
    const id = bucketId(key);
    if (this.epoch !== this.epoch) this.epoch = now;
    const found = this.find(id, now);
    if (found !== undefined)
      return reserve.call(this.rule, found, now, this.epoch, this.name, cost, maxWaitMs, limit);
    const fresh = this.recall(id, now);
    const value = fresh.value;
    const decision = reserve.call(this.rule, fresh, now, this.epoch, this.name, cost, maxWaitMs, limit);
    if (fresh.value !== value) this.insert(id, fresh, now);
    return decision;
  }

  reserve(key: string, cost: number, now: number, maxWaitMs: number, limit?: CallLimit): Promise<Decision> {
    try {
      return Promise.resolve(this.reserveSync(key, cost, now, maxWaitMs, limit));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  adjust(
    key: string,
    delta: number,
    now: number,
    takenAt: number,
    until: number,
    limit?: CallLimit,
    generation?: number,
  ): Promise<void> {
    try {
      this.adjustSync(key, delta, now, takenAt, until, limit, generation);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  take(key: string, cost: number, now: number, limit: CallLimit | undefined): Promise<Decision> {
    try {
      return Promise.resolve(this.takeSync(key, cost, now, limit));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  reset(key: string): Promise<void> {
    try {
      this.resetSync(key);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Drops the maps and the summary (unbind). */
  free(): void {
    this.freed = true;
    this.lastState = undefined;
    this.current = new Map();
    this.previous = new Map();
    this.summary = undefined;
  }

  /** Looks a key up in both generations; a key found in the previous one moves to the current. */
  private find(id: string, now: number): MemoryBucket | undefined {
    const state = this.current.get(id);
    if (state !== undefined) return state;
    const old = this.previous.get(id);
    if (old !== undefined) {
      this.previous.delete(id);
      this.insert(id, old, now);
    }
    return old;
  }

  /**
   * A bucket for a key that is in neither map: as strict as the summary says (a rule named in
   * `rememberForgotten`), or full. The id is
   * hashed only once the summary holds something; the hashes are kept for the fold.
   */
  private recall(id: string, now: number): MemoryBucket {
    const summary = this.summary;
    if (summary === undefined || summary.isEmpty) {
      const initial = this.rule.initialState(now, this.epoch);
      return newBucket(this.blocking, initial.value, initial.window, initial.previous, -1, 1);
    }
    const hasher = this.hasher;
    hasher.hash(id);
    const bucket = newBucket(this.blocking, 0, 0, 0, hasher.first, hasher.second);
    if (!summary.estimate(hasher.first, hasher.second, this.floor(now), bucket)) {
      const initial = this.rule.initialState(now, this.epoch);
      bucket.value = initial.value;
      bucket.window = initial.window;
      bucket.previous = initial.previous;
    }
    // A lockout is remembered apart from the counts: a key flood must not lift a block.
    if (this.rule.block !== undefined) summary.estimateBlock(hasher.first, hasher.second, bucket);
    return bucket;
  }

  /**
   * The value at or below which a bucket is as good as new at `now`: a token bucket whose arrival
   * time is not ahead of now is full; a quota with no count has nothing to remember. An unknown
   * `now` (NaN) folds every bucket, which is merely wasteful, never loose.
   */
  private floor(now: number): number {
    const floor = this.rule.floorValue(now, this.epoch);
    return floor === floor ? floor : -Infinity;
  }

  private insert(id: string, state: MemoryBucket, now: number): void {
    if (now === now) this.latest = now;
    if (this.current.size >= this.maxKeys) {
      // Generation change: the current map becomes the previous one, and the old
      // previous leaves the maps. Its buckets that are not full are folded into the summary, so
      // that none of them comes back fuller than it left: O(N) once every N inserts, no timer.
      const leaving = this.previous;
      this.previous = this.current;
      this.current = new Map();
      this.lastState = undefined;
      // Without a summary the old previous is simply dropped: its keys come back as new ones.
      if (leaving.size > 0 && this.summary !== undefined) this.fold(leaving, this.summary, now);
    }
    this.current.set(id, state);
  }

  private fold(leaving: Map<string, MemoryBucket>, summary: EvictedSummary, now: number): void {
    const floor = this.floor(now);
    const hasher = this.hasher;
    // A block matters until `forgetAfter` after its end (a refusal before then escalates); an
    // unknown `now` (NaN) keeps every block, which is merely wasteful, never loose.
    const block = this.rule.block;
    const forgetAfterMs = block === undefined ? 0 : block.forgetAfterMs;
    // The summary's cells hold one scale: a state kept under per-call parameters is brought back
    // to the rule's own first, no looser for any later reading (see the rule's normalize; at the
    // latest time seen when this fold's time is unknown, which only reads it stricter).
    const normalize = this.rule.normalize;
    const at = now === now ? now : this.latest;
    for (const [id, state] of leaving) {
      if (normalize !== undefined && at === at) normalize.call(this.rule, state, at, this.epoch);
      // A sliding window's previous count weighs too (for the other shapes `previous` is 0).
      const counts = state.value > floor || state.previous > 0;
      const blocked =
        block !== undefined && state.blockMs > 0 && !(state.blockedUntil + forgetAfterMs <= now);
      if (!counts && !blocked) continue;
      if (state.first < 0) {
        hasher.hash(id);
        state.first = hasher.first;
        state.second = hasher.second;
      }
      if (counts) summary.fold(state.first, state.second, state, floor);
      if (blocked) summary.foldBlock(state.first, state.second, state);
    }
  }
}
