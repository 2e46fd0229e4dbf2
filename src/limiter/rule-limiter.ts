import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import type { CallLimit, Rule } from '../core/rules/rule.js';
import {
  isPending,
  promised,
  stepsOf,
  type BucketSteps,
  type MaybePromise,
} from '../stores/contract/bucket-steps.js';
import { isSyncStore, type RuleBuckets, type Store } from '../stores/contract/store.js';
import { withDeadline } from '../stores/shared/deadline.js';
import type { StoreHealth } from './breaker.js';
import { actualCostOf, callLimitOf, checkKey, costOf, readClock } from './call-input.js';
import { reportTake } from './decision-report.js';
import type { DecisionEvents } from './events.js';
import type { FailureHandler, FailurePolicy, LimiterStats, TakeCall } from './failure.js';
import {
  closedError,
  decideOnFailure,
  refusedForGood,
  shadowOf,
  storeAnswered,
  type LimiterInternals,
} from './limiter-internals.js';
import type { LimiterMode, TakeOptions } from './limiter-options.js';
import { ReceiptBook, type Receipt, type ReceiptedDecision } from './receipts.js';
import type { RefusalCache } from './refusal-cache.js';
import type { WaitingRoom } from './waiting-room.js';
import { takeOrWaitStep, type SlotReserver, type WaitOptions, type WaitedDecision } from './wait-for-slot.js';

/** No key checked yet: equal to no key a caller can pass. */
const NOT_CHECKED = Symbol('no key checked');

/**
 * A rule enforced on a store. Each step (take, take with a receipt, refund or settle, peek,
 * reset) is written once over the store's {@link BucketSteps}: it continues at once when the
 * store answered with a value (the memory store) and awaits only a promise. The promise face is
 * here; {@link SyncRuleLimiter} adds the synchronous one over the same steps.
 */
export class RuleLimiter implements LimiterInternals, SlotReserver {
  readonly buckets: RuleBuckets;
  readonly failure: FailurePolicy;
  closed = false;
  /** Receipts issued and not settled yet. */
  readonly receipts = new ReceiptBook();
  /** The buckets as steps: answered with values when the store decides in this process. */
  protected readonly steps: BucketSteps;
  /**
   * The store decides in this process (a SyncStore): it cannot hang, and what it throws is the
   * caller's own error (a closed or unbound rule), never a failure for the policy to answer.
   */
  private readonly local: boolean;
  private readonly what: string;
  private readonly selfTimed: boolean;
  /** The key the last take checked; never equal to a key before the first (a symbol). */
  private checkedKey: unknown = NOT_CHECKED;

  constructor(
    readonly name: string,
    readonly rule: Rule,
    readonly store: Store,
    readonly clock: Clock,
    readonly timeoutMs: number,
    private readonly handler: FailureHandler,
    readonly events: DecisionEvents,
    readonly mode: LimiterMode,
    readonly room: WaitingRoom,
    private readonly refusals?: RefusalCache,
  ) {
    this.buckets = store.bind(name, rule);
    this.steps = stepsOf(this.buckets);
    this.local = isSyncStore(store);
    this.failure = handler.policy;
    this.what = `the ${store.kind} store (limit ${JSON.stringify(name)})`;
    // The store's own bound is never longer than ours (see resolveTimeout); when it is the same,
    // the store's timer is enough and a second one per call would only cost.
    this.selfTimed = store.timeoutMs === timeoutMs;
  }

  take(key: string, options?: TakeOptions): Promise<Decision> {
    return promised(this, this.takeStep, key, options);
  }

  takeWithReceipt(key: string, options?: TakeOptions): Promise<ReceiptedDecision> {
    return promised(this, this.takeWithReceiptStep, key, options);
  }

  refund(receipt: Receipt): Promise<void> {
    return promised(this, this.adjustStep, receipt, undefined);
  }

  settle(receipt: Receipt, actualCost: number): Promise<void> {
    return promised(this, this.adjustStep, receipt, actualCost);
  }

  peek(key: string, options?: Pick<TakeOptions, 'limit' | 'period' | 'burst'>): Promise<Decision> {
    return promised(this, this.peekStep, key, options);
  }

