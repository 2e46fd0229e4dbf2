/** A handler that takes itself (sendRateLimited, sendError), and a limit that answers before the body. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { FailingStore } from '../failing-store.js';
import {
  PROBLEM,
  DRAFT_EXPOSE,
  LEGACY_EXPOSE,
  problem429,
  problemError,
  snapshot,
} from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the tests of handlers that take themselves. */
export function handlerTests(suite: HttpSuite): void {
  const { header, limiter, withApp, post, reset } = suite;

  it('a handler that takes itself answers with sendRateLimited (429) and sendError (503) like the middleware', async () => {
    reset();
    const store = new FailingStore();
    const login = limiter('login', 1, { store });
    const spec: AppSpec = {
      login: { limiter: login, key: (request) => `login:${header(request, 'x-login')}` },
    };
    await withApp(spec, async (app) => {
      const who = { 'x-login': 'alice' };
      assert.equal((await post(app, '/api/login', who)).status, 200);
      assert.deepEqual(await post(app, '/api/login', who), {
        status: 429,
        headers: {
          'content-type': PROBLEM,
          'cache-control': 'no-store',
          'ratelimit-policy': '"login";q=1;w=60',
          ratelimit: '"login";r=0;t=60',
          'retry-after': '60',
          'access-control-expose-headers': DRAFT_EXPOSE,
        },
        body: problem429(60, ['login']),
      });
      store.mode = 'reject';
      assert.deepEqual(await post(app, '/api/login', who), problemError(503));
    });
  });

  it('sendRateLimited takes the header style', async () => {
    reset();
    const login = limiter('login', 1);
    const spec: AppSpec = { login: { limiter: login, key: () => 'k', headers: 'legacy' } };
    await withApp(spec, async (app) => {
      await post(app, '/api/login');
      const refused = await post(app, '/api/login');
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['x-ratelimit-limit'], '1');
      assert.equal(refused.headers['ratelimit'], undefined);
      assert.equal(refused.headers['access-control-expose-headers'], LEGACY_EXPOSE);
    });
  });

  it('the limit answers before the body is read: a POST whose body never finishes still gets its 429', async () => {
    reset();
    const things = limiter('things', 1);
    const key = (request: unknown) => `client:${header(request, 'x-client')}`;
    await withApp({ routes: { 'POST /api/things': { limits: things, key } } }, async (app) => {
      assert.equal((await post(app, '/api/things', { 'x-client': 'c' })).status, 200);
      const refused = snapshot(await app.requestWithOpenBody('/api/things', { 'x-client': 'c' }));
      assert.equal(refused.status, 429);
      assert.deepEqual(refused.body, problem429(60, ['things']));
    });
  });
}
