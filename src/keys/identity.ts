import { SluiceError } from '../core/errors.js';
import { REPEATED, readHeader, type HeadersLike } from './headers.js';
import type { SubjectId } from './pseudonym.js';

/** The identity a request is limited as; send it as `X-Auth-Mode`, as the report
 * service does (examples/reports/README.md). */
export type AuthMode = 'anon' | 'session' | 'key';

/** Why a request got its mode, for debugging and logs (it names no subject). */
export type IdentityReason =
  'key' | 'session' | 'no-session' | 'session-error' | 'incomplete-session' | 'deleted-user';

/** Why an offered API key was refused. */
export type UnauthorizedReason = 'invalid-key' | 'revoked-key' | 'conflicting-keys';

/** What the API-key lookup returns for a key it knows. */
export interface ApiKeyGrant {
  /** The key's bucket, e.g. `apikey:${row.id}` or a pseudonym of the id: never the key itself. */
  bucket: string;
  /** The key's own limit (in the report service, `api_keys.daily_limit`); pass it to `take(key, { limit })`. */
  limit?: number;
  /** True for a revoked key: a 401, exactly like an unknown one. */
  revoked?: boolean;
}

/** What the session resolver returns: at least the user's id, or null for no session. */
export interface SessionInfo {
  userId?: SubjectId | null;
}

type MaybePromise<T> = T | Promise<T>;

/** The application's side of {@link resolveIdentity}. */
export interface IdentityResolvers<R> {
  /**
   * Looks up an offered API key (from `Authorization: Bearer …` or `X-API-Key`). Null or
   * undefined for an unknown key. An error here propagates: a key path never falls back.
   */
  apiKey(key: string, request: R): MaybePromise<ApiKeyGrant | null | undefined>;
  /** Resolves the server-side session; null or undefined for none. An error here means anon. */
  session(request: R): MaybePromise<SessionInfo | null | undefined>;
  /** Whether the session's user still exists (a deleted user's session counts as anon). */
  userExists(userId: SubjectId, request: R): MaybePromise<boolean>;
  /** Names the account bucket, e.g. `accounts.current` of a pseudonym ring. */
  accountBucket(userId: SubjectId): string;
  /** Names the anonymous bucket, e.g. a pseudonym of `ipKey(clientAddress(request).address)`. */
  anonBucket(request: R): MaybePromise<string>;
}

/** The request is limited as `mode`, in exactly one bucket. */
export interface IdentityGranted {
  ok: true;
  mode: AuthMode;
  /** The one bucket to charge. */
  bucket: string;
  /** A per-key limit from the API-key lookup; undefined for the rule's own limit. */
  limit: number | undefined;
  reason: IdentityReason;
  /** The session resolver's error when `reason` is `session-error` (your code's error: log with care). */
  cause?: unknown;
}

/** An offered API key was refused: answer 401, charge no bucket, try no weaker identity. */
export interface IdentityUnauthorized {
  ok: false;
  mode: 'key';
  status: 401;
  reason: UnauthorizedReason;
  /** A SLUICE_UNAUTHORIZED error to throw or map, if that suits the caller better. */
  error: SluiceError;
}

/** The outcome of {@link resolveIdentity}. */
export type IdentityResult = IdentityGranted | IdentityUnauthorized;

/** RFC 6750 b64token, and a bound on what is worth a database lookup. */
const bearerToken = /^[A-Za-z0-9\-._~+/]+=*$/;
const apiKeyText = /^[\x21-\x7e]{1,512}$/;
/** An unusable offer: a key was offered, so there is no fallback, but it is not worth a lookup. */
interface Refusal {
  refused: UnauthorizedReason;
}
const INVALID: Refusal = { refused: 'invalid-key' };
const CONFLICTING: Refusal = { refused: 'conflicting-keys' };

/** The offered key: its text, a Refusal for an unusable offer, or undefined when none is offered. */
function offeredKey(headers: HeadersLike | undefined): string | Refusal | undefined {
  const authorization = readHeader(headers, 'authorization', false);
  let bearer: string | undefined;
  if (authorization === REPEATED) return INVALID;
  // Only the Bearer scheme offers an API key; Basic and others are not this path.
  if (authorization !== undefined && /^bearer(?:\s|$)/i.test(authorization)) {
    bearer = authorization.slice(6).trim();
    if (!bearerToken.test(bearer)) return INVALID;
  }
  const header = readHeader(headers, 'x-api-key', false);
  if (header === REPEATED) return INVALID;
  if (header !== undefined) {
    const key = header.trim();
    if (!apiKeyText.test(key)) return INVALID;
    if (bearer !== undefined && bearer !== key) return CONFLICTING;
    return key;
  }
  return bearer;
}

