import type { CalendarQuotaRule } from '../core/quota.js';
import type { TokenBucketRule } from '../core/gcra.js';

/**
 * The rules the shared stores translate today, as one closed type. Transitional: it goes once
 * each algorithm has its own module in each shared store, found by the rule's kind.
 */
export type BuiltInRule = TokenBucketRule | CalendarQuotaRule;
