import type { Attributes } from '@opentelemetry/api';
import { DECISION_OUTCOMES, type DecisionOutcome } from '../limiter/events.js';

/**
 * The attribute value for a rule or a store an event does not have: the guard's own outcomes
 * (allow and deny lists, skip) run no rule and ask no store. A constant, so that those outcomes
 * still form one series per outcome.
 */
export const ABSENT_ATTRIBUTE = '-';

/** The attribute sets of one rule on one store: one per outcome, and one without an outcome. */
interface RuleStoreAttributes {
  readonly byOutcome: ReadonlyMap<DecisionOutcome, Attributes>;
  readonly ruleAndStore: Attributes;
}

/**
 * The attribute sets metrics are recorded with, made once per rule, store and outcome and reused:
 * an event then costs two map lookups rather than a new object. Only the rule's name, the
 * store's kind and the outcome ever become attributes (configuration and a closed set): never
 * the key nor its pseudonym, which would make one series per client.
 */
export class MetricAttributes {
  private readonly byRule = new Map<string, Map<string, RuleStoreAttributes>>();

  /** `{ rule, outcome, store }`, for the count of decisions. */
  decision(rule: string | undefined, store: string | undefined, outcome: DecisionOutcome): Attributes {
    const sets = this.of(rule ?? ABSENT_ATTRIBUTE, store ?? ABSENT_ATTRIBUTE);
    // An outcome outside the known set (from a newer emitter) still gets a series of its own.
    return sets.byOutcome.get(outcome) ?? Object.freeze({ ...sets.ruleAndStore, outcome });
  }

  /** `{ rule, store }`, for units charged and store latency. */
  ruleAndStore(rule: string | undefined, store: string | undefined): Attributes {
    return this.of(rule ?? ABSENT_ATTRIBUTE, store ?? ABSENT_ATTRIBUTE).ruleAndStore;
  }

  private of(rule: string, store: string): RuleStoreAttributes {
    let byStore = this.byRule.get(rule);
    if (byStore === undefined) {
      byStore = new Map();
      this.byRule.set(rule, byStore);
    }
    let sets = byStore.get(store);
    if (sets === undefined) {
      const ruleAndStore = Object.freeze({ rule, store });
      const byOutcome = new Map<DecisionOutcome, Attributes>();
      for (const outcome of DECISION_OUTCOMES)
        byOutcome.set(outcome, Object.freeze({ rule, outcome, store }));
      sets = { byOutcome, ruleAndStore };
      byStore.set(store, sets);
    }
    return sets;
  }
}
