/**
 * The options of a route limit, checked once at setup: every option is validated with a
 * `SLUICE_CONFIG` naming it, and every value that becomes a header must be header-safe, so that
 * no request can later fail on a value the application configured.
 */
import type { Clock } from '../core/clock.js';
import { configError, optionError } from '../core/errors.js';
import { parseDuration, type Duration } from '../core/duration.js';
import { MAX_WAIT_MS, reserverOf } from '../core/reservation.js';
import { checkOptionKeys } from '../core/options.js';
import type { Cascade } from '../limiter/cascade.js';
import type { DecisionEvents } from '../limiter/events.js';
import type { Limiter } from '../limiter/limiter.js';
import { isConcurrencyLimiter, type ConcurrencyLimiter } from '../limiter/concurrency.js';
import { AddressList } from './address-list.js';
import { HEADER_STYLES, type HeaderStyle } from './headers.js';
import type { ProblemOptions } from './problem.js';
import { RouteSet, parseMethods } from './routes.js';

/**
 * What a guard reports through `onError` along with the error.
 *
 * @example
 * onError: (error, { failures }) => log.error({ failures }, 'rate limit failing')
 */
export interface ErrorReportDetails {
  /**
   * The failures of this limit since its last report, this one included: a limit reports at
   * most once a minute, so an outage writes one line a minute rather than one per request.
   */
  failures: number;
}

/** The options of a guard as read at setup; `limits` and `key` stay as given. */
export interface GuardSettings {
  limiters: readonly Limiter[] | undefined;
  cascade: Cascade | undefined;
  /** The concurrency limit that ends `limits`, if any: its lease is acquired after the rates. */
  concurrency: ConcurrencyLimiter | undefined;
  cost: number | ((request: never) => number);
  methods: ReadonlySet<string> | undefined;
  excluded: RouteSet | undefined;
  chargePreflight: boolean;
  headers: HeaderStyle;
  problem: ProblemOptions | undefined;
  cacheControl: string;
  onError: (error: unknown, details: ErrorReportDetails) => void;
  /** Clients answered 403 before anything else; undefined for no list. */
  deny: AddressList | undefined;
  /** Clients let through untouched; undefined for no list. */
  allow: AddressList | undefined;
  /** The client address the lists are matched against; set whenever a list is. */
  address: ((request: never) => unknown) | undefined;
  skip: ((request: never) => unknown) | undefined;
  /** Where the guard's own outcomes (lists, skip) are reported. */
  events: DecisionEvents | undefined;
  /** The limits' clock: the once-a-minute reports follow the time the limits see. */
  clock: Clock;
  /** Which responses keep their charge; undefined: every admitted request counts. */
  countOnly: CountOnly | undefined;
  /** With `mode: 'delay'`, the longest a request waits for its slot; undefined: refusals answer 429. */
  maxWait: Duration | undefined;
}

/**
 * Which admitted requests count against the limit once their response is known: `failed`
 * keeps the charge of responses with status 400 and above (and of requests whose connection
 * closed before the response was ended) and refunds the others; `succeeded` keeps the charge
 * of responses below 400 and refunds the rest.
 */
export type CountOnly = 'failed' | 'succeeded';

const optionKeys = [
  'limits',
  'key',
  'cost',
  'methods',
  'exclude',
  'chargePreflight',
  'headers',
  'problem',
  'cacheControl',
  'onError',
  'allow',
  'deny',
  'skip',
  'address',
  'proxies',
  'events',
  'countOnly',
  'mode',
  'maxWait',
] as const;
const problemKeys = ['type', 'title', 'detail'] as const;
/** The header styles as an error message lists them: `"none", "legacy" or "draft"`. */
const styleChoices = HEADER_STYLES.map((style) => JSON.stringify(style))
  .join(', ')
  .replace(/, ([^,]*)$/, ' or $1');
/** A header value an application configures: visible ASCII, spaces and tabs; never CR or LF. */
const headerSafe = /^[\t\x20-\x7e]*$/;
/** Text of a problem body: anything but control characters. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what it refuses
const plainText = /^[^\x00-\x1f\x7f]*$/;
/** A problem type: a URI reference, without spaces. */
const uriReference = /^[\x21-\x7e]+$/;

const defaultOnError = (error: unknown, details: ErrorReportDetails) =>
  console.error(
    `[sluice] rate limiting failed for a request (${details.failures} since the last report)`,
    error,
  );

/**
 * Reads and checks the options of `createGuard`; throws `SLUICE_CONFIG` naming the option.
 *
 * @example
 * readGuardOptions({ limits, key: () => 'k', methods: 'POST' }) // throws: rateLimit methods must be …
 */