  reset(key: string): Promise<void> {
    return promised(this, this.resetStep, key, undefined);
  }

  unblock(key: string): Promise<void> {
    return this.reset(key);
  }

  takeOrWait(key: string, options: WaitOptions): Promise<WaitedDecision> {
    return promised(this, takeOrWaitStep, key, options);
  }

  get waiting(): number {
    return this.room.size;
  }

  /** A take, its input checked, decided as the limit's mode says. */
  protected takeStep(key: string, options: TakeOptions | undefined): MaybePromise<Decision> {
    if (this.closed) throw closedError(this.name);
    this.checkKeyOnce(key);
    const cost = options === undefined ? 1 : costOf(options.cost);
    const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
    const decided = this.decideTake(key, cost, readClock(this.clock), limit);
    return this.mode === 'shadow' ? shadowAnswer(decided) : decided;
  }

  /** A take and the receipt of what it charged. */
  protected takeWithReceiptStep(
    key: string,
    options: TakeOptions | undefined,
  ): MaybePromise<ReceiptedDecision> {
    if (this.closed) throw closedError(this.name);
    this.checkKeyOnce(key);
    const cost = options === undefined ? 1 : costOf(options.cost);
    const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
    const now = readClock(this.clock);
    // Read before the take: a reset between the two can then only make the refund give nothing.
    const generation = this.buckets.resetGeneration?.(key);
    const decided = this.decideTake(key, cost, now, limit);
    if (isPending(decided)) return this.receiptedLater(decided, key, now, limit, generation);
    return this.receipted(decided, key, now, limit, generation);
  }

  // What a step does once its store's promise settles lives in its own method (…Later): a
  // closure in the step itself would make every call allocate its context, values too.

  private receiptedLater(
    decided: Promise<Decision>,
    key: string,
    now: number,
    limit: CallLimit | undefined,
    generation: number | undefined,
  ): Promise<ReceiptedDecision> {
    return decided.then((decision) => this.receipted(decision, key, now, limit, generation));
  }

  private receipted(
    decision: Decision,
    key: string,
    now: number,
    limit: CallLimit | undefined,
    generation: number | undefined,
  ): ReceiptedDecision {
    return {
      decision: this.mode === 'shadow' ? shadowOf(decision) : decision,
      receipt: this.receipts.issue(this.name, key, decision, now, limit, generation),
    };
  }

  /** A refund (`actualCost` undefined) or a settlement: one store call, the receipt reopened if it fails. */
  protected adjustStep(receipt: Receipt, actualCost: number | undefined): MaybePromise<void> {
    if (this.closed) throw closedError(this.name);
    const actual = actualCost === undefined ? 0 : actualCostOf(actualCost);
    // Read before the receipt closes: a clock that fails leaves it open, and is no store failure.
    const now = readClock(this.clock);
    this.receipts.close(receipt, this.name);
    const delta = actual - receipt.cost;
    if (delta === 0) return;
    const operation = delta < 0 ? 'refund a take' : 'settle a take';
    const { key, at, until } = receipt;
    let answer: MaybePromise<void>;
    try {
      answer = this.steps.adjust(key, {
        delta,
        now,
        takenAt: at,
        until,
        limit: receipt.limit,
        generation: receipt.generation,
      });
    } catch (error) {
      this.receipts.reopen(receipt);
      throw this.local ? error : this.handler.resetFailed(error, operation);
    }
    // A refund makes room: a refusal remembered for the key may no longer hold.
    if (delta < 0) this.refusals?.forget(key);
    return isPending(answer) ? this.adjustedLater(answer, receipt, delta, operation) : answer;
  }

  private adjustedLater(
    answer: Promise<void>,
    receipt: Receipt,
    delta: number,
    operation: string,
  ): Promise<void> {
    const adjusted = this.bounded(answer).catch((error: unknown) => {
      this.receipts.reopen(receipt);
      throw this.handler.resetFailed(error, operation);
    });
    const refusals = this.refusals;
    if (refusals === undefined || delta > 0) return adjusted;
    return adjusted.finally(() => refusals.forget(receipt.key));
  }

