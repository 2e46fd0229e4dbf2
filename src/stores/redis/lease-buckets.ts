import { SluiceError } from '../../core/errors.js';
import { checkLeaseCall, type LeaseBuckets, type LeaseGrant } from '../contract/lease-store.js';
import { keySlot } from './key-slot.js';
import { queueLease, type LeaseOperation } from './calls/lease.js';
import type { RedisStore } from './store.js';
import type { RedisRuleBuckets } from './rule-buckets.js';

/**
 * One lease group in a {@link RedisStore}: a sorted set per key (see lease-script.ts) under the key a
 * rule of the same name would have (`<prefix><name>:{<id>}`, the same hash tags), so a group's
 * keys are erased and spread over a Cluster as a rule's are. Every operation is one script call,
 * batched with the lease operations around it.
 */
export class RedisLeaseBuckets implements LeaseBuckets {
  /** `max` and `ttlMs` as script arguments, converted once (see lease-script.ts). */
  private readonly group: readonly [string, string];

  constructor(
    private readonly store: RedisStore,
    readonly name: string,
    readonly max: number,
    readonly ttlMs: number,
    /** Builds the group's Redis keys as a rule of its name would. */
    private readonly keys: RedisRuleBuckets,
  ) {
    this.group = [String(max), String(ttlMs)];
  }

  acquire(key: string, id: string, now: number): Promise<LeaseGrant> {
    return this.run(key, id, now, true) as Promise<LeaseGrant>;
  }

  release(key: string, id: string, now: number): Promise<boolean> {
    return this.run(key, id, now, false) as Promise<boolean>;
  }

  private run(key: string, id: string, now: number, acquire: boolean): Promise<LeaseGrant | boolean> {
    try {
      if (!this.store.holdsLeases(this)) {
        throw new SluiceError(
          'SLUICE_CONFIG',
          `lease group ${JSON.stringify(this.name)} is not bound to this RedisStore (never bound, or unbound since)`,
        );
      }
      checkLeaseCall('RedisStore', key, id, now);
      const redisKey = this.keys.redisKey(key);
      const slot = this.store.client.cluster ? keySlot(redisKey) : 0;
      const op: LeaseOperation = { acquire, id, group: this.group };
      return queueLease(this.store.pipeline, op, redisKey, Math.floor(now), slot);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
