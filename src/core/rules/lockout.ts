import { makeDecision, type Decision } from '../decision.js';
import { parseRuleDuration, type Duration } from '../duration.js';
import { optionError } from '../errors.js';
import { checkOptionKeys } from '../options.js';
import type { BucketState } from '../state.js';
import type { RuleTake } from './rule.js';

/**
 * Options of a rule's lockout (the `block` option of every built-in rule): a refusal locks the
 * key out for `duration`; a key refused again soon after its block ended is locked out `factor`
 * times longer, up to `max`.
 *
 * @example
 * tokenBucket({ limit: 10, period: '10m', block: { duration: '15m', factor: 2, max: '1d' } });
 * // first refusal: 15 minutes; refused again within a day of the end: 30 minutes, then 1 h, 2 h …
 */
export interface BlockOptions {
  /** How long the first refusal locks the key out: a duration string from `"1ms"` to `"366d"`. */
  duration: Duration;
  /**
   * How much longer each next block is, while the key is remembered (see `forgetAfter`): a
   * number from 1 (every block as long as the first) to 1000. A block's length is the previous
   * one times `factor`, rounded up to a whole millisecond, capped at `max`.
   * @default 1
   */
  factor?: number;
  /**
   * The longest a block may last: a duration from `duration` to `"366d"`.
   * @default "1d" when `factor` is above 1 (or `duration` when that is longer); `duration` otherwise
   */
  max?: Duration;
  /**
   * How long after a block ends the key is remembered: refused again within that time, it is
   * blocked longer (by `factor`); refused again later, it starts over at `duration`. A duration
   * up to `"366d"`.
   * @default max
   */
  forgetAfter?: Duration;
}

/** The longest a block, its cap or its memory may be: 366 days, a leap year. */
export const MAX_BLOCK_MS = 366 * 86_400_000;

/** The most a block's length may be multiplied by from one block to the next. */
export const MAX_BLOCK_FACTOR = 1000;

const blockKeys = ['duration', 'factor', 'max', 'forgetAfter'] as const;

/**
 * A rule's lockout, checked: every length in whole ms. What the memory store applies through the
 * rule's `decide`, and what the Redis and PostgreSQL stores translate next to the data.
 */
export interface BlockPolicy {
  /** The first block's length. */
  readonly durationMs: number;
  /** Each next block's length is the previous one's times this, rounded up. */
  readonly factor: number;
  /** The longest block. */
  readonly maxMs: number;
  /** How long after a block's end a new refusal still escalates. */
  readonly forgetAfterMs: number;
}

/**
 * Checks a rule's `block` option. Every failure is a SLUICE_CONFIG naming the option
 * (`tokenBucket block duration`), without the value received.
 * @param owner the rule's factory name, for error messages
 */
export function readBlockOptions(owner: string, value: unknown): BlockPolicy | undefined {
  if (value === undefined) return undefined;
  const option = `${owner} block`;
  checkOptionKeys(option, value, blockKeys);
  const { duration, factor = 1, max, forgetAfter } = value as Record<string, unknown>;
  const durationMs = blockLength(duration, `${option} duration`);
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1 || factor > MAX_BLOCK_FACTOR)
    throw optionError(`${option} factor`, `a number from 1 to ${MAX_BLOCK_FACTOR}`);
  const defaultMax = factor > 1 ? Math.max(durationMs, 86_400_000) : durationMs;
  const maxMs = max === undefined ? defaultMax : blockLength(max, `${option} max`);
  if (maxMs < durationMs) throw optionError(`${option} max`, 'a duration at least as long as duration');
  const forgetAfterMs = forgetAfter === undefined ? maxMs : blockLength(forgetAfter, `${option} forgetAfter`);
  return { durationMs, factor, maxMs, forgetAfterMs };
}

function blockLength(value: unknown, option: string): number {
  const expected = 'a duration string from "1ms" to "366d", like "15m", "1h" or "1d"';
  return parseRuleDuration(value, option, expected, MAX_BLOCK_MS);
}

