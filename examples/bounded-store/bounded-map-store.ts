/**
 * A store written outside sluice's own code, the way any store is: it implements the Store
 * contract and passes the store conformance suite of `sluice/testing`
 * (bounded-map-store.test.ts).
 *
 * It keeps each rule's buckets in a plain Map with an explicit bound. What it does when the Map
 * is full is the one real decision a bounded store makes. Forgetting a bucket that is still in
 * use would hand its owner a full bucket: a client that floods new keys could then reset anyone's
 * limit. So it forgets only buckets that are as good as new (their horizon has passed), and when
 * every bucket is still in use it refuses to track a new key with `SLUICE_STORE_OVERLOADED`: the
 * limiter answers 503 (or lets its insurance limiter decide), and `failure: 'open'` never admits
 * it. The built-in MemoryStore makes the other choice, a summary of forgotten buckets that errs
 * towards refusing; this one is simpler and never errs, at the price of 503s under a key flood.
 */
import {
  SluiceError,
  assertDistinctEntries,
  reserverOf,
  type BucketAdjustment,
  type BucketState,
  type CallLimit,
  type Decision,
  type Rule,
  type RuleBuckets,
  type Store,
  type TakeEntry,
} from '../../src/index.js';

/** Options of a {@link BoundedMapStore}. */
export interface BoundedMapStoreOptions {
  /**
   * The most buckets one rule holds at once. A take that needs one more while every bucket is
   * still in use is rejected with `SLUICE_STORE_OVERLOADED`.
   */
  maxKeys: number;
}

/**
 * A store over plain Maps that never holds more than `maxKeys` buckets per rule and never
 * forgets a bucket that is still in use. Per process, like the memory store: N processes
 * enforce N times the limit.
 *
 * @example
 * const limiter = createLimiter({ name: 'api', rule: tokenBucket({ limit: 10, period: '1m' }), store: new BoundedMapStore({ maxKeys: 10_000 }) });
 */
export class BoundedMapStore implements Store {
  readonly kind = 'bounded-map';
  private readonly maxKeys: number;
  private readonly rules = new Map<string, BoundedMapBuckets>();

  constructor(options: BoundedMapStoreOptions) {
    const maxKeys = options?.maxKeys;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new SluiceError('SLUICE_CONFIG', 'BoundedMapStore maxKeys must be a whole number >= 1');
    }
    this.maxKeys = maxKeys;
  }

  bind(name: string, rule: Rule): RuleBuckets {
    if (this.rules.has(name)) {
      throw new SluiceError('SLUICE_CONFIG', `a rule named ${JSON.stringify(name)} is bound already`);
    }
    const buckets = new BoundedMapBuckets(name, rule, this.maxKeys);
    this.rules.set(name, buckets);
    return buckets;
  }

  unbind(name: string): void {
    this.rules.get(name)?.free();
    this.rules.delete(name);
  }

  async takeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    // No await below: the whole list is decided and charged in one turn of the event loop, so
    // no other take can come in between. That is what makes it all or nothing in one process.
    assertDistinctEntries(entries);
    const owners = entries.map((entry) => this.ownerOf(entry.buckets));
    const states = entries.map((entry, i) => owners[i]!.stateOf(entry.key, now));
    const decisions = entries.map((entry, i) => owners[i]!.decide(states[i]!, entry, now, false));
    if (decisions.some((decision) => !decision.allowed)) return decisions;
    // Room for every new bucket before anything is charged: a full rule must not leave the
    // list half charged.
    const newKeys = new Map<BoundedMapBuckets, number>();
    entries.forEach((entry, i) => {
      if (entry.cost !== 0 && !owners[i]!.holds(entry.key))
        newKeys.set(owners[i]!, (newKeys.get(owners[i]!) ?? 0) + 1);
    });
    for (const [owner, count] of newKeys) owner.makeRoom(count, now);
    return entries.map((entry, i) => {
      const decision = owners[i]!.decide(states[i]!, entry, now, true);
      if (entry.cost !== 0) owners[i]!.keep(entry.key, states[i]!);
      return decision;
    });
  }

  private ownerOf(buckets: RuleBuckets): BoundedMapBuckets {
    if (!(buckets instanceof BoundedMapBuckets) || this.rules.get(buckets.name) !== buckets) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `rule ${JSON.stringify(buckets.name)} is not bound to this store`,
      );
    }
    return buckets;
  }
}

/** One rule's buckets: key to state, at most `maxKeys` of them. */
class BoundedMapBuckets implements RuleBuckets {
  private states = new Map<string, BucketState>();
  /** The origin the rule's scaled arithmetic counts from: the first `now` seen, kept. */
  private epoch = Number.NaN;
  /**
   * No bucket can be forgotten before this time: set when a sweep found every bucket in use, to
   * the earliest time one of them becomes as good as new. Until then a full rule refuses new
   * keys at once instead of sweeping the whole Map for each of them.
   */
  private nothingExpiresBefore = -Infinity;
  private freed = false;
  /**
   * The number of each key's last reset, at most `maxKeys` of them; when full, cleared, and every
   * key reads `resetFloor`, the latest number (older receipts then refund nothing: the safe side).
   */
  private resets = new Map<string, number>();
  private resetCount = 0;
  private resetFloor = 0;

