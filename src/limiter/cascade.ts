import type { Decision } from '../core/decision.js';
import { SluiceError, configError, optionError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import { isSyncStore, type SyncStore, type TakeEntry } from '../stores/contract/store.js';
import { checkKey, costOf, readClock } from './call-input.js';
import { reportTake } from './decision-report.js';
import { withDeadline } from '../stores/shared/deadline.js';
import type { Limiter, SyncLimiter } from './limiter.js';
import {
  assertOpen,
  decideOnFailure,
  isLimiterInternals,
  storeAnswered,
  refusedForGood,
  type LimiterInternals,
} from './limiter-internals.js';

/**
 * How a cascade charges its limits.
 * - `first-refusal`: in order, wide to narrow; the first refusal stops the chain and the limits
 *   after it are not charged. Limits before it keep their charge.
 * - `all-or-nothing`: every limit is charged only if all admit, atomically in one store call.
 */
export type CascadeMode = 'first-refusal' | 'all-or-nothing';

/** Options of {@link createCascade}. */
export interface CascadeOptions {
  /** @default "first-refusal" */
  mode?: CascadeMode;
}

/** The outcome of a cascade. */
export interface CascadeDecision {
  /** True when every limit admitted (and was charged). */
  readonly allowed: boolean;
  /**
   * The decisions made, in cascade order. With `first-refusal`, limits after the first refusal
   * were not asked and are missing. With `all-or-nothing`, all are present; on a refusal none
   * was charged, and each limit that did not refuse is reported as what it holds, charging
   * nothing: a peek's decision (`allowed: true`, `cost: 0`, `remaining` what the bucket holds),
   * read from the store in a second call that charges nothing. A limit the store could not be
   * read for then (it failed, or a concurrent take emptied the bucket meanwhile) is left out.
   *
   * In both modes, a cost larger than some limit can ever admit (its burst or quota) is refused
   * before any store is asked and nothing is charged: `decisions` then holds only the refusals
   * of those limits (`retryAfterMs` Infinity).
   */
  readonly decisions: readonly Decision[];
  /** Names of the limits that refused (empty when allowed). */
  readonly refusedBy: readonly string[];
  /**
   * The decision that speaks for the cascade, e.g. in headers: the first refusal, or when all
   * admitted the one with the fewest units remaining.
   */
  readonly decisive: Decision;
}

/** Keys for a cascade's take: one key for every limit, or one per limit in cascade order. */
export type CascadeKeys = string | readonly string[];

/** Ordered limits charged together. */
export interface Cascade {
  readonly mode: CascadeMode;
  readonly limiters: readonly Limiter[];
  /**
   * Takes `cost` (default 1, a whole number from 0 to `MAX_COUNT`) from every limit; see
   * {@link CascadeMode}. A closed limit makes it reject with `SLUICE_CONFIG`.
   */
  take(keys: CascadeKeys, options?: { cost?: number }): Promise<CascadeDecision>;
}

/** A cascade whose limits are all on synchronous stores. */
export interface SyncCascade extends Cascade {
  readonly limiters: readonly SyncLimiter[];
  /** Synchronous {@link Cascade.take}. */
  takeSync(keys: CascadeKeys, options?: { cost?: number }): CascadeDecision;
}

const cascadeKeys = ['mode'] as const;

/**
 * Ordered limits, from wide to narrow, each keeping its own counter even when keys are equal.
 *
 * A cascade owns nothing: its limiters are yours and may serve elsewhere too, so a cascade has
 * no `close()`. Close the limiters themselves when done; a cascade holding a closed limiter
 * rejects its takes with `SLUICE_CONFIG`. Each limiter may appear once (the same bucket charged
 * twice in one take would be either a silent double charge or a silent single one).
 *
 * @example
 * const loginLimits = createCascade([perIp, perIpAndNick]);
 * const d = await loginLimits.take([ipKey, ipNickKey]);
 * if (!d.allowed) console.log(`refused by ${d.refusedBy.join(', ')}`);
 */
export function createCascade(limiters: readonly SyncLimiter[], options?: CascadeOptions): SyncCascade;
export function createCascade(limiters: readonly Limiter[], options?: CascadeOptions): Cascade;
export function createCascade(limiters: readonly Limiter[], options: CascadeOptions = {}): Cascade {
  checkOptionKeys('createCascade', options, cascadeKeys);
  const { mode = 'first-refusal' } = options;
  if (mode !== 'first-refusal' && mode !== 'all-or-nothing') {
    throw configError('createCascade mode', '"first-refusal" or "all-or-nothing"', mode);
  }
  if (!Array.isArray(limiters) || limiters.length === 0) {
    throw configError('createCascade limiters', 'a non-empty array of limiters', limiters);
  }
  const names = new Set<string>();
  for (const limiter of limiters) {
    if (!isLimiterInternals(limiter)) {
      throw configError('createCascade limiters', 'limiters made by createLimiter()', limiter);
    }
    if (limiter.closed) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `createCascade: limiter ${JSON.stringify(limiter.name)} is closed`,
      );
    }
    if (names.has(limiter.name)) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `createCascade: limit ${JSON.stringify(limiter.name)} appears twice`,
      );
    }
    names.add(limiter.name);
  }
  const store = limiters[0]!.store;
  if (mode === 'all-or-nothing' && limiters.some((l) => l.mode === 'shadow')) {
    throw optionError(
      'createCascade limiters',
      'limits that enforce in an all-or-nothing cascade: a limit in shadow mode cannot veto the group (use first-refusal)',
    );
  }
  if (mode === 'all-or-nothing' && limiters.some((l) => l.store !== store)) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      'an all-or-nothing cascade needs all its limits on one store, so one atomic call can charge them',
    );
  }
  const sync = limiters.every((l) => isSyncStore(l.store));
  return sync
    ? new SyncCascadeImpl(mode, limiters as readonly SyncLimiter[])
    : new CascadeImpl(mode, limiters);
}

