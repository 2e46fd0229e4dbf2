/** Problem responses (429, 400, 401, 500, 503) and admitted headers, exactly. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SluiceError, isSluiceError } from '../../src/core/errors.js';
import { admittedHeaders, errorResponse, limitedResponse, problemCodes } from '../../src/http/problem.js';
import { decision, failOpen } from './decisions.js';

const refused = (name: string, retryAfterMs: number) =>
  decision(name, { allowed: false, limit: 5, remaining: 0, retryAfterMs, resetMs: 60_000 });
const admitted = decision('wide', { allowed: true, limit: 100, remaining: 99, resetMs: 600 });

describe('limitedResponse', () => {
  it('a 429 problem+json with Retry-After, Cache-Control: no-store, the refusing limit and the code rate_limited', () => {
    const response = limitedResponse([admitted, refused('login', 12_000)]);
    assert.equal(response.status, 429);
    assert.deepEqual(response.headers, {
      'Content-Type': 'application/problem+json',
      'Cache-Control': 'no-store',
      'RateLimit-Policy': '"wide";q=100;w=60, "login";q=5;w=60',
      RateLimit: '"wide";r=99;t=1, "login";r=0;t=60',
      'Retry-After': '12',
      'Access-Control-Expose-Headers': 'Retry-After, RateLimit, RateLimit-Policy',
    });
    assert.deepEqual(JSON.parse(response.body), {
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: 'Too many requests. Retry after 12 seconds.',
      code: 'rate_limited',
      limits: ['login'],
    });
  });

  it('Retry-After is whole seconds, rounded up, at least 1', () => {
    const retryAfter = (ms: number) => limitedResponse(refused('x', ms)).headers['Retry-After'];
    assert.deepEqual([1, 999, 1000, 1001, 59_001].map(retryAfter), ['1', '1', '1', '2', '60']);
  });

  it('several refusals: every name, and the longest wait', () => {
    const response = limitedResponse([refused('a', 3_000), refused('b', 9_500)], { headers: 'none' });
    assert.equal(response.headers['Retry-After'], '10');
    assert.deepEqual(JSON.parse(response.body).limits, ['a', 'b']);
  });

  it('a cost that can never be admitted (infinite retry) omits Retry-After and says why', () => {
    const response = limitedResponse(refused('upload', Infinity), { headers: 'none' });
    assert.deepEqual(response.headers, {
      'Content-Type': 'application/problem+json',
      'Cache-Control': 'no-store',
      'Access-Control-Expose-Headers': 'Retry-After',
    });
    assert.equal(JSON.parse(response.body).detail, 'This request costs more than the limit allows at once.');
  });

  it('problem wording and extra headers (X-Auth-Mode) are the caller’s; the extra names are exposed', () => {
    const response = limitedResponse(refused('api', 2_000), {
      headers: 'legacy',
      problem: { type: 'https://example.com/problems/rate-limited', title: 'Slow down', detail: 'Later.' },
      extraHeaders: { 'X-Auth-Mode': 'key' },
    });
    assert.equal(response.headers['X-Auth-Mode'], 'key');
    assert.equal(
      response.headers['Access-Control-Expose-Headers'],
      'Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Auth-Mode',
    );
    assert.deepEqual(JSON.parse(response.body), {
      type: 'https://example.com/problems/rate-limited',
      title: 'Slow down',
      status: 429,
      detail: 'Later.',
      code: 'rate_limited',
      limits: ['api'],
    });
  });

  it('without a refusal it is a developer error, not a 429', () => {
    assert.throws(
      () => limitedResponse(admitted),
      (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'),
    );
  });
});

describe('admittedHeaders', () => {
  it('the rate-limit headers of the deciding bucket(s) and their expose list', () => {
    assert.deepEqual(admittedHeaders(admitted, 'legacy'), {
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Remaining': '99',
      'X-RateLimit-Reset': '1',
      'Access-Control-Expose-Headers':
        'Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset',
    });
  });

  it('"none" gives nothing, unless there are extra headers to send and expose', () => {
    assert.deepEqual(admittedHeaders(admitted, 'none'), {});
    assert.deepEqual(admittedHeaders(admitted, 'none', { 'X-Auth-Mode': 'anon' }), {
      'X-Auth-Mode': 'anon',
      'Access-Control-Expose-Headers': 'Retry-After, X-Auth-Mode',
    });
  });

  it('fail-open decisions give no headers at all', () => {
    for (const style of ['none', 'legacy', 'draft'] as const) {
      assert.deepEqual(admittedHeaders([failOpen('comfort')], style), {}, style);
    }
  });
});

describe('errorResponse', () => {
  const body = (status: number, title: string, detail: string, code: string) => ({
    type: 'about:blank',
    title,
    status,
    detail,
    code,
  });

  it('maps coded errors to 400, 401, 503 and a closed-500, with fixed wording', () => {
    const cases = [
      [
        new SluiceError('SLUICE_KEY_INVALID', 'x'),
        body(
          400,
          'Bad Request',
          'The request carries a value that cannot identify a client.',
          'invalid_request',
        ),
      ],
      [
        new SluiceError('SLUICE_UNAUTHORIZED', 'x'),
        body(401, 'Unauthorized', 'The offered credential was refused.', 'unauthorized'),
      ],
      [
        new SluiceError('SLUICE_STORE_TIMEOUT', 'x'),
        body(
          503,
          'Service Unavailable',
          'Rate limiting is unavailable; try again later.',
          'rate_limit_unavailable',
        ),
      ],
      [
        new SluiceError('SLUICE_STORE_UNAVAILABLE', 'x', { status: 500 }),
        body(500, 'Internal Server Error', 'An internal error occurred.', 'internal_error'),
      ],
    ] as const;
    for (const [error, expected] of cases) {
      const response = errorResponse(error);
      assert.equal(response.status, expected.status);
      assert.deepEqual(response.headers, {
        'Content-Type': 'application/problem+json',
        'Cache-Control': 'no-store',
      });
      assert.deepEqual(JSON.parse(response.body), expected);
    }
  });

  it('a 500 never carries the error message (it may describe internals or user data)', () => {
    const secrets = [
      new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2'),
      new SluiceError('SLUICE_KEY_MISSING', 'key for alice@example.com missing'),
      new SluiceError('SLUICE_CONFIG', 'rateLimit cost must be hunter2'),
      'a thrown string hunter2',
    ];
    for (const error of secrets) {
      const response = errorResponse(error);
      assert.equal(response.status, 500);
      assert.doesNotMatch(response.body, /hunter2|alice|10\.0\.0\.7/);
      assert.equal(JSON.parse(response.body).code, problemCodes[500]);
    }
  });

  it('extra headers (X-Auth-Mode) are kept', () => {
    const response = errorResponse(new SluiceError('SLUICE_STORE_UNAVAILABLE', 'x'), {
      'X-Auth-Mode': 'session',
    });
    assert.equal(response.headers['X-Auth-Mode'], 'session');
  });
});

describe('Cache-Control of problem responses', () => {
  it('defaults to no-store and takes a stricter value such as "private, no-store"', () => {
    const refused = decision('reports', {
      allowed: false,
      limit: 10,
      remaining: 0,
      retryAfterMs: 3_600_000,
      resetMs: 3_600_000,
    });
    assert.equal(limitedResponse(refused).headers['Cache-Control'], 'no-store');
    assert.equal(
      limitedResponse(refused, { cacheControl: 'private, no-store' }).headers['Cache-Control'],
      'private, no-store',
    );
    const unauthorized = errorResponse(
      new SluiceError('SLUICE_UNAUTHORIZED', 'x'),
      undefined,
      'private, no-store',
    );
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.headers['Cache-Control'], 'private, no-store');
  });
});

describe('errorResponse for an overloaded store', () => {
  it('is a 503 with Retry-After: 1, exposed to other origins, and the 503 body', () => {
    const overloaded = new SluiceError('SLUICE_STORE_OVERLOADED', 'the queue is full');
    const response = errorResponse(overloaded, { 'X-Auth-Mode': 'anon' });
    assert.equal(response.status, 503);
    assert.deepEqual(response.headers, {
      'Content-Type': 'application/problem+json',
      'Cache-Control': 'no-store',
      'X-Auth-Mode': 'anon',
      'Retry-After': '1',
      'Access-Control-Expose-Headers': 'Retry-After, X-Auth-Mode',
    });
    assert.equal(JSON.parse(response.body).code, 'rate_limit_unavailable');
  });

  it('a full waiting queue is load too: 503 with Retry-After: 1', () => {
    const crowded = new SluiceError('SLUICE_WAIT_QUEUE_FULL', 'too many calls wait');
    const response = errorResponse(crowded);
    assert.equal(response.status, 503);
    assert.equal(response.headers['Retry-After'], '1');
    assert.equal(response.headers['Access-Control-Expose-Headers'], 'Retry-After');
  });

  it('other 503s carry no Retry-After: an unavailable store may stay so for long', () => {
    const down = new SluiceError('SLUICE_STORE_UNAVAILABLE', 'down');
    assert.equal(errorResponse(down).headers['Retry-After'], undefined);
  });
});
