import type { Decision } from '../../core/decision.js';
import { parseTimerDuration, type Duration } from '../../core/duration.js';
import { SluiceError, optionError } from '../../core/errors.js';
import { checkOptionKeys } from '../../core/options.js';
import type { Rule } from '../../core/rules/rule.js';
import { promised } from '../contract/bucket-steps.js';
import { assertDistinctEntries, type Store, type TakeEntry } from '../contract/store.js';
import { Pipeline } from './pipeline.js';
import { queueGroup, type GroupEntry } from './calls/take.js';
import { TIMEOUT_SUBJECT, storeError, unavailable } from './errors.js';
import { checkTakeArguments } from './calls/take-arguments.js';
import { redisClient, type RedisClient, type RedisClientInput } from './client.js';
import { keySlot } from './key-slot.js';
import { assertNameFree, checkRuleName } from '../shared/rule-name.js';
import { readTimeSource, type TimeSource } from '../shared/time-source.js';
import { withDeadline } from '../shared/deadline.js';
import { checkLeaseGroup, type LeaseStore } from '../contract/lease-store.js';
import { RedisLeaseBuckets } from './lease-buckets.js';
import { APP_TIME_SLACK_MS, RedisRuleBuckets, notBound } from './rule-buckets.js';

/**
 * Which part of a bucket's Redis key is its Cluster hash tag (the part the slot is computed from):
 * - `"key"`: the bucket key. Buckets spread over the whole Cluster; an all-or-nothing cascade
 *   runs in one script when its limits share one key (`cascade.take(ip)`).
 * - `"store"`: the store's prefix. Every bucket of the store lies in one slot (one master), so any
 *   all-or-nothing cascade works, at the cost of spreading nothing.
 * - a function of the rule name and the key returning the tag (non-empty, no `}`): keys that must
 *   be charged together return the same tag, e.g. `(name, key) => key.split('|')[0]` for
 *   `ip` and `ip|nick`.
 */
export type RedisHashTag = 'key' | 'store' | ((name: string, key: string) => string);

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /**
   * An ioredis `Redis` or `Cluster`, a node-redis v5 client or cluster, or a {@link RedisClient}.
   * Yours: the store never connects or quits it. Required.
   */
  client: RedisClientInput;
  /**
   * Prefix of every key; each rule adds its name (`sluice:login:{10.0.0.1}`). No `{` or `}`.
   * @default "sluice:"
   */
  prefix?: string;
  /**
   * Whose time decides. `"store"`: the script reads Redis `TIME`, so nodes with skewed clocks
   * enforce one limit and the `now` a limiter passes is ignored. `"app"`: the limiter's clock
   * decides — for managed Redis services that forbid `TIME` in scripts, and for tests with a
   * manual clock; all nodes must then keep good time. (Called `clock: "server" | "caller"`
   * before; that spelling is refused with this one.)
   * @default "store"
   */
  timeSource?: TimeSource;
  /**
   * The longest a decision (or reset, erase) may take, queueing included; after it the call
   * fails with SLUICE_STORE_TIMEOUT, and the limiter applies the rule's failure policy.
   * @default 100
   */
  timeout?: Duration;
  /**
   * Decisions that may wait or be in flight at once; beyond it a take fails at once with
   * SLUICE_STORE_UNAVAILABLE, so a slow Redis can never grow an unbounded queue.
   * @default 10000
   */
  maxPending?: number;
  /**
   * The most decisions (keys) one script call carries. Decisions waiting are spread over up to
   * 8 calls in flight (at least 8 per call), so that Node turns one reply into decisions while
   * Redis runs the next call; this caps a call, and so how long one script blocks Redis.
   * @default 1024
   */
  maxBatch?: number;
  /** See {@link RedisHashTag}. @default "key" */
  hashTag?: RedisHashTag;
}

const redisStoreKeys = [
  'client',
  'prefix',
  'timeSource',
  'timeout',
  'maxPending',
  'maxBatch',
  'hashTag',
] as const;

