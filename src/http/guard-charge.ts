/**
 * The charging of a request by a guard's limits, once the key step has answered: the limiters
 * in order (first refusal stops) or a cascade object, then the lease of a concurrency limit, or
 * in delay mode every limit's slot at once. Each bucket is charged once per request.
 */
import type { Decision } from '../core/decision.js';
import type { Duration } from '../core/duration.js';
import type { Cascade, SyncCascade } from '../limiter/cascade.js';
import type { ConcurrencyLimiter, Lease } from '../limiter/concurrency.js';
import { leaseOrRefund } from '../limiter/lease-cascade.js';
import type { Limiter, SyncLimiter, TakeOptions } from '../limiter/limiter.js';
import type { Receipt, ReceiptedDecision } from '../limiter/receipts.js';
import { earlierCharge, rememberCharge } from './charged-once.js';
import { takeDelayed } from './delayed-take.js';
import {
  authModeHeader,
  cascadeId,
  keySpecs,
  keysOf,
  takeOptions,
  type KeyResult,
  type KeySpec,
} from './guard-keys.js';
import type { CountOnly, GuardSettings } from './guard-options.js';
import { clientGone, type GuardOutcome, type GuardOutcomes } from './guard-outcome.js';
import type { HeaderValues } from './headers.js';
import { isSyncLimiter, isThenable } from './maybe-sync.js';
import type { RequestFacts } from './request-facts.js';

/** What the key function returned, or will. */
type KeyAnswer = KeyResult | undefined | Promise<KeyResult | undefined>;

/** One take's answer: its decision, or the decision with its receipt when receipts are kept. */
type Taken = Decision | ReceiptedDecision;

/**
 * Charges the requests of one guard. On synchronous stores (memory), with a key that answers at
 * once, a request is decided without a single promise: the hot path.
 *
 * @example
 * const charge = new GuardCharge(settings, outcomes, refund);
 * return charge.decide(request, key(request), facts);
 */
export class GuardCharge<Request> {
  private readonly limiters: readonly Limiter[] | undefined;
  private readonly cascade: Cascade | undefined;
  private readonly concurrency: ConcurrencyLimiter | undefined;
  /** Keys the key step gives: one per limit, the concurrency limit's included. */
  private readonly count: number;
  private readonly cost: number | ((request: Request) => number);
  private readonly countOnly: CountOnly | undefined;
  private readonly maxWait: Duration | undefined;
  /** Every limit on a synchronous store and no delay mode: a request may be decided at once. */
  private readonly sync: boolean;

  constructor(
    settings: GuardSettings,
    private readonly outcomes: GuardOutcomes,
    private readonly refund: (receipt: Receipt) => void,
  ) {
    const { limiters, cascade, concurrency, maxWait } = settings;
    this.limiters = limiters;
    this.cascade = cascade;
    this.concurrency = concurrency;
    this.count =
      (limiters?.length ?? (cascade as Cascade).limiters.length) + (concurrency === undefined ? 0 : 1);
    this.cost = settings.cost as number | ((request: Request) => number);
    this.countOnly = settings.countOnly;
    this.maxWait = maxWait;
    // A lease is always awaited, so limiters with a concurrency limit never decide at once.
    const syncLimiters = limiters !== undefined && concurrency === undefined && limiters.every(isSyncLimiter);
    const syncCascade = cascade !== undefined && typeof (cascade as SyncCascade).takeSync === 'function';
    this.sync = maxWait === undefined && (syncLimiters || syncCascade);
  }

  /** Decides for a request with what its key function returned: at once when nothing is awaited. */
  decide(request: Request, result: KeyAnswer, facts: RequestFacts): GuardOutcome | Promise<GuardOutcome> {
    const exposed = facts.hasOrigin !== false;
    if (this.maxWait !== undefined) return this.chargeDelayed(request, result, facts.signal, exposed);
    return this.sync && !isThenable(result)
      ? this.charge(request, result, exposed, true)
      : this.chargeLater(request, result, exposed);
  }

