import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseHttpDate, parseRetryAfter } from '../../src/client/index.js';

const now = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('parseRetryAfter', () => {
  it('reads delta seconds', () => {
    assert.equal(parseRetryAfter('2', now), 2000);
    assert.equal(parseRetryAfter(' 007 ', now), 7000);
    assert.equal(parseRetryAfter('0', now), 0);
  });

  it('reads an HTTP date as the time until it', () => {
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 12:00:05 GMT', now), 5000);
  });

  it('a date in the past means no lower bound (0)', () => {
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 11:59:00 GMT', now), 0);
    assert.equal(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now), 0);
  });

  it('rounds a fractional value up to whole seconds, never shortening the wait', () => {
    assert.equal(parseRetryAfter('1.5', now), 2000);
    assert.equal(parseRetryAfter('0.001', now), 1000);
  });

  it('keeps a huge value whole (finite, never shortened, never negative)', () => {
    assert.equal(parseRetryAfter('99999999999', now), 99_999_999_999_000);
    assert.equal(parseRetryAfter('9'.repeat(400), now), Number.MAX_SAFE_INTEGER);
    assert.equal(
      parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT', now),
      Date.UTC(9999, 11, 31, 23, 59, 59) - now,
    );
  });

  it('ignores negative, signed, empty, listed and garbage values', () => {
    for (const value of ['-1', '+5', '', '   ', 'soon', '2, 3', '1e3', '0x10', 'NaN', 'Infinity', '.5', '5.'])
      assert.equal(parseRetryAfter(value, now), undefined, JSON.stringify(value));
    assert.equal(parseRetryAfter(null, now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });
});

describe('parseHttpDate', () => {
  it('reads the three formats RFC 9110 makes recipients accept', () => {
    const expected = Date.UTC(1994, 10, 6, 8, 49, 37);
    assert.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', now), expected);
    assert.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', now), expected);
    assert.equal(parseHttpDate('Sun Nov  6 08:49:37 1994', now), expected);
  });

  it('places a two-digit year at most 50 years ahead', () => {
    assert.equal(parseHttpDate('Tuesday, 01-Jan-30 00:00:00 GMT', now), Date.UTC(2030, 0, 1));
    assert.equal(parseHttpDate('Friday, 01-Jan-99 00:00:00 GMT', now), Date.UTC(1999, 0, 1));
  });

  it('refuses dates that do not exist and near misses', () => {
    for (const text of [
      'Sat, 31 Feb 2026 00:00:00 GMT',
      'Thu, 01 Jan 2026 24:00:00 GMT',
      'Thu, 01 Jan 2026 12:60:00 GMT',
      'Thu, 00 Jan 2026 12:00:00 GMT',
      'Thu, 01 Jan 2026 12:00:00 UTC',
      'thu, 01 jan 2026 12:00:00 GMT',
      'Thu, 1 Jan 2026 12:00:00 GMT',
      '2026-01-01T12:00:05Z',
    ])
      assert.equal(parseHttpDate(text, now), undefined, text);
  });
});
