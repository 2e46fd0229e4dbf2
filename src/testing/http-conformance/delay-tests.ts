/** mode "delay": a request over the limit waits for its slot. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { createLimiter } from '../../limiter/limiter.js';
import { MemoryStore } from '../../stores/memory/store.js';
import { OK } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the delay tests. */
export function delayTests(suite: HttpSuite): void {
  const { limiter, withApp, post, reset } = suite;

  if (suite.harness.delays === true) {
    it('mode "delay": a request over the limit waits for its slot instead of a 429; beyond maxWait it is a 429 at once, and the other limits give their charge back', async () => {
      reset();
      const wide = limiter('wide', 10);
      // One a 30 ms: the second request waits 30 ms of real time (the clock stands still, so the
      // waits are computed exactly; only the timers run).
      const narrow = createLimiter({
        name: 'narrow',
        rule: tokenBucket({ limit: 1, period: '30ms' }),
        store: new MemoryStore(),
        clock: suite.clock,
      });
      const spec: AppSpec = {
        routes: {
          'POST /api/things': {
            limits: [wide, narrow],
            key: () => 'client-1',
            mode: 'delay',
            maxWait: '50ms',
          },
        },
      };
      await withApp(spec, async (app) => {
        const first = await post(app, '/api/things');
        const second = await post(app, '/api/things');
        const third = await post(app, '/api/things');
        assert.deepEqual([first.status, first.body], [200, OK]);
        assert.deepEqual([second.status, second.body], [200, OK]);
        assert.equal(third.status, 429);
        assert.equal(third.headers['retry-after'], '1');
        assert.deepEqual((third.body as { limits: string[] }).limits, ['narrow']);
        assert.equal((await wide.peek('client-1')).remaining, 8, 'the refused request gave its charge back');
      });
    });

    it('mode "delay": a client that goes away while it waits gives its slot back, and no promise is left rejected', async () => {
      const rejections: unknown[] = [];
      const recordRejection = (reason: unknown) => void rejections.push(reason);
      process.on('unhandledRejection', recordRejection);
      try {
        reset();
        const slow = limiter('slow', 1);
        let reserved!: () => void;
        const waiting = new Promise<void>((resolve) => (reserved = resolve));
        let events = 0;
        slow.events.subscribe(() => {
          if (++events === 2) reserved();
        });
        const spec: AppSpec = {
          routes: {
            'POST /api/things': { limits: slow, key: () => 'client-1', mode: 'delay', maxWait: '5m' },
          },
        };
        await withApp(spec, async (app) => {
          assert.equal((await post(app, '/api/things')).status, 200);
          const client = await app.leaving!('/api/things', {});
          await waiting; // reserved: the slot a minute away is held
          assert.equal((await slow.peek('client-1')).retryAfterMs, 120_000);
          await client.leave();
          // The refund follows the connection's close; bounded in time, not a timing assertion.
          const until = Date.now() + 5_000;
          while ((await slow.peek('client-1')).retryAfterMs !== 60_000 && Date.now() < until)
            await new Promise((resolve) => setTimeout(resolve, 5));
          assert.equal((await slow.peek('client-1')).retryAfterMs, 60_000, 'the reservation was given back');
        });
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(rejections, []);
      } finally {
        process.off('unhandledRejection', recordRejection);
      }
    });
  }
}
