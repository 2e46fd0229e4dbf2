import { makeDecision, type Decision } from '../core/decision.js';
import { parseDuration, type Duration } from '../core/duration.js';
import { SluiceError, optionError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import { MAX_WAIT_MS, reserverOf } from '../core/reservation.js';
import type { CallLimit } from '../core/rules/rule.js';
import type { MaybePromise } from '../stores/contract/bucket-steps.js';
import { callLimitOf, checkKey, costOf, readClock } from './call-input.js';
import type { TakeCall } from './failure.js';
import { reportTake } from './decision-report.js';
import { closedError, type LimiterInternals } from './limiter-internals.js';
import type { ReceiptBook, ReceiptedDecision } from './receipts.js';
import type { WaitingRoom } from './waiting-room.js';

/** Per-call options of `limiter.takeOrWait`. */
export interface WaitOptions {
  /**
   * The longest this call may wait for its slot, from `"1ms"` to `"1h"`: a slot further away is
   * refused at once (a normal refusal, nothing charged). Required: how long a caller may be held
   * is a choice to make, not a default.
   */
  maxWait: Duration;
  /**
   * Aborts the wait: the call gives its reservation back (a refund of exactly what it reserved)
   * and rejects with the signal's reason. An already aborted signal reserves nothing.
   */
  signal?: AbortSignal;
  /** Units to take: a whole number from 1 to `MAX_COUNT`. @default 1 */
  cost?: number;
  /** This call's own rate instead of the rule's, as for `limiter.take` (`TakeOptions.limit`). */
  limit?: number;
  /** This call's own period, as for `limiter.take` (`TakeOptions.period`). */
  period?: Duration;
  /** This call's own burst, as for `limiter.take` (`TakeOptions.burst`). */
  burst?: number;
}

/** What `limiter.takeOrWait` resolves to once the slot has arrived (or at once, refused). */
export interface WaitedDecision extends ReceiptedDecision {
  /** Milliseconds the call waited for its slot: 0 when admitted at once or refused. */
  readonly waitedMs: number;
}

const waitKeys = ['maxWait', 'signal', 'cost', 'limit', 'period', 'burst'] as const;

/** The checked options of one call. */
export interface WaitRequest {
  readonly maxWaitMs: number;
  readonly signal: AbortSignal | undefined;
  readonly cost: number;
}

/**
 * Checks `takeOrWait`'s options. A message names the option, never a value (they may come from a
 * request).
 * @throws SluiceError `SLUICE_ARGUMENT`, or `SLUICE_DURATION` for `maxWait`
 */
export function readWaitOptions(options: unknown): WaitRequest {
  if (typeof options !== 'object' || options === null)
    throw new SluiceError('SLUICE_ARGUMENT', 'takeOrWait needs options with maxWait, e.g. { maxWait: "2s" }');
  checkOptionKeys('takeOrWait', options, waitKeys);
  const { maxWait, signal, cost } = options as Record<string, unknown>;
  const maxWaitMs = parseDuration(maxWait, 'takeOrWait maxWait');
  if (maxWaitMs > MAX_WAIT_MS) throw optionError('takeOrWait maxWait', 'a duration of at most "1h"');
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new SluiceError('SLUICE_ARGUMENT', 'takeOrWait signal must be an AbortSignal');
  const units = costOf(cost);
  if (units === 0)
    throw new SluiceError('SLUICE_ARGUMENT', 'takeOrWait cost must be at least 1: a peek waits for nothing');
  return { maxWaitMs, signal: signal as AbortSignal | undefined, cost: units };
}

/**
 * A reservation's decision as its caller sees it once the slot has arrived: admitted now
 * (`retryAfterMs` 0), `resetMs` counted from the slot.
 */
export function arrived(decision: Decision, waitedMs: number): Decision {
  const reset = decision.resetMs > waitedMs ? decision.resetMs - waitedMs : 0;
  return makeDecision({
    allowed: true,
    name: decision.name,
    limit: decision.limit,
    capacity: decision.capacity,
    remaining: decision.remaining,
    cost: decision.cost,
    retryAfterMs: 0,
    resetMs: reset,
    windowMs: decision.windowMs,
  });
}

/**
 * Resolves after `ms` (one timer for this call), or rejects with the signal's reason as soon as
 * it aborts; the listener goes with the timer.
 */
export function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal === undefined) {
      setTimeout(resolve, ms);
      return;
    }
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** What the wait path needs of its limiter: its reservations, receipts, refunds and events. */
export interface SlotReserver extends Pick<
  LimiterInternals,
  'name' | 'rule' | 'store' | 'clock' | 'closed' | 'mode' | 'buckets' | 'events' | 'refund'
