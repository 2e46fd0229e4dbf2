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
 * A lease as granted: its fields frozen, and the book it is held in (none once released) in a
 * private field that nothing outside this class can read, set or copy: a copy or a lease made by
 * hand has no such field and is refused. No WeakMap entry per lease: those cost the garbage
 * collector more than the lease itself on a hot path.
 */
class GrantedLease implements Lease {
  #book: LeaseBook;
  #open = true;

  constructor(
    book: LeaseBook,
    readonly rule: string,
    readonly key: string,
    readonly id: string,
    readonly at: number,
    readonly expiresAt: number,
  ) {
    this.#book = book;
    Object.freeze(this);
  }

  /**
   * Marks `lease` released in `book`: true when it was held, false when released already;
   * undefined when it is no lease of that book.
   */
  static take(lease: unknown, book: LeaseBook): boolean | undefined {
    if (typeof lease !== 'object' || lease === null || !(#book in lease)) return undefined;
    if (lease.#book !== book) return undefined;
    const open = lease.#open;
    lease.#open = false;
    return open;
  }

  static reopen(lease: Lease): void {
    if (lease instanceof GrantedLease) lease.#open = true;
  }
}

/**
 * The leases one concurrency limit granted: each says itself which book it belongs to and
 * whether it is held (see GrantedLease), so the book holds nothing and never grows with traffic.
 * A lease of another book (another limit's, a copy, one made by hand) is refused; a released one
 * releases nothing again.
 */
export class LeaseBook {
  private readonly tag = processTag();
  private counter = 0;

  /** A fresh id: this book's random tag and a counter, so ids never repeat across processes. */
  nextId(): string {
    return this.tag + (this.counter++).toString(36);
  }

  issue(rule: string, key: string, id: string, at: number, ttlMs: number): Lease {
    return new GrantedLease(this, rule, key, id, at, at + ttlMs);
  }

  /**
   * Marks `lease` released: true when it was open, false when it was released already.
   * @throws SluiceError `SLUICE_ARGUMENT` for a lease this limit did not grant
   */
  take(lease: Lease): boolean {
    const open = GrantedLease.take(lease, this);
    if (open === undefined) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        'this concurrency limit granted no such lease: it is another limit’s, a copy, or made by hand',
      );
    }
    return open;
  }

  /** Opens a lease again whose release failed in the store, so that it may be tried again. */
  reopen(lease: Lease): void {
    GrantedLease.reopen(lease);
  }
}
