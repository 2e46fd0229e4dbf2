/** What a request is charged to: the routes a limit covers and the key a request is charged under. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { SluiceError, isSluiceError } from '../../core/errors.js';
import type { KeyResult } from '../../http/guard.js';
import { OK, PROBLEM, DRAFT_EXPOSE, problem429, problemError, snapshot } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the route and key tests. */
export function keyTests(suite: HttpSuite): void {
  const { header, limiter, withApp, post, reset } = suite;

  it('reads are not charged to a write budget, and an excluded route is left to its own rule', async () => {
    reset();
    const writes = limiter('writes', 1);
    const messages = limiter('messages', 5);
    const spec: AppSpec = {
      everyRoute: {
        limits: writes,
        key: () => 'user-1',
        methods: ['post', 'PUT', 'PATCH', 'DELETE'],
        exclude: ['POST /api/messages'],
      },
      routes: { 'POST /api/messages': { limits: messages, key: () => 'user-1' } },
    };
    await withApp(spec, async (app) => {
      for (const path of ['/api/things', '/api/things?page=2', '/api/things']) {
        assert.deepEqual(snapshot(await app.request('GET', path)), { status: 200, headers: {}, body: OK });
      }
      for (const path of ['/api/messages', '/api/messages?draft=1']) {
        const sent = await post(app, path);
        assert.equal(sent.status, 200);
        assert.equal(sent.headers['ratelimit-policy'], '"messages";q=5;w=60');
      }
      assert.equal((await writes.peek('user-1')).remaining, 1, 'neither reads nor messages were charged');
      assert.equal((await messages.peek('user-1')).remaining, 3);
      assert.equal((await post(app, '/api/things')).headers['ratelimit-policy'], '"writes";q=1;w=60');
      assert.deepEqual((await post(app, '/api/things')).body, problem429(60, ['writes']));
    });
  });

  it('two requests with the same Idempotency-Key both consume', async () => {
    reset();
    const things = limiter('things', 5);
    await withApp({ routes: { 'POST /api/things': { limits: things, key: () => 'k' } } }, async (app) => {
      const replay = { 'idempotency-key': 'order-42' };
      assert.equal((await post(app, '/api/things', replay)).headers.ratelimit, '"things";r=4;t=12');
      assert.equal((await post(app, '/api/things', replay)).headers.ratelimit, '"things";r=3;t=24');
      assert.equal((await things.peek('k')).remaining, 3);
    });
  });

  it('a key that is not a string is a 400, a missing key a 500 — never a 429, never a pass, nothing consumed', async () => {
    reset();
    const things = limiter('things', 2);
    const errors: unknown[] = [];
    const key = (request: unknown): KeyResult | undefined => {
      const value = header(request, 'x-case');
      if (value === 'invalid') throw new SluiceError('SLUICE_KEY_INVALID', 'login must be a string');
      if (value === 'number') return 42 as unknown as string;
      if (value === 'missing') return undefined;
      return 'k';
    };
    const spec: AppSpec = {
      routes: { 'POST /api/things': { limits: things, key, onError: (e) => errors.push(e) } },
    };
    await withApp(spec, async (app) => {
      assert.deepEqual(await post(app, '/api/things', { 'x-case': 'invalid' }), problemError(400));
      assert.deepEqual(await post(app, '/api/things', { 'x-case': 'number' }), problemError(400));
      assert.deepEqual(await post(app, '/api/things', { 'x-case': 'missing' }), problemError(500));
      assert.equal(errors.length, 1, 'only the 500 is reported to onError');
      assert.ok(isSluiceError(errors[0], 'SLUICE_KEY_MISSING'));
      assert.equal((await things.peek('k')).remaining, 2, 'nothing was consumed');
    });
  });

  it('a key spec with authMode sends X-Auth-Mode on 200 and 429; a refused credential is a 401 that charges nothing', async () => {
    reset();
    const api = limiter('api', 1);
    const key = (request: unknown): KeyResult => {
      const offered = header(request, 'x-api-key');
      if (offered === 'revoked') throw new SluiceError('SLUICE_UNAUTHORIZED', 'the API key was revoked');
      if (offered === 'good') return { key: 'apikey:7', authMode: 'key' };
      return { key: 'anon:127.0.0.1', authMode: 'anon' };
    };
    await withApp({ routes: { 'POST /api/things': { limits: api, key } } }, async (app) => {
      const expose = `${DRAFT_EXPOSE}, X-Auth-Mode`;
      assert.deepEqual(await post(app, '/api/things', { 'x-api-key': 'good' }), {
        status: 200,
        headers: {
          'ratelimit-policy': '"api";q=1;w=60',
          ratelimit: '"api";r=0;t=60',
          'x-auth-mode': 'key',
          'access-control-expose-headers': expose,
        },
        body: OK,
      });
      assert.deepEqual(await post(app, '/api/things', { 'x-api-key': 'good' }), {
        status: 429,
        headers: {
          'content-type': PROBLEM,
          'cache-control': 'no-store',
          'ratelimit-policy': '"api";q=1;w=60',
          ratelimit: '"api";r=0;t=60',
          'x-auth-mode': 'key',
          'retry-after': '60',
          'access-control-expose-headers': expose,
        },
        body: problem429(60, ['api']),
      });
      const anon = await post(app, '/api/things');
      assert.equal(anon.status, 200, 'exactly the chosen bucket is charged: the anonymous one is fresh');
      assert.equal(anon.headers['x-auth-mode'], 'anon');
      assert.deepEqual(await post(app, '/api/things', { 'x-api-key': 'revoked' }), problemError(401));
    });
  });
}
