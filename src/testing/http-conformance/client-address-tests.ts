/** Access lists on the client address the adapter finds itself, or refused at setup without one. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../core/errors.js';
import { OK } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the client address tests. */
export function clientAddressTests(suite: HttpSuite): void {
  const { limiter, withApp, post, reset, counted } = suite;

  if (suite.harness.findsClientAddress === true) {
    it('without an address option, lists match the client address found behind the proxies (clientAddress)', async () => {
      reset();
      const things = counted('things');
      const messages = counted('messages');
      const spec: AppSpec = {
        routes: {
          // The default proxies: a proxy on this machine, which writes X-Forwarded-For.
          'POST /api/things': {
            limits: things.limits,
            key: things.key,
            deny: ['203.0.113.7'],
            allow: ['10.0.0.0/8'],
          },
          'POST /api/messages': {
            limits: messages.limits,
            key: messages.key,
            deny: ['203.0.113.7'],
            proxies: { header: 'x-real-ip' },
          },
        },
      };
      await withApp(spec, async (app) => {
        assert.equal((await post(app, '/api/things', { 'x-forwarded-for': '203.0.113.7' })).status, 403);
        assert.deepEqual(
          await post(app, '/api/things', { 'x-forwarded-for': '203.0.113.7, 10.0.0.2' }),
          {
            status: 200,
            headers: {},
            body: OK,
          },
          'the rightmost entry not trusted is the client: 10.0.0.2, allowed',
        );
        assert.equal(things.store.calls, 0);
        assert.equal((await post(app, '/api/things', { 'x-forwarded-for': '198.51.100.1' })).status, 200);
        assert.equal(things.store.calls, 1);
        assert.equal((await post(app, '/api/messages', { 'x-real-ip': '203.0.113.7' })).status, 403);
        const notRead = await post(app, '/api/messages', { 'x-forwarded-for': '203.0.113.7' });
        assert.equal(notRead.status, 200, 'with header x-real-ip, X-Forwarded-For is not read');
      });
    });
  } else {
    it('a list without an address option is refused at setup: there is no socket to read it from', async () => {
      reset();
      const spec: AppSpec = {
        routes: {
          'POST /api/things': { limits: limiter('things', 5), key: () => 'k', deny: ['203.0.113.7'] },
        },
      };
      await assert.rejects(
        async () => (await suite.harness.start(spec)).close(),
        (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /rateLimit address/.test(e.message),
      );
    });
  }
}
