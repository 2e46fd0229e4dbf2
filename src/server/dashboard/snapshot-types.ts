/**
 * What the dashboard's feed sends, once a second: the page and `sluice top` read these shapes.
 * Every value is a count, a time, a name from the policy or a pseudonymous bucket id.
 */
import type { DecisionOutcome } from '../../limiter/events.js';

export type { DecisionOutcome };

export type OutcomeCounts = Partial<Record<DecisionOutcome, number>>;

/** One of the heaviest ids of a limit: estimated count, and how much it may be over. */
export interface OffenderView {
  readonly id: string;
  readonly count: number;
  readonly error: number;
}

export interface LimitView {
  readonly name: string;
  /** The limit as written: `10 per 1m (token-bucket)`. */
  readonly text: string;
  readonly perSecond: OutcomeCounts;
  readonly total: OutcomeCounts;
  /** Heaviest refused ids, and those a shadow rule would have refused. */
  readonly refused: readonly OffenderView[];
  readonly shadow: readonly OffenderView[];
}

export interface RuleView {
  readonly name: string;
  readonly mode: 'enforce' | 'shadow' | 'delay';
  readonly key: readonly string[];
  /** Whether a limit of the rule locks a key out (`block`): its buckets can be unblocked. */
  readonly lockout: boolean;
  /** Decisions of its limits (and its allow and deny lists), per second over the last tick. */
  readonly perSecond: OutcomeCounts;
  /** The same since the server started. */
  readonly total: OutcomeCounts;
  /** refused / (admitted + refused) over the last minute; null without decisions. */
  readonly refusalRatio: number | null;
  /** Failure-policy activations since the start: the store failed and the policy decided. */
  readonly failures: { readonly open: number; readonly closed: number; readonly insurance: number };
  readonly limits: readonly LimitView[];
}

/** One sampled refusal. */
export interface RefusalView {
  /** Unix time, ms. */
  readonly at: number;
  readonly rule: string;
  readonly limit: string;
  readonly outcome: 'refused' | 'shadow-refused';
  /** The bucket's pseudonymous id. */
  readonly id: string;
  /** null when the cost can never be admitted. */
  readonly retryAfterMs: number | null;
}

export interface Snapshot {
  /** Unix time, ms. */
  readonly at: number;
  readonly policy: {
    /** A hash of the policy's normalized form (as in /metrics). */
    readonly hash: string;
    readonly store: string;
    /** When it was loaded, Unix time ms. */
    readonly loadedAt: number | null;
    /** How bucket ids are made: the key's HMAC under the secret, or a fingerprint. */
    readonly ids: 'hmac' | 'fingerprint';
    readonly upstream: boolean;
    readonly reload: { readonly result: 'applied' | 'rejected'; readonly at: number } | null;
  };
  readonly rules: readonly RuleView[];
  /** All rules together, per second over the last tick. */
  readonly perSecond: OutcomeCounts;
  readonly refusalRatio: number | null;
  /** Store latency over the last ten seconds, by the store's own histogram; null without samples. */
  readonly latency: {
    readonly p50Ms: number | null;
    readonly p99Ms: number | null;
    readonly samples: number;
  };
  readonly recent: readonly RefusalView[];
}

/** One point of the charts' history. */
export interface Point {
  readonly at: number;
  readonly perSecond: OutcomeCounts;
  /** By rule. */
  readonly rules: Readonly<Record<string, OutcomeCounts>>;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

/** The outcomes in the order the page and `sluice top` show them, with their words. */
export const OUTCOME_LABELS: readonly (readonly [DecisionOutcome, string])[] = [
  ['admitted', 'admitted'],
  ['refused', 'refused'],
  ['shadow-refused', 'shadow would refuse'],
  ['failed-open', 'failed open'],
  ['failed-closed', 'failed closed'],
  ['insurance', 'insurance'],
  ['allowed-by-list', 'allowed by list'],
  ['denied', 'denied by list'],
];
