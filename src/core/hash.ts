/**
 * SHA-256 and HMAC-SHA-256 as base64url text, synchronous on every runtime: through the runtime's
 * own `node:crypto` where it has one (Node, Bun, Deno, Workers with `nodejs_compat`), found at
 * run time with `process.getBuiltinModule` so that importing sluice never requires it; in plain
 * JavaScript elsewhere (sha256.ts). Both give the same bytes, so a bucket id or a pseudonym is the
 * same whichever runtime computed it. The async form uses WebCrypto, which every runtime has.
 */
import { hmacSha256, sha256 } from './sha256.js';

interface NativeHash {
  update(data: string): NativeHash;
  digest(encoding: 'base64url'): string;
}
interface NativeCrypto {
  createHash(algorithm: 'sha256'): NativeHash;
  createHmac(algorithm: 'sha256', key: unknown): NativeHash;
  createSecretKey(key: Uint8Array): unknown;
}

const native = nativeCrypto();

function nativeCrypto(): NativeCrypto | undefined {
  const process = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    const crypto = process?.getBuiltinModule?.('node:crypto') as NativeCrypto | undefined;
    return typeof crypto?.createHmac === 'function' ? crypto : undefined;
  } catch {
    // A runtime that names the function but refuses the module: compute in JavaScript.
    return undefined;
  }
}

const encoder = new TextEncoder();

/**
 * An HMAC key imported once: the runtime's own key object where it has one, else the bytes.
 *
 * @example
 * const key = hmacKeyOf(new TextEncoder().encode(secret));
 */
export type HmacKey = { readonly bytes: Uint8Array; readonly native: unknown };

/** Imports HMAC key bytes once, for {@link hmacSha256Base64url}. */
export function hmacKeyOf(bytes: Uint8Array): HmacKey {
  return { bytes, native: native?.createSecretKey(bytes) };
}

/** The SHA-256 of `text`'s UTF-8, as base64url (43 characters). */
export function sha256Base64url(text: string): string {
  if (native !== undefined) return native.createHash('sha256').update(text).digest('base64url');
  return base64url(sha256(encoder.encode(text)));
}

/** The HMAC-SHA-256 of `text`'s UTF-8 under `key`, as base64url (43 characters). */
export function hmacSha256Base64url(key: HmacKey, text: string): string {
  if (native !== undefined) return native.createHmac('sha256', key.native).update(text).digest('base64url');
  return base64url(hmacSha256(key.bytes, encoder.encode(text)));
}

/** {@link hmacSha256Base64url} through WebCrypto, on any runtime. */
export async function hmacSha256Base64urlAsync(key: Uint8Array, text: string): Promise<string> {
  const subtle = globalThis.crypto.subtle;
  const imported = await subtle.importKey(
    'raw',
    Uint8Array.from(key),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  return base64url(new Uint8Array(await subtle.sign('HMAC', imported, encoder.encode(text))));
}

/** Bytes as base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
