import { SluiceError } from '../../core/errors.js';
import { checkLeaseCall, type LeaseBuckets, type LeaseGrant } from '../contract/lease-store.js';
import { bucketId } from '../shared/bucket-id.js';
import type { KeyHasher } from './key-hash.js';

/** The leases one key holds: ids and their expiries, in the order granted. At most `max`. */
interface Held {
  ids: string[];
  expiries: number[];
  /**
   * Leases the key held when it left the maps, whose ids were not kept (see {@link LeaseSummary}):
   * they count until `phantomUntil`, and cannot be released.
   */
  phantoms: number;
  phantomUntil: number;
}

const SUMMARY_DEPTH = 4;
const SUMMARY_WIDTH = 4096;

/**
 * Where the leases of keys that left the maps are remembered, in fixed size: a key's count and
 * latest expiry folded into one cell per row, each cell keeping the largest count and the latest
 * expiry folded into it. A returning key starts from its least loaded live cell, which holds at
 * least its own leases until at least their end: never looser than the truth, so a flood of new
 * keys cannot free one's own slots. Allocated on first use: 4 × 4096 × 16 bytes (256 KiB).
 */
class LeaseSummary {
  private counts: Float64Array | undefined;
  private untils: Float64Array | undefined;

  constructor(private readonly hasher: KeyHasher) {}

  /**
   * Folds a key that leaves the maps holding `count` leases until `until` at most. A cell whose
   * leases are all over by `now` starts again from this key: keeping its old count would hand a
   * past flood's leases to every key folded there later, refusing new keys for nothing.
   */
  fold(id: string, count: number, until: number, now: number): void {
    if (this.counts === undefined) {
      this.counts = new Float64Array(SUMMARY_DEPTH * SUMMARY_WIDTH);
      this.untils = new Float64Array(SUMMARY_DEPTH * SUMMARY_WIDTH);
    }
    const untils = this.untils as Float64Array;
    this.hasher.hash(id);
    for (let row = 0; row < SUMMARY_DEPTH; row++) {
      const cell = this.cell(row);
      if (untils[cell]! <= now) {
        this.counts[cell] = count;
        untils[cell] = until;
        continue;
      }
      if (this.counts[cell]! < count) this.counts[cell] = count;
      if (untils[cell]! < until) untils[cell] = until;
    }
  }

  /** Writes into `held` what the summary says `id` may still hold at `now`. */
  restore(id: string, now: number, held: Held): void {
    if (this.counts === undefined) return;
    const untils = this.untils as Float64Array;
    this.hasher.hash(id);
    let count = Infinity;
    let until = 0;
    for (let row = 0; row < SUMMARY_DEPTH; row++) {
      const cell = this.cell(row);
      const live = untils[cell]! > now ? this.counts[cell]! : 0;
      if (live < count) {
        count = live;
        until = untils[cell]!;
      }
    }
    held.phantoms = count;
    held.phantomUntil = count === 0 ? 0 : until;
  }

  private cell(row: number): number {
    const h = (this.hasher.first + row * this.hasher.second) & (SUMMARY_WIDTH - 1);
    return row * SUMMARY_WIDTH + h;
  }
}

/**
 * One lease group in a {@link MemoryStore}: per key a small list of the leases held (at most
 * `max`), in two generations of at most N keys like the store's buckets, expired leases dropped
 * when the key is next touched (no timers). A key with leases that leaves the maps is folded into
 * a fixed-size summary (see {@link LeaseSummary}), so memory stays bounded whatever the keys.
 */
export class MemoryLeaseBuckets implements LeaseBuckets {
  private current = new Map<string, Held>();
  private previous = new Map<string, Held>();
  private readonly summary: LeaseSummary;
  private freed = false;

  constructor(
    readonly name: string,
    readonly max: number,
    readonly ttlMs: number,
    private readonly maxKeys: number,
    hasher: KeyHasher,
  ) {
    this.summary = new LeaseSummary(hasher);
  }

  // The promise forms: an async function resolves the value and rejects the throw.

  async acquire(key: string, id: string, now: number): Promise<LeaseGrant> {
    return this.acquireSync(key, id, now);
  }