  /** The key's answer awaited, then the takes, each awaited in turn (any store). */
  private async chargeLater(request: Request, result: KeyAnswer, exposed: boolean): Promise<GuardOutcome> {
    let answer: KeyResult | undefined;
    try {
      answer = await result;
    } catch (error) {
      return this.outcomes.failed(error, undefined, []);
    }
    return this.charge(request, answer, exposed, false);
  }

  /**
   * Takes from the limits for the key's answer: with `sync`, every take is a synchronous one and
   * the outcome is returned as it is; otherwise a promise of it.
   */
  private charge(
    request: Request,
    result: KeyResult | undefined,
    exposed: boolean,
    sync: boolean,
  ): GuardOutcome | Promise<GuardOutcome> {
    const decisions: Decision[] = [];
    const receipts: Receipt[] | undefined = this.countOnly === undefined ? undefined : [];
    // With a concurrency limit every rate take keeps its receipt, to be refunded if the lease is refused.
    const taken = this.concurrency === undefined ? receipts : (receipts ?? []);
    let extra: HeaderValues | undefined;
    try {
      const specs = keySpecs(result, this.count);
      extra = authModeHeader(specs[0]!);
      const units = this.unitsOf(request);
      const pending =
        this.cascade !== undefined
          ? this.takeCascade(request, specs, units, decisions, sync)
          : this.takeLimiters(request, specs, units, decisions, taken, sync, 0);
      if (this.concurrency !== undefined) {
        const lease = this.leaseAfter(pending, specs[this.count - 1]!.key, decisions, taken!);
        return this.concludeLater(lease, decisions, extra, receipts, exposed);
      }
      if (pending === undefined) return this.outcomes.concluded(decisions, extra, receipts, exposed);
      return this.concludeLater(pending, decisions, extra, receipts, exposed);
    } catch (error) {
      return this.outcomes.failed(error, extra, decisions);
    }
  }

  /**
   * Takes from the limiters in order from `from` into `decisions` (and their receipts into
   * `receipts` when given); the first refusal stops, and a bucket this request was charged by
   * already is not charged again. It goes on synchronously while every take answers at once
   * (each does with `sync`) and hands the rest over as a promise at the first that does not.
   */
  private takeLimiters(
    request: Request,
    specs: readonly KeySpec[],
    units: number,
    decisions: Decision[],
    receipts: Receipt[] | undefined,
    sync: boolean,
    from: number,
  ): Promise<undefined> | undefined {
    const limiters = this.limiters!;
    for (let i = from; i < limiters.length; i++) {
      const limiter = limiters[i]!;
      const spec = specs[i]!;
      let decision = earlierCharge(request, limiter, spec.key) as Decision | undefined;
      if (decision === undefined) {
        const answer = takeFrom(limiter, spec.key, takeOptions(units, spec), receipts !== undefined, sync);
        if (isThenable(answer)) {
          return answer.then((later) => {
            const decided = charged(request, limiter, spec.key, later, receipts);
            decisions.push(decided);
            if (!decided.allowed) return undefined;
            return this.takeLimiters(request, specs, units, decisions, receipts, sync, i + 1);
          });
        }
        decision = charged(request, limiter, spec.key, answer, receipts);
      }
      decisions.push(decision);
      if (!decision.allowed) break;
    }
    return undefined;
  }

  /** Takes from a cascade object, all its limits in one call (unless this request was charged). */
  private takeCascade(
    request: Request,
    specs: readonly KeySpec[],
    units: number,
    decisions: Decision[],
    sync: boolean,
  ): Promise<undefined> | undefined {
    const cascade = this.cascade!;
    const keys = keysOf(specs);
    const id = cascadeId(keys);
    const earlier = earlierCharge(request, cascade, id) as readonly Decision[] | undefined;
    if (earlier !== undefined) {
      decisions.push(...earlier);
      return undefined;
    }
    const answer = sync
      ? (cascade as SyncCascade).takeSync(keys, { cost: units })
      : cascade.take(keys, { cost: units });
    if (isThenable(answer)) {
      return answer.then((later) => {
        rememberCharge(request, cascade, id, later.decisions);
        decisions.push(...later.decisions);
        return undefined;
      });
    }
    rememberCharge(request, cascade, id, answer.decisions);
    decisions.push(...answer.decisions);
    return undefined;
  }

