import type { Decision } from '../../core/decision.js';
import { parseTimerDuration, type Duration } from '../../core/duration.js';
import { SluiceError, optionError } from '../../core/errors.js';
import { checkOptionKeys } from '../../core/options.js';
import type { BucketTier, CallLimit, Rule } from '../../core/rule.js';
import { assertDistinctEntries, type RuleBuckets, type Store, type TakeEntry } from '../../store.js';
import { Batcher, type BatchEntry, type BatchRule } from './batcher.js';
import { TIMEOUT_SUBJECT, storeError, unavailable } from './redis-errors.js';
import { checkAdjustArguments, checkTakeArguments, checkTier } from './take-arguments.js';
import { redisClient, type RedisClient, type RedisClientInput } from './redis-client.js';
import { keySlot } from './key-slot.js';
import { bucketId } from '../shared/bucket-id.js';
import { assertNameFree, checkRuleName } from '../shared/rule-name.js';
import { readTimeSource, type TimeSource } from '../shared/time-source.js';
import { withDeadline } from '../shared/deadline.js';
import { redisCodecFor, type RuleEncoder } from './algorithms/index.js';
import { checkReservation, reserverOf } from '../../core/reservation.js';
import { checkLeaseGroup, type LeaseStore } from '../lease-store.js';
import { RedisLeaseBuckets } from './redis-lease-buckets.js';
import { refundHorizonMs } from '../shared/refund-horizon.js';
import { resetScript } from './scripts.js';

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
/** On the app's time, keys live this much longer than their horizon; see docs/redis.md. */
const APP_TIME_SLACK_MS = 60_000;

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
    return this.batcher.replies;
  }
  /** @internal */
  readonly client: RedisClient;
  /** @internal */
  readonly hashTag: RedisHashTag;
  /** @internal */
  readonly batcher: Batcher;
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
    this.batcher = new Batcher({
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
   * by their expiries, acquired and released in one script call each (see leases.ts).
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
    try {
      assertDistinctEntries(entries);
      return this.takeAllUnchecked(entries, now);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private takeAllUnchecked(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    if (entries.length === 0) return Promise.resolve([]);
    const list: BatchEntry[] = [];
    let slot = -1;
    for (const entry of entries) {
      const buckets = entry.buckets;
      if (!(buckets instanceof RedisRuleBuckets) || !this.holds(buckets)) {
        return Promise.reject(notBound(buckets.name));
      }
      checkTakeArguments(entry.key, entry.cost, entry.limit, buckets.callLimit);
      const key = buckets.redisKey(entry.key);
      if (this.client.cluster) {
        const entrySlot = keySlot(key);
        if (slot !== -1 && entrySlot !== slot) {
          return Promise.reject(
            new SluiceError(
              'SLUICE_CONFIG',
              'an all-or-nothing take on a Redis Cluster needs keys of one hash slot: take one key for every limit, or set the RedisStore option hashTag so that these keys share a tag',
            ),
          );
        }
        slot = entrySlot;
      }
      list.push({ rule: buckets, key, cost: entry.cost, limit: buckets.sent(entry.limit) });
    }
    return this.batcher.takeAll(list, now, slot);
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
    this.batcher.close();
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

/** One rule's buckets in a {@link RedisStore}. */
export class RedisRuleBuckets implements RuleBuckets, BatchRule {
  readonly name: string;
  readonly rule: Rule;
  private readonly store: RedisStore;
  /** `<prefix><name>:`, the start of every key of this rule. */
  private readonly keyPrefix: string;
  /**
   * `<prefix><name>#reset:`, the start of every reset marker of this rule: `#` is in no prefix
   * and no rule name, so no bucket key starts so.
   */
  private readonly markerPrefix: string;
  /** How long a reset marker lives (see `refundHorizonMs`). */
  private readonly horizonMs: number;
  /** The rule's side of the scripts (see algorithms/); undefined for a rule not bound here. */
  private readonly encoder: RuleEncoder | undefined;
  readonly callLimit: boolean;
  readonly replyWidth: number;
  readonly timed: boolean;

  /**
   * `rule` undefined: a rule not bound here, only to build its keys (erase).
   * @throws SluiceError `SLUICE_CONFIG` for a rule of a kind the store does not decide
   */
  constructor(store: RedisStore, name: string, rule: Rule | undefined) {
    this.store = store;
    this.name = name;
    this.rule = rule as Rule;
    this.keyPrefix = `${store.prefix}${name}:`;
    this.markerPrefix = `${store.prefix}${name}#reset:`;
    const codec = rule === undefined ? undefined : redisCodecFor(rule, name);
    this.encoder = codec?.encoder;
    // After the codec, which refuses a value that is no rule of a kind decided here.
    this.horizonMs = rule === undefined ? 0 : refundHorizonMs(rule);
    this.callLimit = codec?.algorithm.callLimit ?? false;
    this.replyWidth = codec?.algorithm.replyWidth ?? 3;
    this.timed = codec?.encoder.timed ?? false;
  }

  take(key: string, cost: number, now: number, limit: CallLimit | undefined): Promise<Decision> {
    try {
      if (!this.store.holds(this)) return Promise.reject(notBound(this.name));
      checkTakeArguments(key, cost, limit, this.callLimit);
      const redisKey = this.redisKey(key);
      const slot = this.store.client.cluster ? keySlot(redisKey) : 0;
      return this.store.batcher.take(this, redisKey, cost, now, this.sent(limit), slot);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Deletes the key's bucket and writes its reset marker, the reset's time (the server's, or on
   * the app's clock `now`, else this process's), in one script call (see `resetScript`): a
   * refund of a take from before it then gives nothing back.
   */
  reset(key: string, now?: number): Promise<void> {
    try {
      if (!this.store.holds(this)) return Promise.reject(notBound(this.name));
      checkTakeArguments(key, 0, undefined, false);
      const keys = [this.redisKey(key), this.markerKey(key)];
      const args = [String(this.horizonMs)];
      if (this.store.timeSource === 'app') {
        const at = typeof now === 'number' && Number.isFinite(now) ? Math.floor(now) : Date.now();
        args.push(String(at), String(APP_TIME_SLACK_MS));
      }
      // EVAL, not EVALSHA: a reset is rare, and its script is short.
      return this.store.command(() => this.store.client.eval(resetScript, keys, args)).then(() => undefined);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Settles a take after the fact (a refund, `delta < 0`, or a settlement): one script call of
   * its own (see `adjustScript` in scripts.ts), atomic, with the deadline and failures of a take.
   * On the server's clock `now` is ignored, and `takenAt` and `until` (the app's clock at the
   * take, and the end of what it weighs) are translated to the server's time with the measured
   * offset. `limit`: the take's per-call tier, for a token bucket (a count is ignored).
   */
  adjust(
    key: string,
    delta: number,
    now: number,
    takenAt: number,
    until: number,
    limit?: CallLimit,
  ): Promise<void> {
    try {
      if (!this.store.holds(this)) return Promise.reject(notBound(this.name));
      checkAdjustArguments(key, delta, now, takenAt, until);
      const tier = this.tierOf(limit);
      if (delta === 0) return Promise.resolve();
      const redisKey = this.redisKey(key);
      const slot = this.store.client.cluster ? keySlot(redisKey) : 0;
      return this.store.batcher.adjust(
        this,
        redisKey,
        delta,
        now,
        takenAt,
        until,
        tier,
        slot,
        this.markerKey(key),
        this.horizonMs,
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Reserves a slot (see `RuleBuckets.reserve`): one call of the reservation script, with the
   * deadline and failures of a take. Token buckets without a lockout only (`SLUICE_CONFIG`).
   * `limit`: the call's tier, as for a take.
   */
  reserve(key: string, cost: number, now: number, maxWaitMs: number, limit?: CallLimit): Promise<Decision> {
    try {
      if (!this.store.holds(this)) return Promise.reject(notBound(this.name));
      reserverOf(this.rule);
      checkReservation(cost, maxWaitMs);
      checkTakeArguments(key, cost, undefined, false);
      const tier = this.tierOf(limit);
      const redisKey = this.redisKey(key);
      const slot = this.store.client.cluster ? keySlot(redisKey) : 0;
      return this.store.batcher.reserve(this, redisKey, cost, now, maxWaitMs, tier, slot);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * @internal What a checked take's per-call limit sends: a count as given for rules counted per
   * window; for a token bucket its tier, or undefined for none (a count, or the rule's own
   * parameters: see `RuleEncoder.tierOf`).
   */
  sent(limit: CallLimit | undefined): CallLimit | undefined {
    const tierOf = (this.encoder as RuleEncoder).tierOf;
    return tierOf === undefined ? limit : tierOf(limit);
  }

  /**
   * The tier an adjustment or a reservation sends (see {@link sent}), checked as a take's is;
   * undefined for a rule without tiers, which ignores the argument as a take ignores a count.
   * @throws SluiceError `SLUICE_ARGUMENT`
   */
  private tierOf(limit: CallLimit | undefined): BucketTier | undefined {
    const tierOf = (this.encoder as RuleEncoder).tierOf;
    if (tierOf === undefined || limit === undefined || typeof limit === 'number') return undefined;
    checkTier(limit);
    return tierOf(limit);
  }

  /** @internal The start of the window holding `at` (see algorithms/algorithm.ts). */
  windowOf(at: number): number {
    return (this.encoder as RuleEncoder).windowOf(at);
  }

  /** @internal The rule's values for the scripts at about `now` (see algorithms/algorithm.ts). */
  spec(now: number): readonly string[] {
    return (this.encoder as RuleEncoder).spec(now);
  }

  /** @internal */
  decision(
    allowed: boolean,
    remaining: number,
    retryAfterMs: number,
    resetMs: number,
    windowMs: number,
    cost: number,
    limit: CallLimit | undefined,
  ): Decision {
    return (this.encoder as RuleEncoder).decision(
      allowed,
      remaining,
      retryAfterMs,
      resetMs,
      windowMs,
      cost,
      limit,
    );
  }

  /**
   * The Redis key of `key`'s reset marker: its bucket's key with the marker prefix, so in the
   * bucket's slot (the same hash tag).
   * @internal
   */
  markerKey(key: string): string {
    return this.markerPrefix + this.redisKey(key).slice(this.keyPrefix.length);
  }

  /**
   * The Redis key of `key`'s bucket: `<prefix><name>:{<id>}`, or with a store or custom hash tag
   * `<prefix><name>:{<tag>}<id>`, where `<id>` is the key's shared bucket id (the key itself, or
   * a padded SHA-256 for a long or unstorable key, the same id as in every store).
   * @internal
   */
  redisKey(key: string): string {
    const id = bucketId(key);
    const start = `${this.keyPrefix}{`;
    const hashTag = this.store.hashTag;
    if (hashTag === 'key') return `${start}${id}}`;
    if (hashTag === 'store') return `${start}${this.store.prefix || 'sluice'}}${id}`;
    const tag = hashTag(this.name, key);
    if (typeof tag !== 'string' || tag.length === 0 || tag.includes('}')) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        'the RedisStore hashTag function must return a non-empty string without "}"',
      );
    }
    return `${start}${tag}}${id}`;
  }
}

/** SLUICE_CONFIG for buckets whose rule is not (or no longer) bound to the store. */
function notBound(name: string): SluiceError {
  return new SluiceError(
    'SLUICE_CONFIG',
    `rule ${JSON.stringify(name)} is not bound to this RedisStore (never bound, or unbound since)`,
  );
}