/**
 * Buckets in Redis: one atomic script call per decision — several decisions per call under
 * load — on the server's clock, a TTL on every key equal to its time to full or reset, a key
 * prefix per rule, Redis Cluster hash tags, and every failure reported as a coded error within
 * `timeout` (SLUICE_STORE_UNAVAILABLE, SLUICE_STORE_TIMEOUT), never a hang.
 *
 * Processes and nodes sharing one Redis enforce one global limit.
 *
 * @example
 * const redis = new Redis({ enableOfflineQueue: false });             // ioredis
 * const store = new RedisStore({ client: redis });
 * const login = createLimiter({ name: 'login', rule: tokenBucket({ limit: 10, period: '10m' }), store });
 * const decision = await login.take(ipKey);
 */
export class RedisStore implements Store, LeaseStore {
  readonly kind = 'redis';
  /** The key prefix. */
  readonly prefix: string;
  /** Whose time decides. */
  readonly timeSource: TimeSource;
  /** The timeout of every call, in ms. */
  readonly timeoutMs: number;
  /** Replies read from Redis so far, late ones included: a breaker's sign that Redis answers. */
  get replies(): number {
    return this.pipeline.replies;
  }
  /** @internal */
  readonly client: RedisClient;
  /** @internal */
  readonly hashTag: RedisHashTag;
  /** @internal */
  readonly pipeline: Pipeline;
  private readonly rules = new Map<string, RedisRuleBuckets>();
  private readonly leaseGroups = new Map<string, RedisLeaseBuckets>();

  constructor(options: RedisStoreOptions) {
    const timeSource = readTimeSource('RedisStore', options);
    checkOptionKeys('RedisStore', options, redisStoreKeys);
    const {
      prefix = 'sluice:',
      timeout = '100ms',
      maxPending = 10_000,
      maxBatch = 1024,
      hashTag = 'key',
    } = options;
    if (options.client === undefined || options.client === null) {
      throw optionError('RedisStore client', 'an ioredis or node-redis client');
    }
    if (typeof prefix !== 'string' || prefix.length > 100 || /[{}#]/.test(prefix)) {
      throw optionError('RedisStore prefix', 'a string of at most 100 characters without "{", "}" or "#"');
    }
    if (!Number.isSafeInteger(maxPending) || maxPending < 1) {
      throw optionError('RedisStore maxPending', 'a positive whole number');
    }
    if (!Number.isSafeInteger(maxBatch) || maxBatch < 1) {
      throw optionError('RedisStore maxBatch', 'a positive whole number');
    }
    if (hashTag !== 'key' && hashTag !== 'store' && typeof hashTag !== 'function') {
      throw optionError('RedisStore hashTag', '"key", "store" or a function (name, key) => tag');
    }
    this.timeoutMs = parseTimerDuration(timeout, 'RedisStore timeout');
    this.client = redisClient(options.client);
    this.prefix = prefix;
    this.timeSource = timeSource;
    this.hashTag = hashTag;
    this.pipeline = new Pipeline({
      client: this.client,
      timeoutMs: this.timeoutMs,
      maxPending,
      maxBatch,
      serverClock: timeSource === 'store',
      slackMs: timeSource === 'store' ? 0 : APP_TIME_SLACK_MS,
    });
  }

  bind(name: string, rule: Rule): RedisRuleBuckets {
    checkRuleName(name, 'RedisStore rule name');
    assertNameFree('RedisStore', name, this.rules, this.leaseGroups);
    const buckets = new RedisRuleBuckets(this, name, rule);
    this.rules.set(name, buckets);
    return buckets;
  }

  /**
   * Binds a lease group (see `concurrencyLimit`): per key a sorted set of the leases held, scored
   * by their expiries, acquired and released in one script call each (see lease-script.ts).
   */
  bindLeases(name: string, max: number, ttlMs: number): RedisLeaseBuckets {
    checkRuleName(name, 'RedisStore lease group name');
    checkLeaseGroup('RedisStore', max, ttlMs);
    assertNameFree('RedisStore', name, this.rules, this.leaseGroups);
    const group = new RedisLeaseBuckets(this, name, max, ttlMs, new RedisRuleBuckets(this, name, undefined));
    this.leaseGroups.set(name, group);
    return group;
  }

  unbind(name: string): void {
    this.rules.delete(name);
    this.leaseGroups.delete(name);
  }

  /** @internal True while `group` is the lease group bound under its name. */
  holdsLeases(group: RedisLeaseBuckets): boolean {
    return this.leaseGroups.get(group.name) === group;
  }

  /** @internal True while `buckets` is the rule bound under its name (not unbound, not replaced). */
  holds(buckets: RedisRuleBuckets): boolean {
    return this.rules.get(buckets.name) === buckets;
  }

  takeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    return promised(this, this.queueTakeAll, entries, now);
  }

