/**
 * The one-line form, `rateLimit({ limit, window })`: a token bucket per client address on a
 * memory store of its own, answering as the full form does; mixed with the full form, refused at
 * setup.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../core/errors.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the one-line form's tests. */
export function quickFormTests(suite: HttpSuite): void {
  const { limiter, withBareApp, reset } = suite;

  it('{ limit, window } limits each client address to limit per window, as the full form answers', async () => {
    // An adapter that finds the client address reads it behind the loopback proxy; another is
    // given where the address is (an `address` option), as its users give it.
    const finds = suite.harness.findsClientAddress === true;
    const spec: AppSpec = {
      routes: {
        'POST /api/things': finds
          ? { limit: 2, window: '1h' }
          : { limit: 2, window: '1h', address: (request) => suite.addressHeader(request) },
      },
    };
    await withBareApp(spec, async (app) => {
      const from = (address: string) =>
        app.request('POST', '/api/things', { [finds ? 'x-forwarded-for' : 'x-client-address']: address });
      const first = await from('203.0.113.10');
      assert.equal(first.status, 200);
      assert.equal(first.headers['ratelimit-policy'], '"rate-limit";q=2;w=3600');
      assert.match(first.headers['ratelimit'] ?? '', /^"rate-limit";r=1;t=\d+$/);
      assert.equal((await from('203.0.113.10')).status, 200);
      const refused = await from('203.0.113.10');
      assert.equal(refused.status, 429);
      assert.equal(JSON.parse(refused.body).code, 'rate_limited');
      assert.deepEqual(JSON.parse(refused.body).limits, ['rate-limit']);
      // Another client address is another bucket.
      assert.equal((await from('203.0.113.11')).status, 200);
    });
  });

  it('{ limit, window } grows into the full form: other options apply, key replaces the address', async () => {
    const spec: AppSpec = {
      routes: {
        'POST /api/things': {
          limit: 1,
          window: '1m',
          name: 'writes',
          headers: 'legacy',
          key: () => 'everyone',
        },
      },
    };
    await withBareApp(spec, async (app) => {
      const from = (address: string) => app.request('POST', '/api/things', { 'x-forwarded-for': address });
      const first = await from('203.0.113.20');
      assert.equal(first.status, 200);
      assert.equal(first.headers['x-ratelimit-limit'], '1');
      const refused = await from('203.0.113.21');
      assert.equal(refused.status, 429);
      assert.deepEqual(JSON.parse(refused.body).limits, ['writes']);
    });
  });

  it('the one-line form mixed with the full form, or half of it, is refused at setup naming the option', async () => {
    reset();
    const mixed = { limits: limiter('things', 5), key: () => 'k', limit: 5, window: '1m' };
    const cases: [AppSpec['routes'], RegExp][] = [
      [{ 'POST /api/things': mixed as never }, /^rateLimit limits must be left out with limit and window/],
      [{ 'POST /api/things': { limit: 5 } as never }, /^rateLimit window must be/],
      [{ 'POST /api/things': { window: '1m' } as never }, /^rateLimit limit must be/],
    ];
    for (const [routes, message] of cases) {
      await assert.rejects(
        async () => (await suite.harness.start({ routes })).close(),
        (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && message.test(e.message),
      );
    }
  });
}