> {
  readonly receipts: ReceiptBook;
  /** The calls waiting now, bounded over all keys and per key. */
  readonly room: WaitingRoom;
  /** A reservation in the store, answered by the failure policy when the store fails. */
  reserveSlot(take: TakeCall, maxWaitMs: number): MaybePromise<Decision>;
}

/**
 * `limiter.takeOrWait`: the call checked (a throw here is its rejection, see `promised`), then
 * counted in the waiting room until it settles.
 */
export function takeOrWaitStep(
  this: SlotReserver,
  key: string,
  options: WaitOptions,
): Promise<WaitedDecision> {
  if (this.closed) throw closedError(this.name);
  checkKey(key);
  const { maxWaitMs, signal, cost } = readWaitOptions(options);
  const limit = callLimitOf(options, this.rule);
  reserverOf(this.rule);
  if (this.mode === 'shadow')
    throw new SluiceError(
      'SLUICE_CONFIG',
      `limiter ${JSON.stringify(this.name)} is in shadow mode, which never refuses: it has nothing to wait for`,
    );
  if (this.buckets.reserve === undefined)
    throw new SluiceError(
      'SLUICE_CONFIG',
      `the ${this.store.kind} store of limiter ${JSON.stringify(this.name)} cannot reserve slots (its buckets have no reserve)`,
    );
  if (signal?.aborted === true) throw signal.reason;
  const now = readClock(this.clock);
  // Counted from before the reservation until the call settles: a crowd beyond the bounds is
  // refused here, before anything is reserved.
  const room = this.room;
  room.enter(this.name, key);
  return waitForSlot(this, key, cost, now, maxWaitMs, limit, signal).finally(() => room.leave(key));
}

/**
 * A checked `takeOrWait` call: its reservation, then its wait (one timer). An aborted wait gives
 * its reservation back (a failed refund is logged by the limiter), then rejects with the
 * signal's reason.
 */
async function waitForSlot(
  limiter: SlotReserver,
  key: string,
  cost: number,
  now: number,
  maxWaitMs: number,
  limit: CallLimit | undefined,
  signal: AbortSignal | undefined,
): Promise<WaitedDecision> {
  const started = limiter.events.listening ? performance.now() : 0;
  const generation = limiter.buckets.resetGeneration?.(key);
  const decision = await limiter.reserveSlot({ key, cost, now, limit }, maxWaitMs);
  const wait = decision.allowed && decision.source === 'store' ? decision.retryAfterMs : 0;
  const answer = wait > 0 ? arrived(decision, wait) : decision;
  if (limiter.events.listening)
    reportTake(limiter, key, cost, answer, undefined, performance.now() - started);
  const receipt = limiter.receipts.issue(limiter.name, key, decision, now, limit, generation);
  if (wait === 0) return { decision: answer, receipt, waitedMs: 0 };
  try {
    await sleepUnlessAborted(wait, signal);
  } catch (reason) {
    if (receipt !== undefined) await limiter.refund(receipt).catch(ignore);
    throw reason;
  }
  return { decision: answer, receipt, waitedMs: wait };
}

/** Swallows a rejection already counted and logged where it happened. */
function ignore(): void {}