  private queueTakeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    assertDistinctEntries(entries);
    if (entries.length === 0) return Promise.resolve([]);
    const list: GroupEntry[] = [];
    let slot = -1;
    for (const entry of entries) {
      const buckets = entry.buckets;
      if (!(buckets instanceof RedisRuleBuckets) || !this.holds(buckets)) {
        throw notBound(buckets.name);
      }
      checkTakeArguments(entry.key, entry.cost, entry.limit, buckets.callLimit);
      const key = buckets.redisKey(entry.key);
      if (this.client.cluster) {
        const entrySlot = keySlot(key);
        if (slot !== -1 && entrySlot !== slot) {
          throw new SluiceError(
            'SLUICE_CONFIG',
            'an all-or-nothing take on a Redis Cluster needs keys of one hash slot: take one key for every limit, or set the RedisStore option hashTag so that these keys share a tag',
          );
        }
        slot = entrySlot;
      }
      list.push({ rule: buckets, key, cost: entry.cost, limit: buckets.sent(entry.limit) });
    }
    return queueGroup(this.pipeline, list, now, slot);
  }

  /**
   * Erases a subject (for a deletion request): deletes the buckets (and leases) of every key in
   * `keys` under every rule or concurrency limit in `names` (default: every one bound to this
   * store). No SCAN: the caller names the keys, e.g.
   * the subject's pseudonymous keys of every secret generation. Resolves to the number of Redis
   * keys deleted.
   *
   * @example
   * await store.erase(pseudonymsOf(userId), ['reports', 'reports-burst']);
   */
  async erase(
    keys: readonly string[],
    names: readonly string[] = [...this.rules.keys(), ...this.leaseGroups.keys()],
  ): Promise<number> {
    for (const name of names) {
      checkRuleName(name, 'RedisStore.erase names');
    }
    const redisKeys: string[] = [];
    // Reset markers name the key too: deleted with it, not counted (they hold no bucket).
    const markers: string[] = [];
    for (const name of names) {
      const buckets = this.rules.get(name) ?? new RedisRuleBuckets(this, name, undefined);
      for (const key of keys) {
        if (typeof key !== 'string' || key.length === 0) {
          throw new SluiceError('SLUICE_ARGUMENT', 'RedisStore.erase keys must be non-empty strings');
        }
        redisKeys.push(buckets.redisKey(key));
        markers.push(buckets.markerKey(key));
      }
    }
    // DEL may name several keys only within one slot on a Cluster.
    const groups = new Map<number, string[]>();
    for (const key of redisKeys) {
      const slot = this.client.cluster ? keySlot(key) : 0;
      const group = groups.get(slot);
      if (group === undefined) groups.set(slot, [key]);
      else group.push(key);
    }
    const counts = await Promise.all(
      [...groups.values()].map((group) => this.command(() => this.client.del(group))),
    );
    const markerGroups = new Map<number, string[]>();
    for (const key of markers) {
      const slot = this.client.cluster ? keySlot(key) : 0;
      const group = markerGroups.get(slot);
      if (group === undefined) markerGroups.set(slot, [key]);
      else group.push(key);
    }
    await Promise.all([...markerGroups.values()].map((group) => this.command(() => this.client.del(group))));
    return counts.reduce((sum, n) => sum + Number(n), 0);
  }

  /** Refuses new decisions; the client stays open (it is yours). */
  async close(): Promise<void> {
    this.pipeline.close();
  }

  /** @internal Runs one command within the timeout, mapping every failure to a coded error. */
  command<T>(run: () => Promise<T>): Promise<T> {
    if (!this.client.ready()) return Promise.reject(unavailable('connection is not ready'));
    let call: Promise<T>;
    try {
      call = run();
    } catch (error) {
      return Promise.reject(storeError(error));
    }
    return withDeadline(call, this.timeoutMs, TIMEOUT_SUBJECT).catch((error: unknown) => {
      throw storeError(error);
    });
  }
}
