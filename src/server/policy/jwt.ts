/**
 * Reading the claims of a JSON Web Token for a rule's `jwt:<claim>` key parts, with node:crypto
 * alone: verified (HS256 with a shared secret, RS256 or ES256 with a PEM public key) or, when the
 * policy writes `verify: false`, read as the client wrote it. A token that does not parse, whose
 * signature or algorithm is not the policy's, or that is expired or not yet valid by the server's
 * clock, has no claims: each of its parts is absent, as a missing header is. Nothing here throws
 * on a request, and nothing read from a token reaches a message.
 */
import { createHmac, createPublicKey, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import type { JwtAlgorithmName, JwtVerifyFile } from './file-types.js';

/** A token longer than this is not read: no request makes the server parse a large document. */
export const MAX_JWT_CHARS = 8192;

/** The claims of the token a request carries, or undefined when it carries no valid one. */
export type JwtClaims = Readonly<Record<string, unknown>> | undefined;

/** How a token is checked: its algorithm and key, or not at all (`verify: false`). */
export type JwtCheck = false | { readonly algorithm: JwtAlgorithmName; readonly key: Buffer | KeyObject };

/**
 * The check a `verify` section asks for, its key read once: an HS256 secret as bytes, a public
 * key from its PEM text. Throws a plain Error whose message names what is wrong, never the key.
 */
export function jwtCheckOf(verifyFile: false | JwtVerifyFile, readKey: (file: string) => string): JwtCheck {
  if (verifyFile === false) return false;
  const { algorithm } = verifyFile;
  if (algorithm === 'HS256') {
    if (verifyFile.secret === undefined)
      throw new Error('secret: is required with HS256 (the shared secret tokens are signed with)');
    if (verifyFile.publicKeyFile !== undefined)
      throw new Error('publicKeyFile: is not read with HS256 (tokens are checked with secret)');
    if (Buffer.byteLength(verifyFile.secret) < 32) throw new Error('secret: must be at least 32 bytes');
    return { algorithm, key: Buffer.from(verifyFile.secret) };
  }
  if (verifyFile.publicKeyFile === undefined)
    throw new Error(`publicKeyFile: is required with ${algorithm} (the issuer's PEM public key)`);
  if (verifyFile.secret !== undefined)
    throw new Error(`secret: is not read with ${algorithm} (tokens are checked with publicKeyFile)`);
  let key: KeyObject;
  try {
    key = createPublicKey(readKey(verifyFile.publicKeyFile));
  } catch {
    throw new Error('publicKeyFile: must be a readable PEM public key');
  }
  const type = algorithm === 'RS256' ? 'rsa' : 'ec';
  if (
    key.asymmetricKeyType !== type ||
    (type === 'ec' && key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
  )
    throw new Error(
      `publicKeyFile: must be ${algorithm === 'RS256' ? 'an RSA' : 'a P-256 (prime256v1) EC'} public key`,
    );
  return { algorithm, key };
}

/**
 * A reader of the claims of tokens under one check. It remembers the last token it read (and its
 * claims): a client sends the same token request after request, and a signature is checked once.
 * Validity in time is checked on every read, by `clock`.
 */
export function jwtReader(check: JwtCheck, clock: Clock): (token: string | undefined) => JwtClaims {
  let lastToken: string | undefined;
  let lastClaims: JwtClaims;
  return (token) => {
    if (token === undefined || token.length > MAX_JWT_CHARS) return undefined;
    if (token !== lastToken) {
      lastClaims = claimsOf(token, check);
      lastToken = token;
    }
    return lastClaims !== undefined && inTime(lastClaims, clock()) ? lastClaims : undefined;
  };
}

/** The token's claims when it parses and its signature is the check's; undefined otherwise. */
function claimsOf(token: string, check: JwtCheck): JwtClaims {
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  if (first < 0 || second < 0 || token.indexOf('.', second + 1) >= 0) return undefined;
  const header = jsonOf(token.slice(0, first));
  const claims = jsonOf(token.slice(first + 1, second));
  if (header === undefined || claims === undefined) return undefined;
  if (check === false) return claims;
  // The algorithm is the policy's, never the token's: a token naming another (`none`, or HS256
  // signed with the public key as its secret) is refused.
  if (header.alg !== check.algorithm) return undefined;
  const signed = Buffer.from(token.slice(0, second));
  const signature = Buffer.from(token.slice(second + 1), 'base64url');
  return signatureHolds(check, signed, signature) ? claims : undefined;
}

function signatureHolds(check: Exclude<JwtCheck, false>, signed: Buffer, signature: Buffer): boolean {
  if (check.algorithm === 'HS256') {
    const expected = createHmac('sha256', check.key as Buffer)
      .update(signed)
      .digest();
    return signature.length === expected.length && timingSafeEqual(signature, expected);
  }
  try {
    const key =
      check.algorithm === 'ES256'
        ? { key: check.key as KeyObject, dsaEncoding: 'ieee-p1363' as const }
        : check.key;
    return verify('sha256', signed, key as KeyObject, signature);
  } catch {
    return false;
  }
}

/** `exp` and `nbf` (seconds since the epoch) against the server's clock; any other value fails. */
function inTime(claims: Readonly<Record<string, unknown>>, now: number): boolean {
  const { exp, nbf } = claims;
  if (exp !== undefined && (typeof exp !== 'number' || now >= exp * 1000)) return false;
  if (nbf !== undefined && (typeof nbf !== 'number' || now < nbf * 1000)) return false;
  return true;
}

const base64url = /^[A-Za-z0-9_-]*$/;

/** A base64url segment holding a JSON object, or undefined. */
function jsonOf(segment: string): Record<string, unknown> | undefined {
  if (!base64url.test(segment)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A claim as a key part's text: a string or a finite number; anything else is absent. */
export function claimText(claims: JwtClaims, name: string): string | undefined {
  if (claims === undefined || !Object.hasOwn(claims, name)) return undefined;
  const value = claims[name];
  if (typeof value === 'string') return value;
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;
}