  /** Once every rate take is done and admitted, the concurrency limit's lease (or a refusal). */
  private async leaseAfter(
    pending: Promise<undefined> | undefined,
    key: string,
    decisions: Decision[],
    taken: readonly Receipt[],
  ): Promise<Lease | undefined> {
    await pending;
    if (decisions.some((d) => !d.allowed)) return undefined;
    const answer = await leaseOrRefund(this.concurrency!, key, taken, this.refund);
    decisions.push(answer.decision);
    return answer.lease;
  }

  /** The outcome once the takes still to come are done; a failure among them is a problem response. */
  private async concludeLater(
    pending: Promise<Lease | undefined>,
    decisions: Decision[],
    extra: HeaderValues | undefined,
    receipts: readonly Receipt[] | undefined,
    exposed: boolean,
  ): Promise<GuardOutcome> {
    try {
      const lease = await pending;
      return this.outcomes.concluded(decisions, extra, receipts, exposed, lease);
    } catch (error) {
      return this.outcomes.failed(error, extra, decisions);
    }
  }

  /**
   * Delay mode: every limit reserves its slot, the request waits for the latest (see
   * delayed-take.ts); a client that left is answered 499, which nobody reads.
   */
  private async chargeDelayed(
    request: Request,
    result: KeyAnswer,
    signal: AbortSignal | undefined,
    exposed: boolean,
  ): Promise<GuardOutcome> {
    let extra: HeaderValues | undefined;
    try {
      const specs = keySpecs(await result, this.count);
      extra = authModeHeader(specs[0]!);
      const units = this.unitsOf(request);
      // A peek reserves nothing: it is asked like any other take.
      if (units === 0) return this.charge(request, specs, exposed, false);
      const calls = this.limiters!.map((limiter, i) => {
        const spec = specs[i]!;
        const key = spec.key;
        return {
          limiter,
          key,
          options: takeOptions(units, spec),
          earlier: earlierCharge(request, limiter, key) as Decision | undefined,
        };
      });
      const taken = await takeDelayed(calls, units, this.maxWait!, signal);
      if (taken.gone) return clientGone;
      calls.forEach((call, i) => {
        const decision = taken.decisions[i];
        if (decision?.allowed === true && call.earlier === undefined)
          rememberCharge(request, call.limiter, call.key, decision);
      });
      const receipts = this.countOnly === undefined ? undefined : taken.receipts;
      return this.outcomes.concluded(taken.decisions, extra, receipts, exposed);
    } catch (error) {
      return this.outcomes.failed(error, extra, []);
    }
  }

  private unitsOf(request: Request): number {
    const cost = this.cost;
    return typeof cost === 'function' ? cost(request) : cost;
  }
}

/** One take of a limiter, with its receipt when `withReceipt`: synchronous with `sync`. */
function takeFrom(
  limiter: Limiter,
  key: string,
  options: TakeOptions | undefined,
  withReceipt: boolean,
  sync: boolean,
): Taken | Promise<Taken> {
  if (sync) {
    const syncLimiter = limiter as SyncLimiter;
    return withReceipt ? syncLimiter.takeWithReceiptSync(key, options) : syncLimiter.takeSync(key, options);
  }
  return withReceipt ? limiter.takeWithReceipt(key, options) : limiter.take(key, options);
}

/** A take's decision, with its receipt kept (when receipts are) and the charge remembered. */
function charged(
  request: unknown,
  limiter: Limiter,
  key: string,
  taken: Taken,
  receipts: Receipt[] | undefined,
): Decision {
  let decision: Decision;
  if (receipts === undefined) decision = taken as Decision;
  else {
    const receipted = taken as ReceiptedDecision;
    decision = receipted.decision;
    if (receipted.receipt !== undefined) receipts.push(receipted.receipt);
  }
  rememberCharge(request, limiter, key, decision);
  return decision;
}