  async release(key: string, id: string, now: number): Promise<boolean> {
    return this.releaseSync(key, id, now);
  }

  /** Synchronous {@link acquire}. */
  acquireSync(key: string, id: string, now: number): LeaseGrant {
    this.check(key, id);
    const bucket = bucketId(key);
    const held = this.heldOf(bucket, now);
    const count = held.ids.length + held.phantoms;
    if (count >= this.max) {
      let earliest = held.phantoms > 0 ? held.phantomUntil : Infinity;
      let latest = held.phantoms > 0 ? held.phantomUntil : 0;
      for (const at of held.expiries) {
        if (at < earliest) earliest = at;
        if (at > latest) latest = at;
      }
      return { acquired: false, held: count, retryAfterMs: earliest - now, resetMs: latest - now };
    }
    held.ids.push(id);
    held.expiries.push(now + this.ttlMs);
    this.keep(bucket, held, now);
    let latest = held.phantoms > 0 ? held.phantomUntil : 0;
    for (const at of held.expiries) if (at > latest) latest = at;
    return { acquired: true, held: count + 1, retryAfterMs: 0, resetMs: latest - now };
  }

  /** Synchronous {@link release}. */
  releaseSync(key: string, id: string, now: number): boolean {
    this.check(key, id);
    const bucket = bucketId(key);
    const held = this.current.get(bucket) ?? this.previous.get(bucket);
    if (held === undefined) return false;
    const at = held.ids.indexOf(id);
    if (at === -1) return false;
    const live = held.expiries[at]! > now;
    held.ids.splice(at, 1);
    held.expiries.splice(at, 1);
    return live;
  }

  /** Leases held by `key` now (for tests and the docs). */
  heldCount(key: string, now: number): number {
    const held = this.current.get(bucketId(key)) ?? this.previous.get(bucketId(key));
    if (held === undefined) return 0;
    prune(held, now);
    return held.ids.length + held.phantoms;
  }

  /** Keys held in both generations: at most 2 × maxKeysPerGeneration. */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  /** Drops everything: the group was unbound. */
  free(): void {
    this.freed = true;
    this.current = new Map();
    this.previous = new Map();
  }

  private check(key: string, id: string): void {
    if (this.freed) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `lease group ${JSON.stringify(this.name)} is not bound to this MemoryStore (unbound since)`,
      );
    }
    checkLeaseCall('MemoryStore', key, id, 0);
  }

  /** The key's leases with the expired ones dropped; a key found in the previous generation moves up. */
  private heldOf(bucket: string, now: number): Held {
    let held = this.current.get(bucket);
    if (held === undefined) {
      held = this.previous.get(bucket);
      if (held === undefined) {
        held = { ids: [], expiries: [], phantoms: 0, phantomUntil: 0 };
        this.summary.restore(bucket, now, held);
      }
    }
    prune(held, now);
    return held;
  }

  /** Puts `held` in the current generation, changing generations when it is full. */
  private keep(bucket: string, held: Held, now: number): void {
    if (this.current.get(bucket) === held) return;
    this.previous.delete(bucket);
    if (this.current.size >= this.maxKeys) {
      const leaving = this.previous;
      this.previous = this.current;
      this.current = new Map();
      for (const [id, gone] of leaving) {
        prune(gone, now);
        const count = gone.ids.length + gone.phantoms;
        if (count === 0) continue;
        let until = gone.phantomUntil;
        for (const at of gone.expiries) if (at > until) until = at;
        this.summary.fold(id, count, until, now);
      }
    }
    this.current.set(bucket, held);
  }
}

/** Drops the expired leases of `held`. */
function prune(held: Held, now: number): void {
  if (held.phantoms > 0 && held.phantomUntil <= now) {
    held.phantoms = 0;
    held.phantomUntil = 0;
  }
  const expiries = held.expiries;
  let kept = 0;
  for (let i = 0; i < expiries.length; i++) {
    if (expiries[i]! > now) {
      expiries[kept] = expiries[i]!;
      held.ids[kept] = held.ids[i]!;
      kept++;
    }
  }
  expiries.length = kept;
  held.ids.length = kept;
}
