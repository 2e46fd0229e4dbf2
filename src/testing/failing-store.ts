/**
 * A store that fails on command, over a MemoryStore: the test double for what limiters, guards
 * and adapters do when a store fails. Stores themselves are never mocked in their own tests; the
 * store conformance suite runs against real ones.
 */
import type { Decision } from '../core/decision.js';
import type { Rule } from '../core/rules/rule.js';
import type { RuleBuckets, SyncRuleBuckets, TakeEntry } from '../stores/contract/store.js';
import { MemoryStore } from '../stores/memory/store.js';
import type { LeaseBuckets, LeaseStore } from '../stores/contract/lease-store.js';

/**
 * How the store answers: normally, rejecting, never, throwing synchronously, with a driver's own
 * error, or rejecting with whatever `error` holds (a coded SluiceError, a leaky driver error).
 *
 * @default "ok"
 * @example
 * store.mode = 'hang'; // the next takes never settle: the limiter's timeout answers them
 */
export type FailMode = 'ok' | 'reject' | 'hang' | 'throw' | 'driver-error' | 'error';

/**
 * A store that answers like a MemoryStore until told to fail (`mode`), for testing what a
 * limiter, a guard or an adapter does while its store is down, hung or overloaded.
 *
 * @default mode "ok", no timeout of its own
 * @example
 * const store = new FailingStore();
 * const api = createLimiter({ name: 'api', rule: tokenBucket({ limit: 5, period: '1m' }), store });
 * store.mode = 'reject'; // takes now fail: the limit answers 503 (or admits, under failure: 'open')
 */
export class FailingStore implements LeaseStore {
  readonly kind = 'flaky';
  mode: FailMode = 'ok';
  /** What mode `error` rejects with. */
  error: unknown = undefined;
  /** Store calls made, failing or not. */
  calls = 0;
  /** Set to play a store that bounds its own calls (as Redis and PostgreSQL stores do). */
  readonly timeoutMs?: number;

  /** @param options.timeoutMs plays a store that bounds its own calls; leave it out otherwise. */
  constructor(options: { timeoutMs?: number } = {}) {
    if (options.timeoutMs !== undefined) this.timeoutMs = options.timeoutMs;
  }
  private readonly inner = new MemoryStore();
  private readonly bound = new Map<string, SyncRuleBuckets>();

  bind(name: string, rule: Rule): RuleBuckets {
    const buckets = this.inner.bind(name, rule);
    this.bound.set(name, buckets);
    return {
      name,
      rule,
      take: (key, cost, now, limit) => this.run(() => buckets.takeSync(key, cost, now, limit)),
      reset: (key) => this.run(() => buckets.resetSync(key)),
      adjust: (key, adjustment) => this.run(() => buckets.adjustSync(key, adjustment)),
      // Read synchronously by the limiter, never failing: a generation is no store call.
      ...(buckets.resetGeneration === undefined
        ? {}
        : { resetGeneration: (key: string) => buckets.resetGeneration!(key) }),
      reserve: (key, cost, now, maxWaitMs) => this.run(() => buckets.reserveSync!(key, cost, now, maxWaitMs)),
    };
  }

  bindLeases(name: string, max: number, ttlMs: number): LeaseBuckets {
    const group = this.inner.bindLeases(name, max, ttlMs);
    return {
      name,
      max,
      ttlMs,
      acquire: (key, id, now) => this.run(() => group.acquireSync(key, id, now)),
      release: (key, id, now) => this.run(() => group.releaseSync(key, id, now)),
    };
  }

  unbind(name: string): void {
    this.inner.unbind(name);
    this.bound.delete(name);
  }

  takeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    return this.run(() =>
      this.inner.takeAllSync(
        entries.map((entry) => ({ ...entry, buckets: this.bound.get(entry.buckets.name)! })),
        now,
      ),
    );
  }

  private run<T>(fn: () => T): Promise<T> {
    this.calls++;
    switch (this.mode) {
      case 'ok':
        return Promise.resolve(fn());
      case 'reject':
        return Promise.reject(new Error('ECONNREFUSED'));
      case 'hang':
        return new Promise<T>(() => {});
      case 'throw':
        throw new Error('synchronous driver bug');
      case 'driver-error':
        return Promise.reject(
          Object.assign(new Error("READONLY You can't write against a read only replica."), {
            name: 'ReplyError',
          }),
        );
      case 'error':
        return Promise.reject(this.error);
    }
  }
}
