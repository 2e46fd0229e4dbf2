/**
 * A real store behind a wrapper that counts the takes reaching it and can hold their answers
 * back: what the refusal cache tests measure (round trips saved) and how they put a reset in the
 * middle of a take. The subject under test is the limiter, not the store inside.
 */
import type { Decision } from '../../src/core/decision.js';
import type { Rule } from '../../src/core/rules/rule.js';
import type { RuleBuckets, Store, TakeEntry } from '../../src/stores/contract/store.js';

export class CountingStore implements Store {
  readonly kind: string;
  /** Takes (and peeks) that reached the inner store. */
  takes = 0;
  readonly timeoutMs?: number;
  /** While set, answers wait here until released (the inner store has already decided). */
  private held: (() => void)[] | undefined;

  constructor(private readonly inner: Store) {
    this.kind = inner.kind;
    if (inner.timeoutMs !== undefined) this.timeoutMs = inner.timeoutMs;
  }

  bind(name: string, rule: Rule): RuleBuckets {
    const buckets = this.inner.bind(name, rule);
    return {
      name,
      rule,
      take: (key, cost, now, limit) => {
        this.takes++;
        const answer = buckets.take(key, cost, now, limit);
        const held = this.held;
        if (held === undefined) return answer;
        return answer.then((decision) => new Promise<Decision>((r) => held.push(() => r(decision))));
      },
      reset: (key) => buckets.reset(key),
      adjust: (key, { delta, now, takenAt, until }) => buckets.adjust(key, { delta, now, takenAt, until }),
    };
  }

  unbind(name: string): void {
    this.inner.unbind(name);
  }

  takeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]> {
    return this.inner.takeAll(entries, now);
  }

  /** Holds every answer from now on until {@link release}. */
  hold(): void {
    this.held = [];
  }

  /** Delivers the answers held back, and stops holding. */
  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const deliver of held) deliver();
  }
}
