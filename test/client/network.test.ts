import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RetryNetworkError, withRetries } from '../../src/client/index.js';
import { classifyFetchError } from '../../src/client/network-error.js';
import { closeServers, refusingUrl, retrying } from './support.js';

after(closeServers);

function isOutcome(outcome: 'unknown' | 'not-sent', attempts: number) {
  return (error: unknown) => {
    assert.ok(error instanceof RetryNetworkError, String(error));
    assert.equal(error.outcome, outcome);
    assert.equal(error.attempts, attempts);
    assert.ok(error.cause instanceof TypeError);
    return true;
  };
}

describe('network errors', () => {
  it('a connection dropped after a POST was sent is an unknown outcome, not retried without a key', async () => {
    const { server, giveUps, api } = await retrying(['destroy', { status: 201 }]);
    await assert.rejects(api(server.url, { method: 'POST', body: 'pay 10 EUR' }), isOutcome('unknown', 1));
    assert.equal(server.received.length, 1, 'the server did receive it');
    assert.deepEqual(giveUps, [
      {
        reason: 'not-idempotent',
        attempt: 1,
        status: undefined,
        retryAfterMs: undefined,
        outcome: 'unknown',
      },
    ]);
  });

  it('with an Idempotency-Key the unknown outcome is retried with the same key and body', async () => {
    const { server, waits, api } = await retrying(['destroy', { status: 201 }]);
    const res = await api(server.url, {
      method: 'POST',
      body: 'pay 10 EUR',
      headers: { 'Idempotency-Key': 'pay-1' },
    });
    assert.equal(res.status, 201);
    assert.deepEqual(
      server.received.map((r) => [r.headers['idempotency-key'], r.body]),
      [
        ['pay-1', 'pay 10 EUR'],
        ['pay-1', 'pay 10 EUR'],
      ],
    );
    assert.deepEqual(waits, [
      {
        attempt: 1,
        delayMs: 250,
        reason: 'network',
        status: undefined,
        retryAfterMs: undefined,
        outcome: 'unknown',
      },
    ]);
  });

  it('an idempotent GET is retried after a dropped connection', async () => {
    const { server, api } = await retrying(['destroy', { status: 200 }]);
    assert.equal((await api(server.url)).status, 200);
    assert.equal(server.received.length, 2);
  });

  it('after maxAttempts of dropped connections, throws the unknown outcome', async () => {
    const { server, giveUps, api } = await retrying(['destroy'], { maxAttempts: 3 });
    await assert.rejects(api(server.url, { method: 'DELETE' }), isOutcome('unknown', 3));
    assert.equal(server.received.length, 3);
    assert.equal(giveUps[0]?.reason, 'max-attempts');
  });

  it('a refused connection is not-sent: surfaced as such for a POST without a key, never retried', async () => {
    const url = await refusingUrl();
    const { giveUps, api } = await retrying([]);
    await assert.rejects(api(url, { method: 'POST', body: 'x' }), isOutcome('not-sent', 1));
    assert.equal(giveUps[0]?.outcome, 'not-sent');
  });

  it('a refused connection is retried for a GET', async () => {
    const url = await refusingUrl();
    let calls = 0;
    // The first attempt goes to a closed port, the second to the real server.
    const { server, waits, api } = await retrying([{ status: 200 }], {}, (input, init) =>
      fetch(calls++ === 0 ? url : server.url, init),
    );
    assert.equal((await api(server.url)).status, 200);
    assert.equal(server.received.length, 1);
    assert.equal(waits[0]?.outcome, 'not-sent');
  });

  it('an invalid URL or a non-network error is rethrown as is, not retried', async () => {
    const { api } = await retrying([]);
    await assert.rejects(
      api('not a url'),
      (e: unknown) => e instanceof TypeError && !(e instanceof RetryNetworkError),
    );
    let calls = 0;
    const failing = withRetries(async () => {
      calls++;
      throw new RangeError('bug in a fetch wrapper');
    });
    await assert.rejects(failing('http://127.0.0.1:9/'), RangeError);
    assert.equal(calls, 1);
  });
});

describe('classifyFetchError', () => {
  const withCause = (cause: unknown) => new TypeError('fetch failed', { cause });

  it('only connect-phase codes are not-sent; resets and bare TypeErrors are unknown', () => {
    for (const code of [
      'ECONNREFUSED',
      'ENOTFOUND',
      'EAI_AGAIN',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'UND_ERR_CONNECT_TIMEOUT',
    ])
      assert.equal(classifyFetchError(withCause({ code })), 'not-sent', code);
    for (const code of ['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE', 'UND_ERR_HEADERS_TIMEOUT', 'ETIMEDOUT'])
      assert.equal(classifyFetchError(withCause({ code })), 'unknown', code);
    assert.equal(classifyFetchError(new TypeError('Failed to fetch')), 'unknown', "a browser's error");
    assert.equal(classifyFetchError(new Error('x')), 'program');
    assert.equal(classifyFetchError(withCause({ code: 'ERR_INVALID_URL' })), 'program');
  });

  it('a happy-eyeballs AggregateError is not-sent only if every address refused', () => {
    const refused = { code: 'ECONNREFUSED' };
    assert.equal(classifyFetchError(withCause({ errors: [refused, refused] })), 'not-sent');
    assert.equal(classifyFetchError(withCause({ errors: [refused, { code: 'ECONNRESET' }] })), 'unknown');
    assert.equal(classifyFetchError(withCause({ errors: [] })), 'unknown');
  });
});