export function readGuardOptions(options: unknown): GuardSettings {
  checkOptionKeys('rateLimit', options, optionKeys);
  const given = options as Record<(typeof optionKeys)[number], unknown>;
  const {
    limits,
    key,
    cost = 1,
    chargePreflight = false,
    headers = 'draft',
    problem,
    cacheControl = 'no-store',
    onError = defaultOnError,
  } = given;
  const { rates, concurrency } = splitConcurrency(limits);
  const limiters =
    concurrency !== undefined && Array.isArray(rates) && rates.length === 0 ? [] : toLimiters(rates);
  const cascade = limiters === undefined ? (limits as Cascade) : undefined;
  if (typeof key !== 'function') throw configError('rateLimit key', 'a function of the request', key);
  if (!(typeof cost === 'function' || (Number.isSafeInteger(cost) && (cost as number) >= 0))) {
    throw configError('rateLimit cost', 'a whole number >= 0 or a function', cost);
  }
  if (typeof chargePreflight !== 'boolean')
    throw configError('rateLimit chargePreflight', 'true or false', chargePreflight);
  if (!(HEADER_STYLES as readonly unknown[]).includes(headers))
    throw configError('rateLimit headers', styleChoices, headers);
  if (
    typeof cacheControl !== 'string' ||
    !/\bno-store\b/.test(cacheControl) ||
    !headerSafe.test(cacheControl)
  ) {
    throw configError('rateLimit cacheControl', 'a Cache-Control value with no-store', cacheControl);
  }
  if (typeof onError !== 'function') throw configError('rateLimit onError', 'a function', onError);
  const access = readAccessOptions(given);
  const countOnly = readCountOnly(given.countOnly, limiters);
  const maxWait = readDelay(given.mode, given.maxWait, limiters);
  if (maxWait !== undefined && concurrency !== undefined)
    throw optionError('rateLimit mode', '"refuse" with a concurrency limit (a request waits for no lease)');
  const first = limiters?.[0] ?? cascade?.limiters[0] ?? concurrency;
  return {
    limiters,
    cascade,
    concurrency,
    cost: cost as GuardSettings['cost'],
    methods: parseMethods(given.methods),
    excluded: excludedRoutes(given.exclude),
    chargePreflight,
    headers: headers as HeaderStyle,
    problem: checkProblem(problem),
    cacheControl,
    onError: onError as GuardSettings['onError'],
    ...access,
    clock: typeof first?.clock === 'function' ? first.clock : Date.now,
    countOnly,
    maxWait,
  };
}

/**
 * `mode` and `maxWait`: with `'delay'`, every limit must be able to wait (a token bucket without
 * a lockout, enforced, made by createLimiter), and `maxWait` is required, from "1ms" to "1h".
 */
function readDelay(
  mode: unknown,
  maxWait: unknown,
  limiters: readonly Limiter[] | undefined,
): Duration | undefined {
  if (mode === undefined || mode === 'refuse') {
    if (maxWait !== undefined) throw optionError('rateLimit maxWait', 'left out unless mode is "delay"');
    return undefined;
  }
  if (mode !== 'delay') throw configError('rateLimit mode', '"refuse" or "delay"', mode);
  if (parseDuration(maxWait, 'rateLimit maxWait') > MAX_WAIT_MS)
    throw optionError('rateLimit maxWait', 'a duration of at most "1h"');
  if (limiters === undefined)
    throw optionError(
      'rateLimit mode',
      '"delay" only with a limiter or an array of limiters (a cascade object cannot wait)',
    );
  for (const limiter of limiters) {
    if (typeof limiter.takeOrWait !== 'function')
      throw optionError('rateLimit mode', '"delay" only with limiters made by createLimiter()');
    if (limiter.mode === 'shadow')
      throw optionError('rateLimit mode', '"delay" only with enforced limits (a shadow limit never refuses)');
    reserverOf(limiter.rule);
  }
  return maxWait as Duration;
}

/**
 * `countOnly`, which refunds an admitted take by its receipt: the limits must be limiters
 * (a cascade object hands out no receipts) and tell their receipts apart by name.
 */
function readCountOnly(countOnly: unknown, limiters: readonly Limiter[] | undefined): CountOnly | undefined {
  if (countOnly === undefined) return undefined;
  if (countOnly !== 'failed' && countOnly !== 'succeeded')
    throw configError('rateLimit countOnly', '"failed" or "succeeded"', countOnly);
  if (limiters === undefined) {
    throw optionError(
      'rateLimit countOnly',
      'used with a limiter or an array of limiters (a cascade object gives no receipts to refund)',
    );
  }
  if (!limiters.every((l) => typeof l.takeWithReceipt === 'function' && typeof l.refund === 'function'))
    throw optionError(
      'rateLimit countOnly',
      'used with limiters made by createLimiter(), which give receipts',
    );
  if (new Set(limiters.map((l) => l.name)).size !== limiters.length)
    throw optionError('rateLimit countOnly', 'used with limits of distinct names');
  return countOnly;
}