/**
 * The length of the block a refusal at `now` starts: `durationMs` for a key not remembered, else
 * the last block's length times `factor`, rounded up and capped at `maxMs`. A key is remembered
 * while `now` is before its last block's end plus `forgetAfterMs`.
 *
 * One multiplication of two doubles and a ceiling: IEEE arithmetic gives the same whole number in
 * JavaScript, Lua and PostgreSQL, so every store escalates alike.
 */
export function nextBlockMs(policy: BlockPolicy, state: BucketState, now: number): number {
  const last = state.blockMs;
  if (!(last > 0) || !(now < state.blockedUntil + policy.forgetAfterMs)) return policy.durationMs;
  const longer = Math.ceil(last * policy.factor);
  return longer < policy.maxMs ? longer : policy.maxMs;
}

/**
 * How long after `now` the block fields of `state` still matter: until the end of the last block
 * plus `forgetAfterMs` (a refusal before then escalates); 0 when the key was never blocked.
 */
export function blockHorizonMs(policy: BlockPolicy, state: BucketState, now: number): number {
  if (!(state.blockMs > 0)) return 0;
  const end = state.blockedUntil + policy.forgetAfterMs;
  return end > now ? end - now : 0;
}

/**
 * A take as a rule's own decision reads it: a {@link RuleTake} whose `commit` is given apart,
 * since a lockout asks a blocked key's bucket without charging it, and a reservation asks it with
 * its own numbers; neither allocates a take for that.
 */
export type BucketTake = Omit<RuleTake, 'commit'>;

/** A rule's own decision, before any lockout: what {@link decideWithBlock} wraps. */
export interface BucketDecider {
  decideBucket(state: BucketState, take: BucketTake, commit: boolean): Decision;
}

/**
 * A decision under a lockout.
 *
 * - While the key is blocked (`now` before `blockedUntil`), every take and peek is refused and
 *   nothing is charged: `remaining` 0, and `retryAfterMs` the block's end, or later when the
 *   bucket itself would still refuse then (so a retry at `retryAfterMs` is admitted).
 * - Otherwise the rule decides. A committed refusal of a cost the rule can ever admit (not a
 *   peek, not a cost beyond capacity) starts a block of {@link nextBlockMs} at `now`, written into
 *   the same state as the bucket (and the bucket is charged when the rule has a penalty);
 *   `retryAfterMs` is then the block's length, or the bucket's wait when that is longer.
 * - Admitted takes change nothing of the block fields, so the escalation is remembered until
 *   `forgetAfterMs` after the last block's end.
 */
export function decideWithBlock(
  rule: BucketDecider,
  policy: BlockPolicy,
  state: BucketState,
  take: RuleTake,
): Decision {
  const { now, name, cost, commit } = take;
  const blockedUntil = state.blockedUntil;
  if (now < blockedUntil) {
    return blockedFor(rule.decideBucket(state, take, false), blockedUntil - now, name, cost);
  }
  const decision = rule.decideBucket(state, take, commit);
  if (decision.allowed || !commit || cost === 0 || decision.retryAfterMs === Infinity) return decision;
  const blockMs = nextBlockMs(policy, state, now);
  state.blockedUntil = now + blockMs;
  state.blockMs = blockMs;
  return blockedFor(decision, blockMs, name, cost);
}

/**
 * The refusal of a key blocked for `left` more ms, from the bucket's own decision: nothing
 * remains, and a retry waits for the block's end or the bucket's, whichever is later (so a retry
 * at `retryAfterMs` is admitted).
 */
function blockedFor(bucket: Decision, left: number, name: string, cost: number): Decision {
  return makeDecision({
    allowed: false,
    name,
    limit: bucket.limit,
    capacity: bucket.capacity,
    remaining: 0,
    cost,
    retryAfterMs: bucket.retryAfterMs > left ? bucket.retryAfterMs : left,
    resetMs: bucket.resetMs > left ? bucket.resetMs : left,
    windowMs: bucket.windowMs,
  });
}
