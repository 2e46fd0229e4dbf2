/** Which requests pass a limit: mount points, HEAD, preflights, a limit met twice. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { OK, DRAFT_EXPOSE } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the route matching tests. */
export function routeTests(suite: HttpSuite): void {
  const { limiter, withApp, post, reset } = suite;

  it('exclude matches the full path under a mount point, in every spelling that routes alike', async () => {
    reset();
    const writes = limiter('writes', 10);
    const messages = limiter('messages', 10);
    const spec: AppSpec = {
      everyRoute: {
        limits: writes,
        key: () => 'user-1',
        methods: ['POST'],
        exclude: ['POST /api/messages'],
      },
      everyRouteMount: '/api',
      routes: { 'POST /api/messages': { limits: messages, key: () => 'user-1' } },
    };
    await withApp(spec, async (app) => {
      const sent = await post(app, '/api/messages');
      assert.equal(sent.status, 200);
      assert.equal(sent.headers['ratelimit-policy'], '"messages";q=10;w=60', 'only its own limit');
      for (const path of ['/api/messages/', '/api//messages', '/api/%6Dessages', '/API/Messages?x=1']) {
        await app.request('POST', path);
      }
      assert.equal(
        (await writes.peek('user-1')).remaining,
        10,
        'no spelling of the excluded route was charged',
      );
      assert.equal((await post(app, '/api/things')).headers['ratelimit-policy'], '"writes";q=10;w=60');
      assert.equal((await writes.peek('user-1')).remaining, 9, 'a route under the mount point is charged');
    });
  });

  it('HEAD follows GET, and "GET /health/*" leaves out /health and everything below it', async () => {
    reset();
    const reads = limiter('reads', 1);
    const spec: AppSpec = {
      everyRoute: { limits: reads, key: () => 'client-1', exclude: ['GET /health/*'] },
    };
    await withApp(spec, async (app) => {
      for (const method of ['GET', 'HEAD']) {
        for (const path of ['/health', '/health/', '/health/live', '/%68ealth/live']) {
          const reply = await app.request(method, path);
          assert.notEqual(reply.status, 429, `${method} ${path}`);
          assert.equal(reply.headers['ratelimit'], undefined, `${method} ${path} is not limited`);
        }
      }
      assert.equal((await reads.peek('client-1')).remaining, 1, 'no health check was charged');
      assert.equal((await app.request('GET', '/api/things')).status, 200);
      assert.equal((await app.request('HEAD', '/api/things')).status, 429, 'other routes are limited');
    });
  });

  it('CORS preflights are not charged, unless chargePreflight is true', async () => {
    for (const chargePreflight of [false, true]) {
      reset();
      const api = limiter('api', 1);
      const spec: AppSpec = { everyRoute: { limits: api, key: () => 'client-1', chargePreflight } };
      await withApp(spec, async (app) => {
        const preflight = {
          origin: 'https://app.example',
          'access-control-request-method': 'POST',
        };
        const statuses = [];
        for (let i = 0; i < 2; i++)
          statuses.push((await app.request('OPTIONS', '/api/things', preflight)).status);
        if (chargePreflight) {
          assert.equal(statuses[1], 429, 'charged when asked to');
        } else {
          assert.ok(!statuses.includes(429), 'preflights pass uncharged');
          assert.equal((await api.peek('client-1')).remaining, 1);
          assert.equal((await post(app, '/api/things')).status, 200, 'the request itself is charged');
        }
      });
    }
  });

  it('a request that passes the same limit twice (mounted twice, and again on the route) is charged once', async () => {
    reset();
    const api = limiter('api', 5);
    const spec: AppSpec = {
      everyRoute: { limits: api, key: () => 'client-1' },
      everyRouteTwice: true,
      routes: { 'POST /api/things': { limits: api, key: () => 'client-1' } },
    };
    await withApp(spec, async (app) => {
      assert.deepEqual(await post(app, '/api/things'), {
        status: 200,
        headers: {
          'ratelimit-policy': '"api";q=5;w=60',
          ratelimit: '"api";r=4;t=12',
          'access-control-expose-headers': DRAFT_EXPOSE,
        },
        body: OK,
      });
      assert.equal((await api.peek('client-1')).remaining, 4);
    });
  });
}
