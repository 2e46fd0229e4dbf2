import { SluiceError, configError } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import { hmacKeyOf, hmacSha256Base64url, hmacSha256Base64urlAsync, type HmacKey } from '../core/hash.js';

/** An HMAC secret: text (counted in UTF-8 bytes) or bytes. */
export type PseudonymSecret = string | Uint8Array;

/** A subject id: a user id, an API key id, an ipKey or a compositeKey. */
export type SubjectId = string | number | bigint;

/**
 * The shortest secret accepted: 32 bytes, the output size of SHA-256. A shorter secret makes
 * the HMAC easier to brute-force than the hash it protects; for an IPv4 address (2^32 values)
 * the secret is the only thing between a bucket name and the address.
 */
export const MIN_SECRET_BYTES = 32;

/** Options of {@link pseudonymousKey}. */
export interface PseudonymousKeyOptions {
  /**
   * The non-personal prefix of the output, `<prefix>:v1:<hmac>`. It separates bucket families
   * (account buckets from IP and API-key buckets) without saying whose bucket it is.
   * @default purpose
   */
  prefix?: string;
}

/** Options of {@link createPseudonymRing}. */
export interface PseudonymRingOptions extends PseudonymousKeyOptions {
  /**
   * Secrets, current first, then older generations still to be named (so that erasing a subject reaches
   * buckets named under an older secret). Rotate
   * by putting the new secret first; drop an old one once its buckets have expired.
   */
  secrets: readonly PseudonymSecret[];
  /** What the keys are for, part of the HMAC input: e.g. `'account'`, `'report:account'`. */
  purpose: string;
}

/** Names a subject's buckets under every secret generation; see {@link createPseudonymRing}. */
export interface PseudonymRing {
  /** The output prefix. */
  readonly prefix: string;
  /** How many secret generations the ring holds. */
  readonly generations: number;
  /** The key under the current secret: the bucket to charge. */
  current(id: SubjectId): string;
  /** The keys under every secret, current first: the buckets to reset or erase. */
  all(id: SubjectId): string[];
}

const ringKeys = ['secrets', 'purpose', 'prefix'] as const;
const keyOptionKeys = ['prefix'] as const;
/** Letters, digits, `_.-` in `:`-separated segments; a `v<digits>` segment would blur `:v1:`. */
const labelPattern = /^[a-z0-9_.-]+(?::[a-z0-9_.-]+)*$/i;
const versionSegment = /(?:^|:)v\d+(?::|$)/i;

function checkLabel(option: string, value: unknown): string {
  if (typeof value !== 'string' || !labelPattern.test(value) || versionSegment.test(value))
    throw configError(option, 'letters, digits, _ . - in :-separated segments, none like v1', value);
  return value;
}

/** The secret's bytes, checked. Messages give its length at most, never its text. */
function secretBytes(option: string, secret: unknown): Uint8Array {
  let bytes: Uint8Array;
  if (typeof secret === 'string') bytes = new TextEncoder().encode(secret);
  else if (secret instanceof Uint8Array) bytes = Uint8Array.from(secret);
  else {
    const kind = secret === null ? 'null' : Array.isArray(secret) ? 'an array' : `a ${typeof secret}`;
    throw new SluiceError('SLUICE_CONFIG', `${option} must be a string or Uint8Array; received ${kind}`);
  }
  if (bytes.length < MIN_SECRET_BYTES)
    throw new SluiceError(
      'SLUICE_CONFIG',
      `${option} must be at least ${MIN_SECRET_BYTES} bytes; received ${bytes.length} bytes`,
    );
  return bytes;
}

function subjectText(id: unknown): string {
  if (typeof id === 'string' && id.length > 0) return id;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id);
  if (typeof id === 'bigint') return id.toString();
  if (id === undefined || id === null || id === '')
    throw new SluiceError('SLUICE_KEY_MISSING', 'pseudonymous key: the subject id is missing');
  throw new SluiceError(
    'SLUICE_KEY_INVALID',
    'pseudonymous key: the subject id must be a string, a safe integer or a bigint',
  );
}

function hmacKey(key: HmacKey, purpose: string, prefix: string, id: SubjectId): string {
  return `${prefix}:v1:${hmacSha256Base64url(key, `${purpose}:v1:${subjectText(id)}`)}`;
}

/** The purpose and prefix of {@link pseudonymousKey}'s arguments, checked. */
function keyLabels(purpose: string, options: PseudonymousKeyOptions): { purpose: string; prefix: string } {
  checkOptionKeys('pseudonymousKey', options, keyOptionKeys);
  checkLabel('pseudonymousKey purpose', purpose);
  const prefix =
    options.prefix === undefined ? purpose : checkLabel('pseudonymousKey prefix', options.prefix);
  return { purpose, prefix };
}

