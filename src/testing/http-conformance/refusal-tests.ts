/** The 429 itself: its problem body, Retry-After, and the headers a page on another origin may read. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { OK, PROBLEM, DRAFT_EXPOSE, problem429 } from './expected-responses.js';
import { ORIGIN, type AppSpec, type HttpSuite } from './harness.js';

/** Registers the tests of a refusal's response. */
export function refusalTests(suite: HttpSuite): void {
  const { limiter, withApp, withBareApp, post, reset } = suite;

  it('over the limit is a 429 problem+json with code rate_limited, the refusing limit, Retry-After and Cache-Control: no-store', async () => {
    reset();
    const things = limiter('things', 2);
    await withApp(
      { routes: { 'POST /api/things': { limits: things, key: () => 'client-1' } } },
      async (app) => {
        assert.deepEqual(await post(app, '/api/things'), {
          status: 200,
          headers: {
            'ratelimit-policy': '"things";q=2;w=60',
            ratelimit: '"things";r=1;t=30',
            'access-control-expose-headers': DRAFT_EXPOSE,
          },
          body: OK,
        });
        assert.equal((await post(app, '/api/things')).status, 200);
        assert.deepEqual(await post(app, '/api/things'), {
          status: 429,
          headers: {
            'content-type': PROBLEM,
            'cache-control': 'no-store',
            'ratelimit-policy': '"things";q=2;w=60',
            ratelimit: '"things";r=0;t=60',
            'retry-after': '30',
            'access-control-expose-headers': DRAFT_EXPOSE,
          },
          body: problem429(30, ['things']),
        });
      },
    );
  });

  it('Retry-After is whole seconds rounded up, at least 1, and the request succeeds once it has passed', async () => {
    reset();
    const things = limiter('things', 2);
    await withApp(
      { routes: { 'POST /api/things': { limits: things, key: () => 'client-1' } } },
      async (app) => {
        await post(app, '/api/things');
        await post(app, '/api/things');
        suite.clock.advance(29_500);
        const refused = await post(app, '/api/things');
        assert.equal(refused.status, 429);
        assert.equal(refused.headers['retry-after'], '1', '0.5 s left is announced as 1 s, never 0');
        assert.deepEqual(refused.body, problem429(1, ['things']));
        suite.clock.advance(500);
        assert.equal((await post(app, '/api/things')).status, 200);
      },
    );
  });

  it('a request without an Origin header is admitted without Access-Control-Expose-Headers; its refusal keeps the list', async () => {
    reset();
    await withBareApp(
      { routes: { 'POST /api/things': { limits: limiter('things', 1), key: () => 'k' } } },
      async (app) => {
        const admitted = await app.request('POST', '/api/things');
        assert.equal(admitted.status, 200);
        assert.equal(admitted.headers['ratelimit'], '"things";r=0;t=60');
        assert.equal(admitted.headers['access-control-expose-headers'], undefined);
        const refused = await app.request('POST', '/api/things');
        assert.equal(refused.status, 429);
        assert.equal(refused.headers['access-control-expose-headers'], DRAFT_EXPOSE);
        const fromPage = await app.request('POST', '/api/things', { origin: ORIGIN });
        assert.equal(fromPage.headers['access-control-expose-headers'], DRAFT_EXPOSE);
      },
    );
  });

  it('Access-Control-Expose-Headers lists Retry-After and the rate-limit headers, merged with what a CORS layer exposed', async () => {
    reset();
    const things = limiter('things', 1);
    const spec: AppSpec = {
      exposedByCors: 'X-Request-Id',
      routes: { 'POST /api/things': { limits: things, key: () => 'client-1' } },
    };
    await withApp(spec, async (app) => {
      const merged = `X-Request-Id, ${DRAFT_EXPOSE}`;
      const admitted = await post(app, '/api/things');
      assert.equal(admitted.status, 200);
      assert.equal(admitted.headers['access-control-expose-headers'], merged);
      const refused = await post(app, '/api/things');
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['access-control-expose-headers'], merged);
    });
  });
}
