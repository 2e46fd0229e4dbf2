import type { Decision } from '../core/decision.js';
import { SluiceError, configError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import type { Cascade, SyncCascade } from '../limiter/cascade.js';
import type { Limiter, SyncLimiter, TakeOptions } from '../limiter/limiter.js';
import type { HeaderStyle, HeaderValues } from './headers.js';
import {
  admittedHeaders,
  errorResponse,
  limitedResponse,
  type HttpResponse,
  type ProblemOptions,
} from './problem.js';

/** A key with what else the request's identity decided (ADR-0057). */
export interface KeySpec {
  /** The bucket key: build it with the key helpers (`ipKey`, `compositeKey`, `pseudonymousKey`). */
  key: string;
  /** This request's limit instead of the rule's (calendar quotas), e.g. an API key's daily limit. */
  limit?: number;
  /** Sent as `X-Auth-Mode` on every response of this limit: `anon`, `session` or `key`. */
  authMode?: string;
}

/** What a key function returns: one key for every limit, or one per limit in order. */
export type KeyResult = string | KeySpec | readonly (string | KeySpec)[];

/** Options of a route limit; adapters take these as they are. */
export interface RateLimitOptions<Request> {
  /**
   * The limit(s) to apply, wide to narrow. An array is a first-refusal cascade: the first refusal
   * stops and later limits are not charged (D6). Pass a `createCascade(...)` for all-or-nothing.
   */
  limits: Limiter | readonly Limiter[] | Cascade;
  /**
   * The key step. Throw a `SluiceError` (`SLUICE_KEY_INVALID`, `SLUICE_UNAUTHORIZED`) to answer
   * 400/401; returning nothing is a developer error (500), never a pass.
   */
  key: (request: Request) => KeyResult | undefined | Promise<KeyResult | undefined>;
  /** Units this request costs. @default 1 */
  cost?: number | ((request: Request) => number);
  /**
   * Only requests with these methods are limited; others pass untouched and uncharged (D7: reads
   * are not charged to write budgets). @default every method
   */
  methods?: readonly string[];
  /**
   * Routes that have their own rule and are left out of this one, as `"METHOD /path"`, e.g.
   * `["POST /api/messages"]` for a catch-all write budget (D7, ADR-055). Exact paths.
   */
  exclude?: readonly string[];
  /** Rate-limit headers (D4). @default "draft" */
  headers?: HeaderStyle;
  /** Problem body wording of the 429. */
  problem?: ProblemOptions;
  /**
   * `Cache-Control` of the responses this limit sends (429, 400, 401, 500, 503). It must
   * contain `no-store`. ADR-0057's API answers `private, no-store`.
   * @default "no-store"
   */
  cacheControl?: string;
  /**
   * Called with errors that become a 500 (developer errors, a throwing key function), so you can
   * log them. Store failures are logged by the limiter.
   * @default console.error
   */
  onError?: (error: unknown) => void;
}

/** The method and the path (without query) of a request: all a guard reads itself. */
export interface RequestFacts {
  method: string;
  path: string;
}

/** What to do with a request: continue with these headers, or answer with this response. */
export type GuardOutcome =
  | { readonly action: 'continue'; readonly headers: HeaderValues; readonly decisions: readonly Decision[] }
  | { readonly action: 'respond'; readonly response: HttpResponse; readonly decisions: readonly Decision[] };

/** A route limit, framework-free: adapters call `check` and copy the outcome. */
export interface Guard<Request> {
  check(request: Request, facts: RequestFacts): Promise<GuardOutcome>;
}

const optionKeys = [
  'limits',
  'key',
  'cost',
  'methods',
  'exclude',
  'headers',
  'problem',
  'cacheControl',
  'onError',
] as const;
const styles: readonly HeaderStyle[] = ['none', 'legacy', 'draft'];
const untouched: GuardOutcome = { action: 'continue', headers: {}, decisions: [] };
const untouchedPromise = Promise.resolve(untouched);
const defaultOnError = (error: unknown) =>
  console.error('[sluice] request failed before the rate limit could decide', error);

/**
 * Builds a framework-free route limit. Adapters (`sluice/node`, `sluice/express`,
 * `sluice/fastify`, `sluice/hono`) wrap it; use it directly for another framework.
 *
 * @example
 * const guard = createGuard({ limits: general, key: (req) => sessionUserKey(req), methods: ['POST', 'PUT', 'PATCH', 'DELETE'] });
 * const outcome = await guard.check(req, { method: req.method, path: url.pathname });
 */
export function createGuard<Request>(options: RateLimitOptions<Request>): Guard<Request> {
  checkOptionKeys('rateLimit', options, optionKeys);
  const {
    limits,
    key,
    cost = 1,
    headers = 'draft',
    problem,
    cacheControl = 'no-store',
    onError = defaultOnError,
  } = options;
  if (typeof cacheControl !== 'string' || !/\bno-store\b/.test(cacheControl)) {
    throw configError('rateLimit cacheControl', 'a Cache-Control value with no-store', cacheControl);
  }
  const limiters = toLimiters(limits);
  const cascade = limiters === undefined ? (limits as Cascade) : undefined;
  if (typeof key !== 'function') throw configError('rateLimit key', 'a function of the request', key);
  if (!(typeof cost === 'function' || (Number.isSafeInteger(cost) && cost >= 0))) {
    throw configError('rateLimit cost', 'a whole number >= 0 or a function', cost);
  }
  if (!styles.includes(headers))
    throw configError('rateLimit headers', '"none", "legacy" or "draft"', headers);
  if (typeof onError !== 'function') throw configError('rateLimit onError', 'a function', onError);
  const methods =
    options.methods === undefined ? undefined : new Set(options.methods.map((m) => checkMethod(m)));
  const excluded = new Set((options.exclude ?? []).map(checkRoute));
  const count = limiters?.length ?? (cascade as Cascade).limiters.length;

  // Limits on synchronous stores (memory) decide without a promise per take: the hot path.
  const syncLimiters =
    limiters !== undefined && limiters.every(isSyncLimiter)
      ? (limiters as readonly SyncLimiter[])
      : undefined;
  const syncCascade =
    cascade !== undefined && typeof (cascade as SyncCascade).takeSync === 'function'
      ? (cascade as SyncCascade)
      : undefined;
  const sync = syncLimiters !== undefined || syncCascade !== undefined;

  const failed = (error: unknown, extra: HeaderValues | undefined, decisions: Decision[]): GuardOutcome => {
    const response = errorResponse(error, extra, cacheControl);
    if (response.status === 500) onError(error);
    return { action: 'respond', response, decisions };
  };

  const concluded = (decisions: Decision[], extra: HeaderValues | undefined): GuardOutcome => {
    for (const decision of decisions) {
      if (!decision.allowed) {
        return {
          action: 'respond',
          response: limitedResponse(decisions, { headers, problem, extraHeaders: extra, cacheControl }),
          decisions,
        };
      }
    }
    return { action: 'continue', headers: admittedHeaders(decisions, headers, extra), decisions };
  };

  /** Takes from limits on synchronous stores. */
  const decideSync = (request: Request, result: KeyResult | undefined): GuardOutcome => {
    const decisions: Decision[] = [];
    let extra: HeaderValues | undefined;
    try {
      const specs = keySpecs(result, count);
      const units = typeof cost === 'function' ? cost(request) : cost;
      const authMode = specs[0]!.authMode;
      if (authMode !== undefined) extra = { 'X-Auth-Mode': authMode };
      if (syncCascade !== undefined) {
        decisions.push(...syncCascade.takeSync(keysOf(specs), { cost: units }).decisions);
      } else {
        for (let i = 0; i < syncLimiters!.length; i++) {
          const decision = syncLimiters![i]!.takeSync(specs[i]!.key, takeOptions(units, specs[i]!));
          decisions.push(decision);
          if (!decision.allowed) break;
        }
      }
    } catch (error) {
      return failed(error, extra, decisions);
    }
    return concluded(decisions, extra);
  };

  /** Takes from limits on any store, one awaited take at a time (first refusal stops). */
  const decideAsync = async (
    request: Request,
    result: KeyResult | undefined | Promise<KeyResult | undefined>,
  ): Promise<GuardOutcome> => {
    const decisions: Decision[] = [];
    let extra: HeaderValues | undefined;
    try {
      const specs = keySpecs(await result, count);
      const units = typeof cost === 'function' ? cost(request) : cost;
      const authMode = specs[0]!.authMode;
      if (authMode !== undefined) extra = { 'X-Auth-Mode': authMode };
      if (cascade !== undefined) {
        decisions.push(...(await cascade.take(keysOf(specs), { cost: units })).decisions);
      } else {
        for (let i = 0; i < limiters!.length; i++) {
          const decision = await limiters![i]!.take(specs[i]!.key, takeOptions(units, specs[i]!));
          decisions.push(decision);
          if (!decision.allowed) break;
        }
      }
    } catch (error) {
      return failed(error, extra, decisions);
    }
    return concluded(decisions, extra);
  };

  return {
    check(request, facts) {
      if (methods !== undefined && !methods.has(facts.method)) return untouchedPromise;
      if (excluded.size > 0 && excluded.has(`${facts.method} ${facts.path}`)) return untouchedPromise;
      let result: KeyResult | undefined | Promise<KeyResult | undefined>;
      try {
        result = key(request);
      } catch (error) {
        return Promise.resolve(failed(error, undefined, []));
      }
      return sync && !isThenable(result)
        ? Promise.resolve(decideSync(request, result))
        : decideAsync(request, result);
    },
  };
}

function isThenable(value: unknown): value is Promise<unknown> {
  return (
    typeof value === 'object' && value !== null && typeof (value as Promise<unknown>).then === 'function'
  );
}

function isSyncLimiter(limiter: Limiter): boolean {
  return typeof (limiter as SyncLimiter).takeSync === 'function';
}

function keysOf(specs: readonly KeySpec[]): string[] {
  return specs.map((s) => s.key);
}

/** The take options of one key; none for the default cost of 1, to spare an object per request. */
function takeOptions(units: number, spec: KeySpec): TakeOptions | undefined {
  if (spec.limit !== undefined) return { cost: units, limit: spec.limit };
  return units === 1 ? undefined : { cost: units };
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

function keySpecs(result: KeyResult | undefined, count: number): KeySpec[] {
  if (Array.isArray(result)) {
    if (result.length !== count) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        `the key function returned ${result.length} keys for ${count} limits`,
      );
    }
    return result.map(toSpec);
  }
  const spec = toSpec(result);
  return count === 1 ? [spec] : Array.from({ length: count }, () => spec);
}

function toSpec(value: unknown): KeySpec {
  if (typeof value === 'string') return { key: value };
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'key' in value)
    return value as KeySpec;
  if (value === undefined || value === null) {
    throw new SluiceError(
      'SLUICE_KEY_MISSING',
      'the key function returned no key: a developer error, never a pass',
    );
  }
  throw new SluiceError('SLUICE_KEY_INVALID', 'the key function returned something that is not a key');
}

function checkMethod(method: unknown): string {
  if (typeof method !== 'string' || !/^[A-Za-z]+$/.test(method))
    throw configError('rateLimit methods', 'HTTP method names', method);
  return method.toUpperCase();
}

function checkRoute(route: unknown): string {
  if (typeof route !== 'string' || !/^[A-Za-z]+ \/\S*$/.test(route)) {
    throw configError('rateLimit exclude', 'routes written as "METHOD /path"', route);
  }
  const space = route.indexOf(' ');
  return `${route.slice(0, space).toUpperCase()} ${route.slice(space + 1)}`;
}