/**
 * A pseudonymous bucket key, so that the store holds no personal data: `<prefix>:v1:<base64url(HMAC-SHA-256(secret, message))>` where
 * the HMAC message is `<purpose>:v1:<id>` (the id in decimal when it is a number). The store
 * then holds no raw IP, user id, e-mail or nick; without the secret a key cannot be traced back
 * to its subject, and `v1` names this scheme so that a later one cannot collide with it.
 *
 * The report service's account bucket (examples/reports/README.md) `account:v1:<HMAC-SHA-256(AUTH_SECRET, report:account:v1:<users.id>)>`
 * is `pseudonymousKey(AUTH_SECRET, 'report:account', userId, { prefix: 'account' })`: the purpose
 * (HMAC input) carries the application scope, the prefix (output) only the bucket family.
 * For rotation and erasure across secret generations, use {@link createPseudonymRing}.
 * Throws SLUICE_CONFIG for a secret under 32 bytes or a bad purpose or prefix; SLUICE_KEY_MISSING
 * for no id; SLUICE_KEY_INVALID for an id that is not a string, safe integer or bigint.
 *
 * @default options `{ prefix: purpose }`
 * @example
 * pseudonymousKey(process.env.AUTH_SECRET!, 'report:account', 42, { prefix: 'account' });
 * // 'account:v1:3q2-7w…' (43 base64url characters after v1:)
 */
export function pseudonymousKey(
  secret: PseudonymSecret,
  purpose: string,
  id: SubjectId,
  options: PseudonymousKeyOptions = {},
): string {
  const { prefix } = keyLabels(purpose, options);
  const key = hmacKeyOf(secretBytes('pseudonymousKey secret', secret));
  return hmacKey(key, purpose, prefix, id);
}

/**
 * {@link pseudonymousKey} through WebCrypto: the same key, computed asynchronously. The
 * synchronous form runs everywhere too (through the runtime's `node:crypto`, or in plain
 * JavaScript where there is none); this one leaves the hashing to the platform, e.g. in a
 * browser or a Worker without `nodejs_compat`. Throws (rejects) as {@link pseudonymousKey} does.
 *
 * @default options `{ prefix: purpose }`
 * @example
 * await pseudonymousKeyAsync(env.AUTH_SECRET, 'report:account', 42, { prefix: 'account' });
 */
export async function pseudonymousKeyAsync(
  secret: PseudonymSecret,
  purpose: string,
  id: SubjectId,
  options: PseudonymousKeyOptions = {},
): Promise<string> {
  const { prefix } = keyLabels(purpose, options);
  const bytes = secretBytes('pseudonymousKey secret', secret);
  return `${prefix}:v1:${await hmacSha256Base64urlAsync(bytes, `${purpose}:v1:${subjectText(id)}`)}`;
}

/**
 * A key ring for one purpose: the current secret names the bucket to charge, and every secret
 * (current and older) names the buckets a subject may still own, so that a reset or an erasure
 * reaches every generation. Secrets are checked and imported once, here.
 *
 * @default options `{ prefix: purpose }`
 * @example
 * const accounts = createPseudonymRing({
 *   secrets: [process.env.AUTH_SECRET!, process.env.AUTH_SECRET_PREVIOUS!],
 *   purpose: 'report:account',
 *   prefix: 'account',
 * });
 * await limiter.take(accounts.current(user.id));
 * for (const key of accounts.all(user.id)) await limiter.reset(key); // erasure
 */
export function createPseudonymRing(options: PseudonymRingOptions): PseudonymRing {
  checkOptionKeys('createPseudonymRing', options, ringKeys);
  const purpose = checkLabel('createPseudonymRing purpose', options.purpose);
  const prefix =
    options.prefix === undefined ? purpose : checkLabel('createPseudonymRing prefix', options.prefix);
  const { secrets } = options;
  if (!Array.isArray(secrets) || secrets.length === 0)
    throw new SluiceError('SLUICE_CONFIG', 'createPseudonymRing secrets must be a non-empty array');
  const bytes = secrets.map((secret: unknown, i) => secretBytes(`createPseudonymRing secrets[${i}]`, secret));
  bytes.forEach((secret, i) => {
    // A repeated secret is a rotation mistake (the "new" secret was never changed).
    if (bytes.findIndex((other) => sameBytes(other, secret)) !== i)
      throw new SluiceError('SLUICE_CONFIG', `createPseudonymRing secrets[${i}] repeats an earlier secret`);
  });
  const keys = bytes.map(hmacKeyOf);
  const current = keys[0]!;
  return Object.freeze({
    prefix,
    generations: keys.length,
    current: (id: SubjectId) => hmacKey(current, purpose, prefix, id),
    all: (id: SubjectId) => keys.map((key) => hmacKey(key, purpose, prefix, id)),
  });
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