  constructor(
    readonly name: string,
    readonly rule: Rule,
    private readonly maxKeys: number,
  ) {}

  async take(key: string, cost: number, now: number, limit: CallLimit | undefined): Promise<Decision> {
    const state = this.stateOf(key, now);
    if (cost === 0 || this.states.has(key))
      return this.rule.decide(state, { now, epoch: this.epoch, name: this.name, cost, limit, commit: true });
    const { value, window, previous, blockedUntil } = state;
    const decision = this.rule.decide(state, {
      now,
      epoch: this.epoch,
      name: this.name,
      cost,
      limit,
      commit: true,
    });
    // A take that changed nothing (a refusal without penalty or lockout) needs no bucket, and
    // takes no room.
    if (
      state.value !== value ||
      state.window !== window ||
      state.previous !== previous ||
      state.blockedUntil !== blockedUntil
    ) {
      this.makeRoom(1, now);
      this.states.set(key, state);
    }
    return decision;
  }

  async reset(key: string): Promise<void> {
    this.check();
    this.states.delete(key);
    this.resetCount++;
    if (this.resets.size >= this.maxKeys) {
      this.resets.clear();
      this.resetFloor = this.resetCount;
    } else this.resets.set(key, this.resetCount);
  }

  /**
   * Which reset of `key` its bucket belongs to, kept in each receipt: a refund of a take made
   * before the key's last reset must give nothing back (the reset gave the key a new bucket).
   */
  resetGeneration(key: string): number {
    return this.resets.get(key) ?? this.resetFloor;
  }

  async adjust(
    key: string,
    { delta, now, takenAt, until, limit, generation }: BucketAdjustment,
  ): Promise<void> {
    if (delta < 0 && generation !== undefined && generation !== this.resetGeneration(key)) return;
    const known = this.states.has(key);
    const state = this.stateOf(key, now);
    if (this.rule.adjust(state, { now, epoch: this.epoch, delta, takenAt, until, limit }) && !known) {
      this.makeRoom(1, now);
      this.states.set(key, state);
    }
  }

  async reserve(
    key: string,
    cost: number,
    now: number,
    maxWaitMs: number,
    limit?: CallLimit,
  ): Promise<Decision> {
    // SLUICE_CONFIG for a rule that cannot reserve (a window, a lockout).
    const reserve = reserverOf(this.rule);
    const known = this.states.has(key);
    const state = this.stateOf(key, now);
    const reservation = { now, epoch: this.epoch, name: this.name, cost, maxWaitMs, limit };
    const decision = reserve.call(this.rule, state, reservation);
    if (decision.allowed && !known) {
      this.makeRoom(1, now);
      this.states.set(key, state);
    }
    return decision;
  }

  /** The state `key` is decided on: its bucket, or a new one that is not stored yet. */
  stateOf(key: string, now: number): BucketState {
    this.check();
    if (this.epoch !== this.epoch) this.epoch = now;
    return this.states.get(key) ?? this.rule.initialState(now, this.epoch);
  }

  decide(state: BucketState, entry: TakeEntry, now: number, commit: boolean): Decision {
    return this.rule.decide(state, {
      now,
      epoch: this.epoch,
      name: this.name,
      cost: entry.cost,
      limit: entry.limit,
      commit,
    });
  }

  holds(key: string): boolean {
    return this.states.has(key);
  }

  keep(key: string, state: BucketState): void {
    this.states.set(key, state);
  }

  /** Makes room for `count` new buckets by forgetting those as good as new, or throws. */
  makeRoom(count: number, now: number): void {
    if (this.states.size + count <= this.maxKeys) return;
    if (now >= this.nothingExpiresBefore) {
      let earliest = Infinity;
      for (const [key, state] of this.states) {
        const horizon = this.rule.horizonMs(state, now, this.epoch);
        if (horizon <= 0) this.states.delete(key);
        else if (now + horizon < earliest) earliest = now + horizon;
      }
      // Infinity only when nothing is left, and then there is nothing to wait for.
      this.nothingExpiresBefore = earliest === Infinity ? -Infinity : earliest;
      if (this.states.size + count <= this.maxKeys) return;
    }
    // The message names the rule and the bound, never a key: keys can carry personal data.
    throw new SluiceError(
      'SLUICE_STORE_OVERLOADED',
      `rule ${JSON.stringify(this.name)} holds ${this.maxKeys} buckets still in use; a new key must wait`,
    );
  }

  free(): void {
    this.freed = true;
    this.states = new Map();
  }

  private check(): void {
    if (this.freed) throw new SluiceError('SLUICE_CONFIG', `rule ${JSON.stringify(this.name)} was unbound`);
  }
}
