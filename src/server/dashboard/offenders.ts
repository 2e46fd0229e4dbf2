import type { DecisionEvent, DecisionListener, DecisionOutcome } from '../../limiter/events.js';
import type { RefusalView } from './snapshot-types.js';
import { SpaceSaving, type HeavyHitter } from '../shared/space-saving.js';

/** The outcomes whose keys the dashboard follows: the only events that carry a key's id. */
export const TRACKED_OUTCOMES: readonly DecisionOutcome[] = ['refused', 'shadow-refused'];

/** Ids held per limit and outcome: memory fixed whatever the traffic. */
const HEAVY_HITTERS = 64;
/** Recent refusals kept, and how many a second are sampled into them at most. */
const RECENT = 50;
const SAMPLED_PER_TICK = 5;

/** One sampled refusal, by the bucket's pseudonymous id. */
export type Refusal = RefusalView;

/** A limit's heaviest refused and shadow-refused ids. */
export interface LimitOffenders {
  readonly limit: string;
  readonly refused: HeavyHitter[];
  readonly shadow: HeavyHitter[];
}

interface Sketches {
  refused: SpaceSaving;
  shadow: SpaceSaving;
}

/**
 * Who is refused, by pseudonymous bucket id only: a Space-Saving summary per limit and outcome,
 * and a ring of recent refusals sampled at a few a second. Fed by the rules' decision channels,
 * whose events carry a key's id for refusals only (so an admitted request costs one comparison
 * here). Its memory is fixed by the policy's limits, never by the number of clients.
 */
export class Offenders {
  /** By rule, then by limit. */
  private readonly sketches = new Map<string, Map<string, Sketches>>();
  private readonly recent: (Refusal | undefined)[] = new Array<Refusal | undefined>(RECENT);
  private next = 0;
  private sampled = 0;

  /** The listener of a rule's channel. */
  listener(rule: string): DecisionListener {
    return (event) => {
      if (event.keyHash !== undefined) this.record(rule, event, event.keyHash);
    };
  }

  /** Opens the next second's sample of recent refusals. */
  tick(): void {
    this.sampled = 0;
  }

  /** A rule's limits with their heaviest ids, `n` each at most. */
  of(rule: string, n: number): LimitOffenders[] {
    const limits = this.sketches.get(rule);
    if (limits === undefined) return [];
    return [...limits].map(([limit, s]) => ({ limit, refused: s.refused.top(n), shadow: s.shadow.top(n) }));
  }

  /** The sampled refusals, newest first. */
  latest(): Refusal[] {
    const found: Refusal[] = [];
    for (let i = 1; i <= RECENT; i++) {
      const refusal = this.recent[(this.next - i + RECENT) % RECENT];
      if (refusal !== undefined) found.push(refusal);
    }
    return found;
  }

  private record(rule: string, event: DecisionEvent, id: string): void {
    const limit = event.rule ?? rule;
    const sketch = this.sketchOf(rule, limit);
    const outcome = event.outcome === 'shadow-refused' ? 'shadow-refused' : 'refused';
    (outcome === 'refused' ? sketch.refused : sketch.shadow).offer(id);
    if (this.sampled >= SAMPLED_PER_TICK) return;
    this.sampled++;
    this.recent[this.next] = {
      at: Date.now(),
      rule,
      limit,
      outcome,
      id,
      retryAfterMs: Number.isFinite(event.retryAfterMs) ? event.retryAfterMs : null,
    };
    this.next = (this.next + 1) % RECENT;
  }

  private sketchOf(rule: string, limit: string): Sketches {
    let limits = this.sketches.get(rule);
    if (limits === undefined) this.sketches.set(rule, (limits = new Map()));
    let sketch = limits.get(limit);
    if (sketch === undefined)
      limits.set(
        limit,
        (sketch = { refused: new SpaceSaving(HEAVY_HITTERS), shadow: new SpaceSaving(HEAVY_HITTERS) }),
      );
    return sketch;
  }
}
