/**
 * The key step's answer read into one key spec per limit, and what each spec says beyond its
 * key: the take options of its own limit, and the `X-Auth-Mode` header it names.
 */
import type { Duration } from '../core/duration.js';
import { SluiceError } from '../core/errors.js';
import type { TakeOptions } from '../limiter/limiter.js';
import { headerToken } from './guard-options.js';
import type { HeaderValues } from './headers.js';

/**
 * A key with what else the request's identity decided (see `resolveIdentity`): an API key's own
 * limit, and the mode sent as `X-Auth-Mode`.
 *
 * @example
 * const spec: KeySpec = { key: 'key:3f9a', limit: 10_000, authMode: 'key' };
 */
export interface KeySpec {
  /** The bucket key: build it with the key helpers (`ipKey`, `compositeKey`, `pseudonymousKey`). */
  key: string;
  /**
   * This request's limit instead of the rule's, e.g. an API key's daily limit: a count for rules
   * counted per window (calendar quotas, fixed and sliding windows), the rate for a token bucket.
   */
  limit?: number;
  /** This request's token-bucket period instead of the rule's, e.g. `"1m"` (a plan's tier). */
  period?: Duration;
  /** This request's token-bucket burst instead of the rule's (a plan's tier). */
  burst?: number;
  /** Sent as `X-Auth-Mode` on every response of this limit: `anon`, `session` or `key`. */
  authMode?: string;
}

/**
 * What a key function returns: one key for every limit, or one per limit in order.
 *
 * @example
 * const key = (req: IncomingMessage): KeyResult => [ipKey(clientAddress(req).address), `user:${userId(req)}`];
 */
export type KeyResult = string | KeySpec | readonly (string | KeySpec)[];

/**
 * The keys of a cascade's specs, in its limits' order.
 *
 * @example
 * cascade.take(keysOf(specs), { cost })
 */
export function keysOf(specs: readonly KeySpec[]): string[] {
  return specs.map((s) => s.key);
}

/**
 * One string for a cascade's list of keys, unambiguous whatever the keys hold.
 *
 * @example
 * earlierCharge(request, cascade, cascadeId(keys))
 */
export function cascadeId(keys: readonly string[]): string {
  return JSON.stringify(keys);
}

/**
 * `X-Auth-Mode` for a key spec that names one; a value that is not a token is a developer error.
 *
 * @example
 * authModeHeader({ key: 'key:3f9a', authMode: 'key' }) // { 'X-Auth-Mode': 'key' }
 */
export function authModeHeader(spec: KeySpec): HeaderValues | undefined {
  const mode = spec.authMode;
  if (mode === undefined) return undefined;
  if (typeof mode !== 'string' || !headerToken.test(mode)) {
    // The type only: the value came from the key step and may carry request data.
    throw new SluiceError(
      'SLUICE_CONFIG',
      `the key function returned an authMode that is not a header token (a ${typeof mode}); use "anon", "session" or "key"`,
    );
  }
  return { 'X-Auth-Mode': mode };
}

/**
 * The take options of one key; none for the default cost of 1, to spare an object per request.
 *
 * @example
 * limiter.takeSync(spec.key, takeOptions(units, spec))
 */
export function takeOptions(units: number, spec: KeySpec): TakeOptions | undefined {
  const { limit, period, burst } = spec;
  if (period !== undefined || burst !== undefined) return { cost: units, limit, period, burst };
  if (limit !== undefined) return { cost: units, limit };
  return units === 1 ? undefined : { cost: units };
}

/**
 * One key spec per limit from what the key function returned: one key for every limit, or one
 * per limit in order. No key, or a count that does not match the limits, is a developer error.
 *
 * @example
 * keySpecs('ip:203.0.113.7', 2) // [{ key: 'ip:203.0.113.7' }, { key: 'ip:203.0.113.7' }]
 */
export function keySpecs(result: KeyResult | undefined, count: number): KeySpec[] {
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

/** One key as a spec; the error names what was wrong, never the value (it may carry request data). */
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
