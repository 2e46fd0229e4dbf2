/**
 * sluice: rate limiting for HTTP APIs. The main entry holds the pure core, the limiter, the
 * memory store and the Store contract; it needs no optional dependency.
 *
 * @module sluice
 */
export { tokenBucket, TokenBucketRule, type TokenBucketOptions } from './core/rules/token-bucket.js';
export { calendarQuota, CalendarQuotaRule, type CalendarQuotaOptions } from './core/rules/calendar-quota.js';
export type { CalendarUnit, IsoWeekday } from './core/calendar.js';
export {
  fixedWindow,
  FixedWindowRule,
  ENVOY_UNIT_WINDOWS,
  type FixedWindowOptions,
} from './core/rules/fixed-window.js';
export { slidingWindow, SlidingWindowRule, type SlidingWindowOptions } from './core/rules/sliding-window.js';
export {
  anchoredWindow,
  AnchoredWindowRule,
  type AnchoredWindowOptions,
} from './core/rules/anchored-window.js';
export type {
  Rule,
  RuleAdjustment,
  RuleReservation,
  RuleTake,
  BucketTier,
  CallLimit,
} from './core/rules/rule.js';
export { MAX_BLOCK_FACTOR, MAX_BLOCK_MS, type BlockOptions, type BlockPolicy } from './core/rules/lockout.js';
export type { BucketState } from './core/state.js';
export type { Decision, AllowedDecision, RefusedDecision, DecisionSource } from './core/decision.js';
export { parseDuration, parseTimerDuration, type Duration, type DurationUnit } from './core/duration.js';
export { MAX_COUNT, MAX_PENALTY_COUNT, MAX_TOKEN_RATE, MAX_TIMER_MS } from './core/bounds.js';
export { systemClock, manualClock, type Clock, type ManualClock } from './core/clock.js';
export { SluiceError, isSluiceError, errorCodes, type SluiceErrorCode } from './core/errors.js';
export type {
  Store,
  SyncStore,
  RuleBuckets,
  SyncRuleBuckets,
  TakeEntry,
  BucketAdjustment,
} from './stores/contract/store.js';
export { assertDistinctEntries, isSyncStore } from './stores/contract/store.js';
export type { BucketSteps, MaybePromise } from './stores/contract/bucket-steps.js';
export { MemoryStore, type MemoryStoreOptions } from './stores/memory/store.js';
export { MemoryRuleBuckets } from './stores/memory/rule-buckets.js';
export { MAX_RAW_KEY_LENGTH } from './stores/shared/bucket-id.js';
export {
  createLimiter,
  type Limiter,
  type SyncLimiter,
  type LimiterOptions,
  type TakeOptions,
  type LimiterMode,
} from './limiter/limiter.js';
export type { RefusalCacheOptions } from './limiter/refusal-cache.js';
export {
  concurrencyLimit,
  type ConcurrencyLimiter,
  type ConcurrencyLimitOptions,
  type LeaseDecision,
  type Lease,
} from './limiter/concurrency.js';
export { acquireAfter, type RateStep, type CascadeLease } from './limiter/lease-cascade.js';
export {
  isLeaseStore,
  checkLeaseId,
  MAX_LEASES,
  type LeaseStore,
  type LeaseBuckets,
  type LeaseGrant,
} from './stores/contract/lease-store.js';
export type { Receipt, ReceiptedDecision } from './limiter/receipts.js';
export type { WaitOptions, WaitedDecision } from './limiter/wait-for-slot.js';
export { MAX_WAIT_MS, reserverOf, type Reserver } from './core/reservation.js';
export type { FailurePolicy, LimiterStats, Logger } from './limiter/failure.js';
export {
  breakerDefaults,
  type BreakerOptions,
  type BreakerState,
  type StoreHealth,
} from './limiter/breaker.js';
export {
  createCascade,
  type Cascade,
  type SyncCascade,
  type CascadeDecision,
  type CascadeMode,
  type CascadeOptions,
  type CascadeKeys,
} from './limiter/cascade.js';
export {
  clientAddress,
  createClientAddress,
  type ClientAddressFunction,
  type ClientAddressInput,
  type ClientAddressOptions,
  type ClientAddressResult,
  type ClientAddressSource,
  type ProxyHeader,
} from './keys/client-address.js';
export { LOOPBACK } from './keys/cidr-set.js';
export type { HeadersLike } from './keys/headers.js';
export { ipKey, createIpKey, type IpKeyFunction, type IpKeyOptions } from './keys/ip-prefix.js';
export { IPV4_EMBEDDING_PREFIXES } from './keys/ipv4-embedded.js';
export { normalizeLogin, MAX_LOGIN_LENGTH } from './keys/normalize.js';
export { compositeKey } from './keys/composite-key.js';
export {
  pseudonymousKey,
  pseudonymousKeyAsync,
  createPseudonymRing,
  MIN_SECRET_BYTES,
  type PseudonymRing,
  type PseudonymRingOptions,
  type PseudonymSecret,
  type PseudonymousKeyOptions,
  type SubjectId,
} from './keys/pseudonym.js';
export {
  resolveIdentity,
  type ApiKeyGrant,
  type AuthMode,
  type IdentityGranted,
  type IdentityReason,
  type IdentityResolvers,
  type IdentityResult,
  type IdentityUnauthorized,
  type SessionInfo,
  type UnauthorizedReason,
} from './keys/identity.js';
export {
  DecisionEvents,
  DECISION_OUTCOMES,
  type DecisionEvent,
  type DecisionEventsOptions,
  type DecisionListener,
  type StoreHealthEvent,
  type StoreHealthListener,
  type DecisionOutcome,
} from './limiter/events.js';
