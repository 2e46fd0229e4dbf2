import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPseudonymRing, isSluiceError, pseudonymousKey } from '../../src/index.js';

const secret = 'k'.repeat(32);
const older = 'o'.repeat(40);

describe('pseudonymousKey', () => {
  it("the report service's account bucket (examples/reports/README.md): account:v1:<HMAC-SHA-256(secret, report:account:v1:<id>)>", () => {
    const expected = createHmac('sha256', secret).update('report:account:v1:42').digest('base64url');
    assert.equal(
      pseudonymousKey(secret, 'report:account', 42, { prefix: 'account' }),
      `account:v1:${expected}`,
    );
    assert.equal(
      pseudonymousKey(secret, 'report:account', '42', { prefix: 'account' }),
      `account:v1:${expected}`,
    );
    const plain = createHmac('sha256', secret).update('login:v1:ann').digest('base64url');
    assert.equal(pseudonymousKey(secret, 'login', 'ann'), `login:v1:${plain}`);
  });

  it('the key holds no raw id, and purposes and secrets separate keys', () => {
    const key = pseudonymousKey(secret, 'ip', '198.51.100.7');
    assert.ok(!key.includes('198'));
    assert.match(key, /^ip:v1:[A-Za-z0-9_-]{43}$/);
    assert.notEqual(key, pseudonymousKey(secret, 'login', '198.51.100.7', { prefix: 'ip' }));
    assert.notEqual(key, pseudonymousKey(older, 'ip', '198.51.100.7'));
  });

  it('a secret shorter than 32 bytes is a configuration error that never echoes it', () => {
    for (const short of ['s'.repeat(31), new Uint8Array(16), 'é'.repeat(15)])
      assert.throws(
        () => pseudonymousKey(short, 'ip', '1'),
        (error: unknown) => isSluiceError(error, 'SLUICE_CONFIG') && !error.message.includes('sss'),
      );
    assert.doesNotThrow(() => pseudonymousKey('é'.repeat(16), 'ip', '1'));
    assert.throws(
      () => pseudonymousKey(42 as never, 'ip', '1'),
      (error: unknown) => isSluiceError(error, 'SLUICE_CONFIG'),
    );
  });

  it('purposes and prefixes are plain labels without a version segment', () => {
    for (const purpose of ['', 'a:v1', 'v2', 'a b', 'a::b'])
      assert.throws(
        () => pseudonymousKey(secret, purpose, '1'),
        (error: unknown) => isSluiceError(error, 'SLUICE_CONFIG'),
      );
  });

  it('a missing subject id is a developer error; an object is bad input', () => {
    for (const id of [undefined, null, ''])
      assert.throws(
        () => pseudonymousKey(secret, 'ip', id as never),
        (error: unknown) => isSluiceError(error, 'SLUICE_KEY_MISSING'),
      );
    for (const id of [{}, 1.5, [1]])
      assert.throws(
        () => pseudonymousKey(secret, 'ip', id as never),
        (error: unknown) => isSluiceError(error, 'SLUICE_KEY_INVALID'),
      );
  });
});

describe('createPseudonymRing', () => {
  const ring = createPseudonymRing({
    secrets: [secret, older],
    purpose: 'report:account',
    prefix: 'account',
  });

  it('current() names the bucket under the newest secret', () => {
    assert.equal(ring.current(7), pseudonymousKey(secret, 'report:account', 7, { prefix: 'account' }));
    assert.equal(ring.generations, 2);
  });

  it('all() names the buckets of every secret generation, current first', () => {
    assert.deepEqual(ring.all(7), [
      pseudonymousKey(secret, 'report:account', 7, { prefix: 'account' }),
      pseudonymousKey(older, 'report:account', 7, { prefix: 'account' }),
    ]);
    // After rotation the old current key is still named, so erasure reaches it.
    const rotated = createPseudonymRing({
      secrets: ['n'.repeat(32), secret, older],
      purpose: 'report:account',
      prefix: 'account',
    });
    assert.ok(rotated.all(7).includes(ring.current(7)));
    assert.notEqual(rotated.current(7), ring.current(7));
  });

  it('an empty, short or repeated secret list is rejected at construction', () => {
    for (const secrets of [[], [secret, secret], ['short'], 'x'.repeat(40)])
      assert.throws(
        () => createPseudonymRing({ secrets: secrets as string[], purpose: 'ip' }),
        (error: unknown) => isSluiceError(error, 'SLUICE_CONFIG'),
      );
  });
});
