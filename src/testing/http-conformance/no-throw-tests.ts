/** No response path throws, whatever the numbers, the options or the store. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { SluiceError, isSluiceError } from '../../core/errors.js';
import type { Limiter } from '../../limiter/limiter.js';
import { OK, DRAFT_EXPOSE, problemError, snapshot } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the tests of responses that never throw. */
export function noThrowTests(suite: HttpSuite): void {
  const { limiter, withApp, post, reset } = suite;

  it('no response path throws: numbers beyond a header field are clamped, an authMode that is not a token and a throwing onError give problem responses, and no promise is left rejected', async () => {
    reset();
    const rejections: unknown[] = [];
    const recordRejection = (reason: unknown) => void rejections.push(reason);
    process.on('unhandledRejection', recordRejection);
    try {
      const counted = limiter('huge', 5);
      // A limit that reports more than 15 digits and an endless reset: the header writer must cope.
      const huge = {
        name: 'huge',
        rule: counted.rule,
        clock: suite.clock,
        take: async (key: string) => ({
          ...(await counted.take(key)),
          limit: 1e16,
          capacity: 1e16,
          remaining: 1e16 - 1,
          resetMs: Infinity,
        }),
      } as unknown as Limiter;
      const reported: unknown[] = [];
      const spec: AppSpec = {
        routes: {
          'POST /api/things': { limits: huge, key: () => 'k' },
          'POST /api/messages': {
            limits: limiter('modes', 5),
            key: () => ({ key: 'k', authMode: 'anon\r\nX-Injected: 1' }),
            onError: (error) => {
              reported.push(error);
              throw new Error('the logger is down');
            },
          },
        },
      };
      await withApp(spec, async (app) => {
        assert.deepEqual(await post(app, '/api/things'), {
          status: 200,
          headers: {
            'ratelimit-policy': '"huge";q=999999999999999;w=60',
            ratelimit: '"huge";r=999999999999999;t=999999999999999',
            'access-control-expose-headers': DRAFT_EXPOSE,
          },
          body: OK,
        });
        const injected = await app.request('POST', '/api/messages');
        assert.deepEqual(snapshot(injected), problemError(500));
        assert.equal(injected.headers['x-injected'], undefined);
        assert.equal(reported.length, 1);
        assert.ok(isSluiceError(reported[0], 'SLUICE_CONFIG'));
        assert.doesNotMatch((reported[0] as Error).message, /Injected|\r/, 'the value is not echoed');
      });
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(rejections, []);
    } finally {
      process.off('unhandledRejection', recordRejection);
    }
  });

  it('an overloaded store answers 503 with Retry-After: 1, readable cross-origin', async () => {
    reset();
    const things = limiter('things', 5);
    const overloaded = () => {
      throw new SluiceError('SLUICE_STORE_OVERLOADED', 'the store queue is full');
    };
    await withApp({ routes: { 'POST /api/things': { limits: things, key: overloaded } } }, async (app) => {
      const expected = problemError(503);
      expected.headers['retry-after'] = '1';
      expected.headers['access-control-expose-headers'] = 'Retry-After';
      assert.deepEqual(await post(app, '/api/things'), expected);
    });
  });
}
