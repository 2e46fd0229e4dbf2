import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { BucketTier, CallLimit, Rule } from '../../core/rules/rule.js';
import { promised } from '../contract/bucket-steps.js';
import { type BucketAdjustment, type RuleBuckets } from '../contract/store.js';
import { checkAdjustArguments, checkTakeArguments, checkTier } from './calls/take-arguments.js';
import type { CallRule } from './calls/call-rule.js';
import { queueTake } from './calls/take.js';
import { queueAdjustment } from './calls/adjust.js';
import { queueReservation } from './calls/reserve.js';
import { keySlot } from './key-slot.js';
import { bucketId } from '../shared/bucket-id.js';
import { redisCodecFor, type RuleEncoder, type ScriptDecision } from './algorithms/index.js';
import { checkReservation, reserverOf } from '../../core/reservation.js';
import { refundHorizonMs } from '../shared/refund-horizon.js';
import { sendReset } from './calls/reset.js';
import type { RedisStore } from './store.js';

/** On the app's time, keys live this much longer than their horizon; see docs/redis.md. */
export const APP_TIME_SLACK_MS = 60_000;

/** One rule's buckets in a {@link RedisStore}. */
export class RedisRuleBuckets implements RuleBuckets, CallRule {
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
      if (!this.store.holds(this)) throw notBound(this.name);
      checkTakeArguments(key, cost, limit, this.callLimit);
      const redisKey = this.redisKey(key);
      const slot = this.store.client.cluster ? keySlot(redisKey) : 0;
      return queueTake(this.store.pipeline, this, redisKey, cost, now, this.sent(limit), slot);
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
    return promised(this, this.sendReset, key, now);
  }

  private sendReset(key: string, now: number | undefined): Promise<void> {
    if (!this.store.holds(this)) throw notBound(this.name);
    checkTakeArguments(key, 0, undefined, false);
    const bucketKey = this.redisKey(key);
    const markerKey = this.markerKey(key);
    let appNow: number | undefined;
    if (this.store.timeSource === 'app') {
      appNow = typeof now === 'number' && Number.isFinite(now) ? Math.floor(now) : Date.now();
    }
    const { client } = this.store;
    return this.store
      .command(() => sendReset(client, bucketKey, markerKey, this.horizonMs, appNow, APP_TIME_SLACK_MS))
      .then(() => undefined);
  }

  /**
   * Settles a take after the fact (a refund, `delta < 0`, or a settlement): one script call of
   * its own (see `adjustScript` in adjust-scripts.ts), atomic, with the deadline and failures of a take.
   * On the server's clock `now` is ignored, and `takenAt` and `until` (the app's clock at the
   * take, and the end of what it weighs) are translated to the server's time with the measured
   * offset. `limit`: the take's per-call tier, for a token bucket (a count is ignored).
   */
  adjust(key: string, { delta, now, takenAt, until, limit }: BucketAdjustment): Promise<void> {
    try {
      if (!this.store.holds(this)) throw notBound(this.name);
      checkAdjustArguments(key, delta, now, takenAt, until);
      const tier = this.tierOf(limit);
      if (delta === 0) return Promise.resolve();
      const redisKey = this.redisKey(key);
      const slot = this.store.client.cluster ? keySlot(redisKey) : 0;
      return queueAdjustment(this.store.pipeline, this, redisKey, now, tier, slot, {
        delta,
        takenAt,
        until,
        marker: this.markerKey(key),
        horizonMs: this.horizonMs,
      });
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
      if (!this.store.holds(this)) throw notBound(this.name);
      reserverOf(this.rule);
      checkReservation(cost, maxWaitMs);
      checkTakeArguments(key, cost, undefined, false);
      const tier = this.tierOf(limit);
      const redisKey = this.redisKey(key);
      const slot = this.store.client.cluster ? keySlot(redisKey) : 0;
      return queueReservation(this.store.pipeline, this, redisKey, cost, now, maxWaitMs, tier, slot);
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
  decision(reply: ScriptDecision): Decision {
    return (this.encoder as RuleEncoder).decision(reply);
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
export function notBound(name: string): SluiceError {
  return new SluiceError(
    'SLUICE_CONFIG',
    `rule ${JSON.stringify(name)} is not bound to this RedisStore (never bound, or unbound since)`,
  );
}