function unauthorized(reason: UnauthorizedReason): IdentityUnauthorized {
  return {
    ok: false,
    mode: 'key',
    status: 401,
    reason,
    error: new SluiceError('SLUICE_UNAUTHORIZED', `the offered API key was refused (${reason})`),
  };
}

function checkBucket(bucket: unknown, source: string): string {
  if (typeof bucket === 'string' && bucket.length > 0) return bucket;
  throw new SluiceError('SLUICE_KEY_MISSING', `${source} returned no bucket name`);
}

function isSubjectId(id: unknown): id is SubjectId {
  return (typeof id === 'string' && id.length > 0) || Number.isSafeInteger(id) || typeof id === 'bigint';
}

function anon(bucket: string, reason: IdentityReason, cause?: unknown): IdentityGranted {
  const result: IdentityGranted = { ok: true, mode: 'anon', bucket, limit: undefined, reason };
  if (cause !== undefined) result.cause = cause;
  return result;
}

/**
 * The report service's identity table (examples/reports/README.md) as a function. In order:
 * 1. An offered API key (`Authorization: Bearer …` or `X-API-Key`) is checked first. Known and
 *    not revoked: mode `key`, its bucket and its limit. Unknown, revoked, malformed, or two
 *    different keys at once: a 401 outcome, with no fallback to session or anonymous access
 *    (a bad key must not quietly buy a weaker identity's budget).
 * 2. Only when no key is offered is the session resolved; it counts only if its user still
 *    exists: mode `session`, the account bucket.
 * 3. A resolver error, a session without a user id, or a deleted user: mode `anon`, the IP
 *    bucket. A broken session never skips the limit; it just gets the anonymous one.
 * Exactly one bucket is named, and only the resolvers on the chosen path are called. Charge
 * `bucket` (with `limit`), and send `X-Auth-Mode: <mode>`.
 *
 * @default no options: the order above is the contract
 * @example
 * const identity = await resolveIdentity(req, {
 *   apiKey: async (key) => db.apiKeyByHash(sha256(key)), // { bucket: `apikey:${id}`, limit, revoked }
 *   session: async (req) => auth.session(req),           // { userId } | null
 *   userExists: async (id) => db.userExists(id),
 *   accountBucket: (id) => accounts.current(id),
 *   anonBucket: (req) => ips.current(ipKey(addressOf(req).address)),
 * });
 * if (!identity.ok) return reply.code(401).header('X-Auth-Mode', 'key').send();
 * const decision = await limiter.take(identity.bucket, { limit: identity.limit });
 */
export async function resolveIdentity<R extends { headers: HeadersLike }>(
  request: R,
  resolvers: IdentityResolvers<R>,
): Promise<IdentityResult> {
  const key = offeredKey(request.headers);
  if (typeof key === 'string') {
    const grant = await resolvers.apiKey(key, request);
    if (grant === null || grant === undefined) return unauthorized('invalid-key');
    if (grant.revoked === true) return unauthorized('revoked-key');
    const { limit } = grant;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1))
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        'the API-key lookup returned a limit that is not a positive whole number',
      );
    return {
      ok: true,
      mode: 'key',
      bucket: checkBucket(grant.bucket, 'the API-key lookup'),
      limit,
      reason: 'key',
    };
  }
  if (key !== undefined) return unauthorized(key.refused);

  let reason: IdentityReason = 'session';
  let cause: unknown;
  let userId: SubjectId | undefined;
  try {
    const session = await resolvers.session(request);
    const id = session?.userId;
    if (session === null || session === undefined) reason = 'no-session';
    else if (!isSubjectId(id)) reason = 'incomplete-session';
    else if ((await resolvers.userExists(id, request)) !== true) reason = 'deleted-user';
    else userId = id;
  } catch (error) {
    // Only the application's session code runs in here: a bug in naming the bucket below must
    // surface as an error, not hide as an anonymous request.
    reason = 'session-error';
    cause = error;
  }
  if (userId !== undefined) {
    const bucket = checkBucket(resolvers.accountBucket(userId), 'accountBucket');
    return { ok: true, mode: 'session', bucket, limit: undefined, reason };
  }
  return anon(checkBucket(await resolvers.anonBucket(request), 'anonBucket'), reason, cause);
}