class CascadeImpl implements Cascade {
  constructor(
    readonly mode: CascadeMode,
    readonly limiters: readonly Limiter[],
  ) {}

  async take(keys: CascadeKeys, options?: { cost?: number }): Promise<CascadeDecision> {
    const cost = costOf(options?.cost);
    const list = this.keyList(keys);
    const refused = this.refusedForGood(cost, list);
    if (refused !== undefined) return refused;
    if (this.mode === 'all-or-nothing') return this.takeAllOrNothing(list, cost);
    const decisions: Decision[] = [];
    for (let i = 0; i < this.limiters.length; i++) {
      const decision = await this.limiters[i]!.take(list[i]!, { cost });
      decisions.push(decision);
      if (!decision.allowed) break;
    }
    return summarize(decisions);
  }

  /**
   * One atomic store call for all limits. When the store fails, each limit's own failure policy
   * decides in cascade order (first refusal stops); a `closed` limit makes the whole take throw.
   */
  private async takeAllOrNothing(keys: readonly string[], cost: number): Promise<CascadeDecision> {
    const first = this.limiters[0]!;
    const now = readClock(first.clock);
    const started = performance.now();
    let decisions: Decision[];
    try {
      const pending = first.store.takeAll(this.entries(keys, cost), now);
      decisions = await withDeadline(pending, first.timeoutMs, `the ${first.store.kind} store (cascade)`);
      for (const limiter of this.limiters) (limiter as LimiterInternals)[storeAnswered]();
      const held = this.heldEntries(keys, decisions);
      if (held !== undefined) {
        let peeks: readonly Decision[] | undefined;
        try {
          peeks = await withDeadline(
            first.store.takeAll(held, now),
            first.timeoutMs,
            `the ${first.store.kind} store (cascade)`,
          );
        } catch {
          // What the other limits hold is unknown: the refusal stands without them.
        }
        decisions = asHeld(decisions, peeks);
      }
    } catch (error) {
      decisions = [];
      for (let i = 0; i < this.limiters.length; i++) {
        const limiter = this.limiters[i] as LimiterInternals;
        let decision: Decision;
        try {
          decision = limiter[decideOnFailure](error, { key: keys[i]!, cost, now, limit: undefined });
        } catch (closed) {
          if (limiter.events.listening) {
            reportTake(limiter, keys[i]!, cost, undefined, closed, performance.now() - started);
          }
          throw closed;
        }
        decisions.push(decision);
        if (!decision.allowed) break;
      }
    }
    this.report(keys, cost, decisions, performance.now() - started);
    return summarize(decisions);
  }

  /**
   * Reports the decisions of an all-or-nothing take, which the limiters did not make themselves
   * (one atomic store call made them): each to its own limiter's events.
   */
  protected report(
    keys: readonly string[],
    cost: number,
    decisions: readonly Decision[],
    latencyMs: number,
  ): void {
    // When one limit refuses, nothing is charged: the limits that would have admitted did not
    // admit this request, so only the refusals are reported.
    const refused = decisions.some((d) => !d.allowed);
    for (let i = 0; i < decisions.length; i++) {
      const limiter = this.limiters[i] as LimiterInternals;
      if (refused && decisions[i]!.allowed) continue;
      if (limiter.events.listening) reportTake(limiter, keys[i]!, cost, decisions[i], undefined, latencyMs);
    }
  }