/**
 * The options decided before the key: the lists, the address they are matched against, skip
 * and the events channel. The guard is framework-free, so it cannot find a client address by
 * itself: with a list it needs `address`, which the node, Express and Fastify adapters fill in
 * from the socket (reading `proxies`); `proxies` reaching the guard means no adapter read it.
 */
function readAccessOptions(
  given: Record<(typeof optionKeys)[number], unknown>,
): Pick<GuardSettings, 'deny' | 'allow' | 'address' | 'skip' | 'events'> {
  const { allow, deny, skip, address, proxies, events } = given;
  const denied = deny === undefined ? undefined : new AddressList(deny, 'rateLimit deny');
  const allowed = allow === undefined ? undefined : new AddressList(allow, 'rateLimit allow');
  if (address !== undefined && typeof address !== 'function')
    throw optionError('rateLimit address', 'a function of the request returning its client address');
  if (proxies !== undefined) {
    throw optionError(
      'rateLimit proxies',
      'left out here: only the node, Express and Fastify adapters read it (they see the socket); pass address instead',
    );
  }
  if ((denied !== undefined || allowed !== undefined) && address === undefined) {
    throw optionError(
      'rateLimit address',
      'a function of the request returning its client address when allow or deny is given (this framework has no socket to read it from)',
    );
  }
  if (skip !== undefined && typeof skip !== 'function')
    throw optionError('rateLimit skip', 'a function of the request returning true or false');
  if (events !== undefined && !isEvents(events))
    throw optionError('rateLimit events', 'a DecisionEvents channel');
  return {
    deny: denied,
    allow: allowed,
    address: address as GuardSettings['address'],
    skip: skip as GuardSettings['skip'],
    events: events as DecisionEvents | undefined,
  };
}

/** A DecisionEvents from any copy of sluice (ESM or CommonJS build): read by its shape. */
function isEvents(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as DecisionEvents).emit === 'function' &&
    typeof (value as DecisionEvents).subscribe === 'function' &&
    'listening' in value
  );
}

/** The excluded routes; none to match (and no path to normalize per request) for an empty list. */
function excludedRoutes(exclude: unknown): RouteSet | undefined {
  if (exclude === undefined) return undefined;
  const routes = new RouteSet(exclude);
  return routes.size === 0 ? undefined : routes;
}

function checkProblem(problem: unknown): ProblemOptions | undefined {
  if (problem === undefined) return undefined;
  checkOptionKeys('rateLimit problem', problem, problemKeys);
  const { type, title, detail } = problem as Record<string, unknown>;
  if (type !== undefined && (typeof type !== 'string' || !uriReference.test(type)))
    throw configError('rateLimit problem.type', 'a URI such as "about:blank"', type);
  if (title !== undefined && (typeof title !== 'string' || !plainText.test(title)))
    throw configError('rateLimit problem.title', 'a line of text', title);
  if (detail !== undefined && (typeof detail !== 'string' || !plainText.test(detail)))
    throw configError('rateLimit problem.detail', 'a line of text', detail);
  return problem as ProblemOptions;
}

/**
 * A concurrency limit may end `limits` (or be it): its lease is taken once every rate limit
 * admitted, and the rate takes are refunded when the lease is refused. One at most, last.
 */
function splitConcurrency(limits: unknown): { rates: unknown; concurrency: ConcurrencyLimiter | undefined } {
  if (isConcurrencyLimiter(limits)) return { rates: [], concurrency: limits };
  if (!Array.isArray(limits)) return { rates: limits, concurrency: undefined };
  const at = limits.findIndex(isConcurrencyLimiter);
  if (at === -1) return { rates: limits, concurrency: undefined };
  if (at !== limits.length - 1)
    throw optionError('rateLimit limits', 'rate limiters first and at most one concurrency limit, last');
  return { rates: limits.slice(0, -1), concurrency: limits[at] as ConcurrencyLimiter };
}

function toLimiters(limits: unknown): readonly Limiter[] | undefined {
  if (Array.isArray(limits)) {
    if (limits.length === 0) throw configError('rateLimit limits', 'at least one limiter', limits);
    for (const l of limits)
      if (!isLimiter(l)) throw configError('rateLimit limits', 'limiters made by createLimiter()', l);
    return limits;
  }
  if (isLimiter(limits)) return [limits];
  if (
    typeof limits === 'object' &&
    limits !== null &&
    Array.isArray((limits as Cascade).limiters) &&
    (limits as Cascade).limiters.length > 0 &&
    'mode' in limits
  )
    return undefined;
  throw configError('rateLimit limits', 'a limiter, an array of limiters or a cascade', limits);
}

function isLimiter(value: unknown): value is Limiter {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Limiter).take === 'function' &&
    'rule' in value
  );
}

/**
 * A value sent as a header (`X-Auth-Mode`): a token, so it cannot break the response apart.
 *
 * @example
 * headerToken.test('anon') // true; 'anon\r\nX: 1' is false
 */
export const headerToken = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;