  /** What a take of 1 would get now, charging nothing. */
  protected peekStep(
    key: string,
    options: Pick<TakeOptions, 'limit' | 'period' | 'burst'> | undefined,
  ): MaybePromise<Decision> {
    if (this.closed) throw closedError(this.name);
    checkKey(key);
    const limit = options === undefined ? undefined : callLimitOf(options, this.rule);
    const decided = this.ask(key, 0, readClock(this.clock), limit);
    return this.mode === 'shadow' ? shadowAnswer(decided) : decided;
  }

  /** Forgets `key` in the store (and in the refusal cache). */
  protected resetStep(key: string): MaybePromise<void> {
    if (this.closed) throw closedError(this.name);
    checkKey(key);
    this.refusals?.forget(key);
    let answer: MaybePromise<void>;
    try {
      answer = this.steps.reset(key, readClock(this.clock));
    } catch (error) {
      throw this.local ? error : this.handler.resetFailed(error);
    }
    return isPending(answer) ? this.resetLater(answer, key) : answer;
  }

  private resetLater(answer: Promise<void>, key: string): Promise<void> {
    const reset = this.bounded(answer).catch((error: unknown) => {
      throw this.handler.resetFailed(error);
    });
    const refusals = this.refusals;
    if (refusals === undefined) return reset;
    // Forgotten again once the store has reset: a refusal learnt meanwhile may predate the reset.
    return reset.finally(() => refusals.forget(key));
  }

  /**
   * A reservation in the store, bounded by the store timeout; a store that fails decides as for
   * a take (the failure policy), without waiting.
   */
  reserveSlot(take: TakeCall, maxWaitMs: number): MaybePromise<Decision> {
    const { key, cost, now, limit } = take;
    if (cost > this.rule.capacityFor(limit)) return refusedForGood(this.rule, this.name, cost, now, limit);
    if (this.shortCircuited()) return this.handler.shortCircuit(take);
    let answer: MaybePromise<Decision>;
    try {
      answer = this.steps.reserve!(key, cost, now, maxWaitMs, limit);
    } catch (error) {
      return this.failed(error, take);
    }
    return isPending(answer) ? this.awaited(answer, key, cost, now, limit) : answer;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.refusals?.clear();
    this.store.unbind(this.name);
  }

  stats(): Readonly<LimiterStats> {
    const health = this.handler.breaker.health();
    return { ...this.handler.stats, breaker: health.breaker, breakerOpenings: health.openings };
  }

  storeHealth(): StoreHealth {
    return this.handler.breaker.health();
  }

  [storeAnswered](): void {
    this.handler.breaker.succeeded();
  }

  [decideOnFailure](error: unknown, take: TakeCall): Decision {
    return this.handler.decide(error, take);
  }

  /** Checks `key`, unless the take before checked this very key (one client taking again and again). */
  protected checkKeyOnce(key: string): void {
    if (key === this.checkedKey) return;
    checkKey(key);
    this.checkedKey = key;
  }

  /** A take: decided, and reported when someone listens (peeks are not reported). */
  private decideTake(
    key: string,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
  ): MaybePromise<Decision> {
    if (this.refusals !== undefined) {
      const remembered = this.refusals.answer(key, cost, limit, now);
      if (remembered !== undefined) {
        if (this.events.listening) reportTake(this, key, cost, remembered, undefined, 0);
        return remembered;
      }
    }
    // Refused the same way on every store, which is never asked, so that a decision does not
    // depend on the store behind the limiter; no store latency to report.
    if (cost > this.rule.capacityFor(limit)) {
      const refused = refusedForGood(this.rule, this.name, cost, now, limit);
      if (this.events.listening) reportTake(this, key, cost, refused, undefined, 0);
      return refused;
    }
    if (!this.events.listening) return this.ask(key, cost, now, limit);
    return this.askReported(key, cost, now, limit);
  }