  /**
   * When `cost` is more than some limit can ever admit, the cascade's refusal, decided purely:
   * no store is asked and no limit is charged (not even the wide ones before it). Also checks
   * that no limiter was closed, since an all-or-nothing take bypasses the limiters' own checks.
   */
  protected refusedForGood(cost: number, keys: readonly string[]): CascadeDecision | undefined {
    let beyond = false;
    for (const limiter of this.limiters) {
      assertOpen(limiter);
      if (cost > limiter.rule.capacityFor(undefined)) beyond = true;
    }
    if (!beyond) return undefined;
    const decisions: Decision[] = [];
    for (let i = 0; i < this.limiters.length; i++) {
      const limiter = this.limiters[i] as LimiterInternals;
      if (cost > limiter.rule.capacityFor(undefined)) {
        const refused = refusedForGood(limiter.rule, limiter.name, cost, readClock(limiter.clock), undefined);
        decisions.push(refused);
        if (limiter.events.listening) reportTake(limiter, keys[i]!, cost, refused, undefined, 0);
      }
    }
    return summarize(decisions);
  }

  protected keyList(keys: CascadeKeys): readonly string[] {
    if (typeof keys === 'string' || !Array.isArray(keys)) {
      checkKey(keys);
      return this.limiters.map(() => keys as string);
    }
    if (keys.length !== this.limiters.length) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        `cascade of ${this.limiters.length} limits got ${keys.length} keys; pass one key or one per limit`,
      );
    }
    for (const key of keys) checkKey(key);
    return keys;
  }

  /**
   * After a refused all-or-nothing take, the entries to read (cost 0) for the limits that did
   * not refuse, which the store reported as the take would have left them; undefined when there
   * are none or nothing was refused.
   */
  protected heldEntries(keys: readonly string[], decisions: readonly Decision[]): TakeEntry[] | undefined {
    if (decisions.every((d) => d.allowed) || decisions.every((d) => !d.allowed)) return undefined;
    const entries: TakeEntry[] = [];
    for (let i = 0; i < decisions.length; i++)
      if (decisions[i]!.allowed)
        entries.push({ buckets: this.limiters[i]!.buckets, key: keys[i]!, cost: 0, limit: undefined });
    return entries;
  }

  protected entries(keys: readonly string[], cost: number): TakeEntry[] {
    return this.limiters.map((limiter, i) => ({
      buckets: limiter.buckets,
      key: keys[i]!,
      cost,
      limit: undefined,
    }));
  }
}

class SyncCascadeImpl extends CascadeImpl implements SyncCascade {
  declare readonly limiters: readonly SyncLimiter[];

  takeSync(keys: CascadeKeys, options?: { cost?: number }): CascadeDecision {
    const cost = costOf(options?.cost);
    const list = this.keyList(keys);
    const refused = this.refusedForGood(cost, list);
    if (refused !== undefined) return refused;
    if (this.mode === 'all-or-nothing') {
      const store = this.limiters[0]!.store as SyncStore;
      const started = performance.now();
      const now = readClock(this.limiters[0]!.clock);
      let decisions = store.takeAllSync(this.entries(list, cost), now);
      const held = this.heldEntries(list, decisions);
      if (held !== undefined) decisions = asHeld(decisions, store.takeAllSync(held, now));
      this.report(list, cost, decisions, performance.now() - started);
      return summarize(decisions);
    }
    const decisions: Decision[] = [];
    for (let i = 0; i < this.limiters.length; i++) {
      const decision = this.limiters[i]!.takeSync(list[i]!, { cost });
      decisions.push(decision);
      if (!decision.allowed) break;
    }
    return summarize(decisions);
  }
}

/**
 * A refused all-or-nothing take's decisions told truthfully: the refusals as the store made
 * them, and in place of each limit that would have admitted (and was not charged) its peek, in
 * `peeks` in the same order. A peek that is itself a refusal (a concurrent take emptied the
 * bucket between the two calls) is left out rather than reported as a refusal of this take, and
 * so is every such limit when the peeks could not be read.
 */
function asHeld(decisions: readonly Decision[], peeks: readonly Decision[] | undefined): Decision[] {
  const told: Decision[] = [];
  let next = 0;
  for (const decision of decisions) {
    if (!decision.allowed) {
      told.push(decision);
      continue;
    }
    const peek = peeks?.[next++];
    if (peek?.allowed === true) told.push(peek);
  }
  return told;
}

function summarize(decisions: readonly Decision[]): CascadeDecision {
  const refusedBy: string[] = [];
  let decisive: Decision | undefined;
  for (const decision of decisions) {
    if (!decision.allowed) {
      refusedBy.push(decision.name);
      decisive ??= decision;
    }
  }
  if (decisive === undefined) {
    for (const decision of decisions) {
      if (decisive === undefined || decision.remaining < decisive.remaining) decisive = decision;
    }
  }
  return { allowed: refusedBy.length === 0, decisions, refusedBy, decisive: decisive as Decision };
}
