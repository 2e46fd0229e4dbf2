import type { Decision } from '../../core/decision.js';
import { configError, optionError } from '../../core/errors.js';
import { checkOptionKeys } from '../../core/options.js';
import type { Rule } from '../../core/rules/rule.js';
import { assertDistinctEntries, type SyncStore, type TakeEntry } from '../contract/store.js';
import { EvictedSummary } from './evicted-summary.js';
import { KeyHasher } from './key-hash.js';
import type { MemoryBucket } from './bucket.js';
import { MemoryLeaseBuckets } from './lease-buckets.js';
import { MemoryRuleBuckets, notBound } from './rule-buckets.js';
import { checkLeaseGroup, type LeaseStore } from '../contract/lease-store.js';
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
    // Windows that start at each key's own time share no grid: the summary ages them by length.
    const anchoredMs = rule.shape === 'window-count' ? (rule.periodMs ?? 0) : 0;
    if (anchoredMs !== 0 && (!Number.isSafeInteger(anchoredMs) || anchoredMs < 1))
      throw optionError(
        'MemoryStore bind rule periodMs',
        "a positive whole number or absent for a 'window-count' rule",
      );
    const summary = this.rememberForgotten.has(name)
      ? new EvictedSummary(this.summaryDepth, this.summaryWidth, slidingMs, anchoredMs)
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

  // The promise form: an async function resolves the value and rejects the throw.
  async takeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    return this.takeAllSync(entries, now);
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
