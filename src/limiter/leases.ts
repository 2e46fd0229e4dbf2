import { SluiceError } from '../core/errors.js';

/**
 * A slot of a concurrency limit, held from `acquire` until `release` (or until it expires).
 * Release it once the work is done, in a `finally`. It holds the key: keep it out of logs.
 */
export interface Lease {
  /** The concurrency limit that granted it. */
  readonly rule: string;
  /** The key it was granted on. */
  readonly key: string;
  /** Its id in the store: random, unique across processes. */
  readonly id: string;
  /** The limiter's clock when it was granted, ms since the Unix epoch. */
  readonly at: number;
  /** When it expires if never released (`at` plus the lease ttl), on the same clock. */
  readonly expiresAt: number;
}

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** 96 random bits as 16 characters of base64url: what makes this process's ids its own. */
function processTag(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  let tag = '';
  for (let i = 0; i < 16; i++) tag += alphabet[bytes[i]! & 63];
  return tag;
}

/**
 * The leases one concurrency limit granted, open or released. A WeakMap: a lease nobody holds any
 * more costs nothing. A lease not in it (another limit's, a copy, one made by hand) is refused;
 * a released one releases nothing again.
 */
export class LeaseBook {
  private readonly leases = new WeakMap<Lease, boolean>();
  private readonly tag = processTag();
  private counter = 0;

  /** A fresh id: this book's random tag and a counter, so ids never repeat across processes. */
  nextId(): string {
    return this.tag + (this.counter++).toString(36);
  }

  issue(rule: string, key: string, id: string, at: number, ttlMs: number): Lease {
    const lease: Lease = Object.freeze({ rule, key, id, at, expiresAt: at + ttlMs });
    this.leases.set(lease, true);
    return lease;
  }

  /**
   * Marks `lease` released: true when it was open, false when it was released already.
   * @throws SluiceError `SLUICE_ARGUMENT` for a lease this limit did not grant
   */
  take(lease: Lease): boolean {
    const open = typeof lease === 'object' && lease !== null ? this.leases.get(lease) : undefined;
    if (open === undefined) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        'this concurrency limit granted no such lease: it is another limit’s, a copy, or made by hand',
      );
    }
    if (!open) return false;
    this.leases.set(lease, false);
    return true;
  }

  /** Opens a lease again whose release failed in the store, so that it may be tried again. */
  reopen(lease: Lease): void {
    this.leases.set(lease, true);
  }
}
