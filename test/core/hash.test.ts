/**
 * The plain-JavaScript SHA-256 and HMAC-SHA-256 (used where a runtime has no node:crypto) give
 * node:crypto's bytes, and the WebCrypto forms give the synchronous ones: a bucket id or a
 * pseudonym is the same whichever runtime computed it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { hmacSha256, sha256 } from '../../src/core/sha256.js';
import { base64url, hmacKeyOf, hmacSha256Base64url, hmacSha256Base64urlAsync } from '../../src/core/hash.js';
import { pseudonymousKey, pseudonymousKeyAsync } from '../../src/index.js';

// Lengths around the padding's edges (55, 56, 64 bytes) come up often among these.
const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc.integer({ min: 50, max: 130 }).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
);
const hex = (data: Uint8Array) => Buffer.from(data).toString('hex');

describe('SHA-256 in plain JavaScript', () => {
  it('known answers of FIPS 180-4', () => {
    assert.equal(
      hex(sha256(new Uint8Array())),
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    assert.equal(
      hex(sha256(new TextEncoder().encode('abc'))),
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });

  it('gives node:crypto digest for any bytes', () => {
    fc.assert(
      fc.property(bytes, (data) => {
        assert.equal(hex(sha256(data)), createHash('sha256').update(data).digest('hex'));
      }),
      { numRuns: 300 },
    );
  });

  it('HMAC gives node:crypto HMAC for any key (shorter and longer than a block) and message', () => {
    fc.assert(
      fc.property(bytes, bytes, (key, message) => {
        assert.equal(hex(hmacSha256(key, message)), createHmac('sha256', key).update(message).digest('hex'));
      }),
      { numRuns: 300 },
    );
  });

  it('base64url is Buffer base64url', () => {
    fc.assert(
      fc.property(bytes, (data) => assert.equal(base64url(data), Buffer.from(data).toString('base64url'))),
    );
  });
});

describe('WebCrypto forms', () => {
  it('the async HMAC and pseudonymousKeyAsync equal the synchronous ones', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 32, maxLength: 100 }),
        fc.string({ unit: 'binary', minLength: 1 }),
        async (secret, id) => {
          assert.equal(
            await hmacSha256Base64urlAsync(secret, id),
            hmacSha256Base64url(hmacKeyOf(secret), id),
          );
          assert.equal(
            await pseudonymousKeyAsync(secret, 'account', id, { prefix: 'acct' }),
            pseudonymousKey(secret, 'account', id, { prefix: 'acct' }),
          );
        },
      ),
      { numRuns: 100 },
    );
  });

  it('pseudonymousKeyAsync rejects with the same coded errors, naming no value', async () => {
    await assert.rejects(pseudonymousKeyAsync('short', 'account', 1), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'SLUICE_CONFIG');
      assert.doesNotMatch(e.message, /short/);
      return true;
    });
    await assert.rejects(pseudonymousKeyAsync('s'.repeat(32), 'account', ''), { code: 'SLUICE_KEY_MISSING' });
  });
});
