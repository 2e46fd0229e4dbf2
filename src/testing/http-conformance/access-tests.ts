/** Access lists (deny, allow) and skip: answered before the key and the store. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { OK, PROBLEM, DENIED } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the access list and skip tests. */
export function accessTests(suite: HttpSuite): void {
  const { header, withApp, post, reset, counted, addressHeader } = suite;

  it('deny answers 403 problem+json with code denied before the key and the store; allow passes uncharged; deny wins over allow', async () => {
    reset();
    const things = counted('things');
    const messages = counted('messages');
    const lists = { deny: ['203.0.113.0/24', '2001:db8:bad::/48'], allow: ['10.0.0.0/8', '203.0.113.5'] };
    const spec: AppSpec = {
      routes: {
        'POST /api/things': { limits: things.limits, key: things.key, address: addressHeader, ...lists },
        'POST /api/messages': {
          limits: messages.limits,
          key: messages.key,
          address: addressHeader,
          cacheControl: 'private, no-store',
          ...lists,
        },
      },
    };
    await withApp(spec, async (app) => {
      const denied = {
        status: 403,
        headers: { 'content-type': PROBLEM, 'cache-control': 'no-store' },
        body: DENIED,
      };
      for (const address of ['203.0.113.7', '203.0.113.5', '2001:db8:bad::1', '::ffff:203.0.113.9'])
        assert.deepEqual(await post(app, '/api/things', { 'x-client-address': address }), denied, address);
      assert.deepEqual(await post(app, '/api/messages', { 'x-client-address': '203.0.113.7' }), {
        ...denied,
        headers: { 'content-type': PROBLEM, 'cache-control': 'private, no-store' },
      });
      for (const address of ['10.1.2.3', '::ffff:10.0.0.1']) {
        assert.deepEqual(await post(app, '/api/things', { 'x-client-address': address }), {
          status: 200,
          headers: {},
          body: OK,
        });
      }
      assert.equal(things.seen.keys + things.store.calls + messages.seen.keys + messages.store.calls, 0);
      const other = await post(app, '/api/things', { 'x-client-address': '198.51.100.1' });
      assert.equal(other.headers['ratelimit'], '"things";r=4;t=12', 'a client on neither list is charged');
      assert.equal(things.store.calls, 1);
    });
  });

  it('skip (sync or async) lets a request through untouched; a skip that throws limits it and is reported', async () => {
    reset();
    const things = counted('things');
    const messages = counted('messages');
    const reported: unknown[] = [];
    const spec: AppSpec = {
      routes: {
        'POST /api/things': {
          limits: things.limits,
          key: things.key,
          skip: (request) => header(request, 'x-skip') === 'yes',
        },
        'POST /api/messages': {
          limits: messages.limits,
          key: messages.key,
          skip: async (request) => {
            if (header(request, 'x-skip') === 'broken') throw new Error('the skip failed');
            return header(request, 'x-skip') === 'yes';
          },
          onError: (error) => void reported.push(error),
        },
      },
    };
    await withApp(spec, async (app) => {
      for (const path of ['/api/things', '/api/messages'])
        assert.deepEqual(await post(app, path, { 'x-skip': 'yes' }), {
          status: 200,
          headers: {},
          body: OK,
        });
      assert.equal(things.seen.keys + things.store.calls + messages.seen.keys + messages.store.calls, 0);
      assert.equal(
        (await post(app, '/api/things', { 'x-skip': 'no' })).headers['ratelimit'],
        '"things";r=4;t=12',
      );
      for (let i = 0; i < 2; i++)
        assert.equal((await post(app, '/api/messages', { 'x-skip': 'broken' })).status, 200);
      assert.equal(messages.store.calls, 2, 'a failed skip is no skip: both requests were charged');
      assert.equal(reported.length, 1, 'reported once a minute');
    });
  });
}
