import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SluiceError } from '../../src/core/errors.js';
import { retryDefaults, retryingFetch, withRetries, type RetryOptions } from '../../src/client/index.js';
import { resolveRetryOptions } from '../../src/client/options.js';

function assertConfigError(fn: () => unknown, ...mentions: string[]): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof SluiceError);
    assert.equal(error.code, 'SLUICE_CONFIG');
    for (const text of mentions) assert.ok(error.message.includes(text), `"${error.message}" names ${text}`);
    return true;
  });
}

describe('retry options', () => {
  it('fills in bounded defaults', () => {
    const o = resolveRetryOptions();
    assert.equal(o.maxAttempts, 4);
    assert.equal(o.deadlineMs, 60_000);
    assert.equal(o.maxDelayMs, 30_000);
    assert.equal(o.baseDelayMs, 500);
    assert.equal(o.jitterMs, 1000);
    assert.equal(o.retryUnavailable, true);
    assert.equal(o.maxBodyBytes, 1_048_576);
    assert.equal(o.idempotencyKeyHeader, 'Idempotency-Key');
    assert.equal(retryDefaults.deadline, '60s');
  });

  it('reads durations as strings with a unit, and undefined as the default', () => {
    const o = resolveRetryOptions({ deadline: '2m', maxDelay: '1500ms', maxAttempts: undefined });
    assert.equal(o.deadlineMs, 120_000);
    assert.equal(o.maxDelayMs, 1500);
    assert.equal(o.maxAttempts, 4);
  });

  it('a bad option is SLUICE_CONFIG naming the option, never repeating the value', () => {
    // [options, the option named, text of the value that must not appear]
    const cases: [RetryOptions, string, string?][] = [
      [{ maxAttempts: 0 }, 'maxAttempts'],
      [{ maxAttempts: 2.5 }, 'maxAttempts', '2.5'],
      [{ maxAttempts: Number.POSITIVE_INFINITY }, 'maxAttempts', 'Infinity'],
      [{ maxAttempts: '3' as unknown as number }, 'maxAttempts', '"3"'],
      [{ deadline: -1 as never }, 'deadline', '-1'],
      [{ deadline: '10x' as never }, 'deadline', '10x'],
      [{ maxDelay: '0ms' }, 'maxDelay', '0ms'],
      [{ maxDelay: `${2 ** 31}ms` }, 'maxDelay', String(2 ** 31)],
      [{ baseDelay: Number.NaN as never }, 'baseDelay', 'NaN'],
      [{ baseDelay: 501 as never }, 'baseDelay', '501'],
      [{ jitter: '1.5s' as never }, 'jitter', '1.5s'],
      [{ retryUnavailable: 'yes' as unknown as boolean }, 'retryUnavailable', 'yes'],
      [{ maxBodyBytes: -1 }, 'maxBodyBytes', '-1'],
      [{ idempotencyKeyHeader: 'Idempotency Key' }, 'idempotencyKeyHeader', 'Idempotency Key'],
      [{ onWait: 'log' as unknown as () => void }, 'onWait', 'log'],
      [{ sleep: 5 as unknown as () => Promise<void> }, 'sleep', '5'],
      [{ now: {} as unknown as () => number }, 'now'],
    ];
    for (const [options, option, secret] of cases)
      assert.throws(
        () => resolveRetryOptions(options),
        (error: unknown) => {
          assert.ok(error instanceof SluiceError);
          assert.equal(error.code, 'SLUICE_CONFIG');
          assert.ok(error.message.includes(option), `"${error.message}" names ${option}`);
          if (secret !== undefined)
            assert.ok(!error.message.includes(secret), `"${error.message}" repeats the value`);
          return true;
        },
      );
  });

  it('rejects an unknown option key and a non-object', () => {
    assertConfigError(() => resolveRetryOptions({ maxAttempt: 3 } as RetryOptions), '"maxAttempt"');
    assertConfigError(() => resolveRetryOptions(3 as unknown as RetryOptions), 'a number');
  });

  it('withRetries validates once, at construction, and needs a fetch', () => {
    assertConfigError(() => withRetries(fetch, { maxAttempts: -1 }), 'maxAttempts');
    assertConfigError(() => withRetries(undefined as unknown as typeof fetch), 'fetchImpl');
  });

  it('retryingFetch rejects bad options before any request', async () => {
    let called = false;
    const original = globalThis.fetch;
    globalThis.fetch = async () => {
      called = true;
      return new Response('');
    };
    try {
      await assert.rejects(retryingFetch('http://127.0.0.1:9/', undefined, { jitter: '0ms' }), {
        code: 'SLUICE_CONFIG',
      });
    } finally {
      globalThis.fetch = original;
    }
    assert.equal(called, false);
  });
});
