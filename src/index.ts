/**
 * sluice: rate limiting for HTTP APIs. The main entry holds the pure core, the limiter, the
 * memory store and the Store contract; it needs no optional dependency.
 */
export { tokenBucket, TokenBucketRule, type TokenBucketOptions } from './core/gcra.js';
export { calendarQuota, CalendarQuotaRule, type CalendarQuotaOptions } from './core/quota.js';
export type { Rule } from './core/rule.js';
export type { BucketState } from './core/state.js';
export type { Decision, AllowedDecision, RefusedDecision } from './core/decision.js';
export { parseDuration, type Duration, type DurationUnit } from './core/duration.js';
export { systemClock, manualClock, type Clock, type ManualClock } from './core/clock.js';
export { SluiceError, isSluiceError, errorCodes, type SluiceErrorCode } from './core/errors.js';
export type { Store, SyncStore, RuleBuckets, SyncRuleBuckets, TakeEntry } from './store.js';
export { isSyncStore } from './store.js';
export {
  MemoryStore,
  MemoryRuleBuckets,
  MAX_RAW_KEY_LENGTH,
  type MemoryStoreOptions,
} from './stores/memory.js';
export {
  createLimiter,
  type Limiter,
  type SyncLimiter,
  type LimiterOptions,
  type TakeOptions,
} from './limiter/limiter.js';
export {
  createCascade,
  type Cascade,
  type SyncCascade,
  type CascadeDecision,
  type CascadeMode,
  type CascadeOptions,
  type CascadeKeys,
} from './limiter/cascade.js';