  /** {@link ask}, its outcome and its latency reported to the events. */
  private askReported(
    key: string,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
  ): MaybePromise<Decision> {
    const started = performance.now();
    let answer: MaybePromise<Decision>;
    try {
      answer = this.ask(key, cost, now, limit);
    } catch (error) {
      // A store deciding in this process throws only the caller's own errors: not reported.
      if (!this.local) reportTake(this, key, cost, undefined, error, performance.now() - started);
      throw error;
    }
    if (isPending(answer)) return this.reportedLater(answer, key, cost, started);
    reportTake(this, key, cost, answer, undefined, performance.now() - started);
    return answer;
  }

  private reportedLater(
    answer: Promise<Decision>,
    key: string,
    cost: number,
    started: number,
  ): Promise<Decision> {
    return answer.then(
      (decision) => {
        reportTake(this, key, cost, decision, undefined, performance.now() - started);
        return decision;
      },
      (error: unknown) => {
        reportTake(this, key, cost, undefined, error, performance.now() - started);
        throw error;
      },
    );
  }

  /** The store's decision on a checked take (cost 0: a peek) within the rule's capacity. */
  private ask(key: string, cost: number, now: number, limit: CallLimit | undefined): MaybePromise<Decision> {
    // The take's facts become an object only where the failure policy answers: a take the
    // store answers allocates nothing for them.
    if (this.shortCircuited()) return this.handler.shortCircuit({ key, cost, now, limit });
    let answer: MaybePromise<Decision>;
    try {
      answer = this.steps.take(key, cost, now, limit);
    } catch (error) {
      return this.failed(error, { key, cost, now, limit });
    }
    // A value is a store deciding in this process: no breaker to tell, no refusal to remember.
    if (!isPending(answer)) return answer;
    const refusals = this.refusals;
    if (refusals === undefined || cost === 0) return this.awaited(answer, key, cost, now, limit);
    return this.rememberedLater(answer, key, cost, now, limit, refusals);
  }

  /** {@link awaited}, and the store's refusal remembered in the refusal cache. */
  private rememberedLater(
    answer: Promise<Decision>,
    key: string,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
    refusals: RefusalCache,
  ): Promise<Decision> {
    const epoch = refusals.epoch;
    return this.bounded(answer).then(
      (decision) => {
        this.handler.breaker.succeeded();
        refusals.remember(key, cost, limit, now, decision, epoch);
        return decision;
      },
      (error: unknown) => this.handler.decide(error, { key, cost, now, limit }),
    );
  }

  /** A store's pending decision, bounded by the timeout; a failure answered by the policy. */
  private awaited(
    answer: Promise<Decision>,
    key: string,
    cost: number,
    now: number,
    limit: CallLimit | undefined,
  ): Promise<Decision> {
    return this.bounded(answer).then(this.answered, (error: unknown) =>
      this.handler.decide(error, { key, cost, now, limit }),
    );
  }

  /** A store's synchronous throw: the caller's own error from a local store, else the policy's decision. */
  private failed(error: unknown, take: TakeCall): Decision {
    if (this.local) throw error;
    // A shared store that throws synchronously is failing like one that rejects.
    return this.handler.decide(error, take);
  }

  /** `pending` bounded by the limiter's timeout, unless the store bounds its own calls the same. */
  private bounded<T>(pending: Promise<T>): Promise<T> {
    return this.selfTimed ? pending : withDeadline(pending, this.timeoutMs, this.what);
  }

  /** A reply of the store: the breaker learns that it answers (a compare while nothing failed). */
  private readonly answered = (decision: Decision): Decision => {
    this.handler.breaker.succeeded();
    return decision;
  };

  /**
   * Whether the open breaker answers this call instead of the store: the store is known to be
   * failing, and the call is not the probe of this interval.
   */
  private shortCircuited(): boolean {
    const breaker = this.handler.breaker;
    return breaker.isOpen && !breaker.probe();
  }
}

/** A decision as a limit in shadow mode answers it, whether at hand or to come. */
function shadowAnswer(decided: MaybePromise<Decision>): MaybePromise<Decision> {
  return isPending(decided) ? decided.then(shadowOf) : shadowOf(decided);
}
