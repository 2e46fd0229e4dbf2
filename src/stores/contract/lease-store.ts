/**
 * The lease side of the Store contract: how a store counts requests in flight for a concurrency
 * limit (`concurrencyLimit`). A store that implements it binds a lease group under a name, and
 * the group holds, per key, the leases granted and not yet released, each expiring on its own
 * `ttlMs` after it was granted (a process that crashed never releases; its leases still end).
 *
 * Like takes, both calls are atomic and, on a shared store, one round trip each. Lease ids are
 * made by the caller (the concurrency limiter): unguessable, unique across processes, at most
 * {@link MAX_LEASE_ID_LENGTH} characters of `[A-Za-z0-9_-]`.
 */
import { SluiceError } from '../../core/errors.js';
import type { Store } from './store.js';

/** The most leases one key may hold at once (a limit's `max`). */
export const MAX_LEASES = 100_000;
/** The longest lease id a store accepts. */
export const MAX_LEASE_ID_LENGTH = 64;

/** What a store answers to an acquisition. */
export interface LeaseGrant {
  /** True when the lease was granted (and is now held). */
  readonly acquired: boolean;
  /** Leases of the key held after this call, expired ones not counted (the new one included). */
  readonly held: number;
  /**
   * Refused: ms until the earliest held lease expires, when a slot frees at the latest (a
   * release may free one sooner). Granted: 0.
   */
  readonly retryAfterMs: number;
  /** ms until the last lease held expires: by then the key holds none, unless more are taken. */
  readonly resetMs: number;
}

/** One lease group's leases in one store. */
export interface LeaseBuckets {
  /** The group's name, unique within its store (shared with the store's rule names). */
  readonly name: string;
  /** The most leases a key holds at once. */
  readonly max: number;
  /** How long a lease lives unless released, in ms. */
  readonly ttlMs: number;
  /**
   * Grants lease `id` on `key` when the key holds fewer than `max` unexpired leases, atomically;
   * the lease expires `ttlMs` after the store's time (or `now` on the caller's clock).
   */
  acquire(key: string, id: string, now: number): Promise<LeaseGrant>;
  /**
   * Releases lease `id` of `key`: resolves true when it was held, false when it was not (released
   * already, expired, or never granted). Atomic; releasing twice frees one slot once.
   */
  release(key: string, id: string, now: number): Promise<boolean>;
}

/** A store that keeps leases. */
export interface LeaseStore extends Store {
  /**
   * Binds a lease group: at most `max` leases per key, each living `ttlMs` unless released.
   * @throws SluiceError `SLUICE_CONFIG` when the name is bound already (as a rule or a group)
   */
  bindLeases(name: string, max: number, ttlMs: number): LeaseBuckets;
}

/**
 * True when `store` keeps leases.
 *
 * @example
 * if (!isLeaseStore(store)) throw new Error('this store has no leases');
 */
export function isLeaseStore(store: unknown): store is LeaseStore {
  return (
    typeof store === 'object' &&
    store !== null &&
    typeof (store as Partial<LeaseStore>).bindLeases === 'function'
  );
}

const leaseId = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Rejects a lease id a store cannot keep as it is. Every store calls it first.
 * @throws SluiceError `SLUICE_ARGUMENT` (naming the type, never the value)
 * @example checkLeaseId(id)
 */
export function checkLeaseId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !leaseId.test(id)) {
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `a lease id must be 1 to ${MAX_LEASE_ID_LENGTH} characters of letters, digits, "_" and "-" (received a ${typeof id})`,
    );
  }
}

/**
 * Checks a lease group's numbers as a store binds them.
 * @throws SluiceError `SLUICE_CONFIG`
 */
export function checkLeaseGroup(store: string, max: unknown, ttlMs: unknown): void {
  if (!Number.isSafeInteger(max) || (max as number) < 1 || (max as number) > MAX_LEASES) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `${store} lease max must be a whole number from 1 to ${MAX_LEASES}`,
    );
  }
  if (!Number.isSafeInteger(ttlMs) || (ttlMs as number) < 1) {
    throw new SluiceError('SLUICE_CONFIG', `${store} lease ttl must be a positive whole number of ms`);
  }
}

/**
 * Checks what reaches a store's lease call: a non-empty key, a lease id a store keeps as it is
 * (see {@link checkLeaseId}), and a finite `now`. The concurrency limiter checks these already;
 * a store checks again because its groups can be called directly.
 * @throws SluiceError `SLUICE_ARGUMENT` (naming the type, never the value)
 * @example checkLeaseCall('RedisStore', key, id, now)
 */
export function checkLeaseCall(store: string, key: unknown, id: unknown, now: unknown): void {
  if (typeof key !== 'string' || key.length === 0)
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `${store}: a key must be a non-empty string (got a ${typeof key})`,
    );
  checkLeaseId(id);
  if (typeof now !== 'number' || !Number.isFinite(now))
    throw new SluiceError('SLUICE_ARGUMENT', `${store}: now must be a finite number of ms`);
}
