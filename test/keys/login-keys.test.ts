import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_LOGIN_LENGTH, compositeKey, isSluiceError, normalizeLogin } from '../../src/index.js';

describe('normalizeLogin', () => {
  it('trims, folds Unicode compatibility forms (NFKC) and lower-cases', () => {
    assert.equal(normalizeLogin('  Ann '), 'ann');
    assert.equal(normalizeLogin('Ａｎｎ'), 'ann');
    assert.equal(normalizeLogin('\u00a0ANN\u3000'), 'ann');
    assert.equal(normalizeLogin('ﬁsh'), 'fish');
    assert.equal(normalizeLogin('Re\u0301my'), 'rémy');
    assert.equal(normalizeLogin('Ann@Example.COM'), 'ann@example.com');
  });

  it('a value that is not a string is rejected with 400 and never echoed', () => {
    for (const value of [{ $ne: '' }, ['ann'], 42, null, undefined, true])
      assert.throws(
        () => normalizeLogin(value),
        (error: unknown) => isSluiceError(error, 'SLUICE_KEY_INVALID') && error.status === 400,
      );
    for (const value of ['', '   ', '\u3000', 'a'.repeat(MAX_LOGIN_LENGTH + 1)])
      assert.throws(
        () => normalizeLogin(value),
        (error: unknown) => isSluiceError(error, 'SLUICE_KEY_INVALID') && !error.message.includes('aaaa'),
      );
  });
});

describe('compositeKey', () => {
  it('tuples whose joined text would be equal still get different keys', () => {
    const tuples = [['a|b', 'c'], ['a', 'b|c'], ['a', 'b', 'c'], ['1:a', 'b'], ['1', 'a|1:b'], ['a|1:b']];
    const keys = tuples.map((tuple) => compositeKey(tuple));
    assert.equal(new Set(keys).size, tuples.length);
    assert.equal(compositeKey(['203.0.113.7', 'ann']), '11:203.0.113.7|3:ann');
  });

  it('a missing part is a developer error (500); a wrong type is bad input (400)', () => {
    for (const parts of [[], ['a', undefined], [null, 'b'], ['a', '']])
      assert.throws(
        () => compositeKey(parts as string[]),
        (error: unknown) => isSluiceError(error, 'SLUICE_KEY_MISSING') && error.status === 500,
      );
    for (const parts of [['a', { toString: () => 'b' }], ['a', 1], 'ab'])
      assert.throws(
        () => compositeKey(parts as string[]),
        (error: unknown) => isSluiceError(error, 'SLUICE_KEY_INVALID') && error.status === 400,
      );
  });
});
