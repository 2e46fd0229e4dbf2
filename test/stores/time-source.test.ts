import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../src/index.js';
import { readTimeSource } from '../../src/stores/shared/time-source.js';

describe('a shared store reads whose time decides', () => {
  it("defaults to the store's own clock", () => {
    assert.equal(readTimeSource('TestStore', {}), 'store');
    assert.equal(readTimeSource('TestStore', { timeSource: undefined }), 'store');
  });

  it('takes "store" and "app"', () => {
    assert.equal(readTimeSource('TestStore', { timeSource: 'store' }), 'store');
    assert.equal(readTimeSource('TestStore', { timeSource: 'app' }), 'app');
  });

  it('refuses the former option name with the new spelling, whatever its value', () => {
    for (const clock of ['server', 'caller', undefined, () => 0]) {
      assert.throws(
        () => readTimeSource('TestStore', { clock }),
        (error: unknown) =>
          isSluiceError(error) &&
          error.code === 'SLUICE_CONFIG' &&
          error.message.includes('timeSource: "store"') &&
          error.message.includes('timeSource: "app"'),
      );
    }
  });

  it('refuses another value naming the option and what it must be, never the value', () => {
    for (const timeSource of ['server', 'caller', 'secret-value', 1, null]) {
      assert.throws(
        () => readTimeSource('TestStore', { timeSource }),
        (error: unknown) =>
          isSluiceError(error) &&
          error.code === 'SLUICE_CONFIG' &&
          error.message.includes('TestStore timeSource') &&
          !error.message.includes('secret-value'),
      );
    }
  });
});
