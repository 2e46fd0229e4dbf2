/** The header styles: none, legacy (X-RateLimit-*) and draft (RateLimit, RateLimit-Policy). */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { OK, PROBLEM, DRAFT_EXPOSE, LEGACY_EXPOSE, problem429 } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the header style tests. */
export function headerStyleTests(suite: HttpSuite): void {
  const { limiter, withApp, post, reset } = suite;

  it('headers "none" send only Retry-After on a refusal', async () => {
    reset();
    const things = limiter('things', 1);
    const spec: AppSpec = {
      routes: { 'POST /api/things': { limits: things, key: () => 'k', headers: 'none' } },
    };
    await withApp(spec, async (app) => {
      assert.deepEqual(await post(app, '/api/things'), { status: 200, headers: {}, body: OK });
      assert.deepEqual(await post(app, '/api/things'), {
        status: 429,
        headers: {
          'content-type': PROBLEM,
          'cache-control': 'no-store',
          'retry-after': '60',
          'access-control-expose-headers': 'Retry-After',
        },
        body: problem429(60, ['things']),
      });
    });
  });

  it('headers "legacy" describe the bucket that decided (the narrowest admitting, then the refusing one)', async () => {
    reset();
    const wide = limiter('wide', 10);
    const narrow = limiter('narrow', 2);
    const spec: AppSpec = {
      routes: { 'POST /api/things': { limits: [wide, narrow], key: () => 'k', headers: 'legacy' } },
    };
    await withApp(spec, async (app) => {
      assert.deepEqual(await post(app, '/api/things'), {
        status: 200,
        headers: {
          'x-ratelimit-limit': '2',
          'x-ratelimit-remaining': '1',
          'x-ratelimit-reset': '30',
          'access-control-expose-headers': LEGACY_EXPOSE,
        },
        body: OK,
      });
      await post(app, '/api/things');
      assert.deepEqual(await post(app, '/api/things'), {
        status: 429,
        headers: {
          'content-type': PROBLEM,
          'cache-control': 'no-store',
          'x-ratelimit-limit': '2',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': '60',
          'retry-after': '30',
          'access-control-expose-headers': LEGACY_EXPOSE,
        },
        body: problem429(30, ['narrow']),
      });
    });
  });

  it('headers "draft" carry one RateLimit-Policy and RateLimit member per limit of a cascade', async () => {
    reset();
    const wide = limiter('wide', 10);
    const narrow = limiter('narrow', 3);
    const spec: AppSpec = { routes: { 'POST /api/things': { limits: [wide, narrow], key: () => 'k' } } };
    await withApp(spec, async (app) => {
      assert.deepEqual(await post(app, '/api/things'), {
        status: 200,
        headers: {
          'ratelimit-policy': '"wide";q=10;w=60, "narrow";q=3;w=60',
          ratelimit: '"wide";r=9;t=6, "narrow";r=2;t=20',
          'access-control-expose-headers': DRAFT_EXPOSE,
        },
        body: OK,
      });
    });
  });
}
