import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { CallLimit, Rule } from '../../core/rules/rule.js';
import { checkReservation, reserverOf } from '../../core/reservation.js';
import type { BucketAdjustment, SyncRuleBuckets } from '../contract/store.js';
import type { EvictedSummary } from './evicted-summary.js';
import type { KeyHasher } from './key-hash.js';
import { newBucket, resetBucket, type MemoryBucket } from './bucket.js';
import { bucketId } from '../shared/bucket-id.js';
import { newTakeSlot, type TakeSlot } from '../../core/rules/take-slot.js';

/** The error of a call on a rule that is not (or no longer) bound to its memory store. */
export function notBound(name: string): SluiceError {
  return new SluiceError('SLUICE_CONFIG', `rule ${JSON.stringify(name)} is not bound to this MemoryStore`);
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
  /** The take every decision fills and passes (see {@link decide}): no object per take. */
  private readonly slot: TakeSlot;

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
    this.slot = newTakeSlot(name);
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
    if (state !== undefined && key === this.lastKey) return this.decide(state, cost, now, limit, true);
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
      return this.decide(state, cost, now, limit, true);
    }
    const fresh = this.recall(id, now);
    if (cost === 0) return this.decide(fresh, 0, now, limit, false);
    const value = fresh.value;
    const window = fresh.window;
    const previous = fresh.previous;
    const blockedUntil = fresh.blockedUntil;
    const decision = this.decide(fresh, cost, now, limit, true);
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

  /**
   * Decides a take on a state from {@link stateOf} (or one the maps hold), through the one take
   * this rule's buckets keep: the rule decides synchronously, so nothing else fills it meanwhile.
   */
  decide(
    state: MemoryBucket,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
    commit: boolean,
  ): Decision {
    const take = this.slot;
    take.now = now;
    take.epoch = this.epoch;
    take.cost = cost;
    take.limit = limit;
    take.commit = commit;
    return this.rule.decide(state, take);
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

  adjustSync(key: string, { delta, now, takenAt, until, limit, generation }: BucketAdjustment): void {
    if (this.freed) throw notBound(this.name);
    const id = bucketId(key);
    // A refund of a charge made before the key's last reset: the reset gave the key a new
    // bucket already, and the charge is not in it. A settlement above the charge still charges.
    if (delta < 0 && generation !== undefined && generation !== (this.resets.get(id) ?? this.resetFloor))
      return;
    if (this.epoch !== this.epoch) this.epoch = now;
    const adjustment = { now, epoch: this.epoch, delta, takenAt, until, limit };
    const found = this.find(id, now);
    if (found !== undefined) {
      this.rule.adjust(found, adjustment);
      return;
    }
    // A key that left the maps settles on the state it would be decided on (never looser than
    // its own), and is kept only when that changed.
    const fresh = this.recall(id, now);
    if (this.rule.adjust(fresh, adjustment)) this.insert(id, fresh, now);
  }

  reserveSync(key: string, cost: number, now: number, maxWaitMs: number, limit?: CallLimit): Decision {
    if (this.freed) throw notBound(this.name);
    const reserve = reserverOf(this.rule);
    checkReservation(cost, maxWaitMs);
    const id = bucketId(key);
    if (this.epoch !== this.epoch) this.epoch = now;
    const reservation = { now, epoch: this.epoch, name: this.name, cost, maxWaitMs, limit };
    const found = this.find(id, now);
    if (found !== undefined) return reserve.call(this.rule, found, reservation);
    const fresh = this.recall(id, now);
    const value = fresh.value;
    const decision = reserve.call(this.rule, fresh, reservation);
    if (fresh.value !== value) this.insert(id, fresh, now);
    return decision;
  }

  // The promise forms: a limiter uses the synchronous ones; these answer callers of the contract.
  // An async function resolves the value and rejects the throw, which is all they add.

  async reserve(
    key: string,
    cost: number,
    now: number,
    maxWaitMs: number,
    limit?: CallLimit,
  ): Promise<Decision> {
    return this.reserveSync(key, cost, now, maxWaitMs, limit);
  }

  async adjust(key: string, adjustment: BucketAdjustment): Promise<void> {
    this.adjustSync(key, adjustment);
  }

  async take(key: string, cost: number, now: number, limit: CallLimit | undefined): Promise<Decision> {
    return this.takeSync(key, cost, now, limit);
  }

  async reset(key: string): Promise<void> {
    this.resetSync(key);
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
      return newBucket(this.blocking, initial.value, initial.window, initial.previous);
    }
    const hasher = this.hasher;
    hasher.hash(id);
    const bucket = newBucket(this.blocking, 0, 0, 0);
    bucket.first = hasher.first;
    bucket.second = hasher.second;
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
