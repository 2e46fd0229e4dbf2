/**
 * Two seeded 30-bit hashes of a bucket id, for the evicted-bucket summary's row indices.
 *
 * Not cryptographic, on purpose: it runs on every take of a key that is not in the maps, so it
 * must cost a few nanoseconds per character. What keeps an attacker from aiming collisions at a
 * victim's cells is the seed: 64 random bits per store, drawn from `crypto.getRandomValues` and
 * never exposed, so cell positions cannot be computed from outside.
 *
 * The two results are left in fields instead of returned in an array, so that hashing allocates
 * nothing. 30 bits each, so that V8 keeps them as small integers inside a bucket object.
 */
export class KeyHasher {
  /** The first hash of the last id hashed: the row offset. */
  first = 0;
  /** The second hash of the last id hashed, always odd: the step between rows. */
  second = 1;
  private seedA = 0;
  private seedB = 0;
  private seeded = false;

  /** Hashes `id` into {@link first} and {@link second}. */
  hash(id: string): void {
    // Seeded on first use, not at construction: a Worker may not draw random values in its
    // global scope, where a store is usually created.
    if (!this.seeded) this.seed();
    let a = this.seedA;
    let b = this.seedB;
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
    }
    this.first = mix(a) >>> 2;
    this.second = (mix(b ^ 0x2545f491) >>> 2) | 1;
  }

  private seed(): void {
    const seeds = randomSeeds();
    this.seedA = (seeds[0] as number) | 0;
    this.seedB = (seeds[1] as number) | 0;
    this.seeded = true;
  }
}

/** Spreads every input bit over the whole word (the 32-bit finalizer of MurmurHash3). */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** 64 fresh random bits for one store's {@link KeyHasher}. */
export function randomSeeds(): Uint32Array {
  return globalThis.crypto.getRandomValues(new Uint32Array(2));
}
