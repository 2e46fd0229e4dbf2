/** countOnly: a request charged or given back once its response has closed. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestRateLimit } from '../../http/guard.js';
import type { AppSpec, RunningApp, HttpSuite } from './harness.js';
import { leaseTests } from './lease-tests.js';

/** The statuses of `POST /api/outcome` answered as each `x-outcome` asks, in order. */
async function outcomes(app: RunningApp, asks: readonly string[]): Promise<number[]> {
  const statuses: number[] = [];
  for (const ask of asks)
    statuses.push((await app.request('POST', '/api/outcome', { 'x-outcome': ask })).status);
  return statuses;
}

/** Registers the countOnly tests and, since leases are finished the same way, the concurrency tests. */
export function countOnlyTests(suite: HttpSuite): void {
  if (suite.harness.countOnly !== true) return;
  finishingTests(suite);
  carriedTests(suite);
  leaseTests(suite);
}

/** A request charged or given back as its response ends, or as its client goes away. */
function finishingTests(suite: HttpSuite): void {
  const { limiter, withApp, reset } = suite;

  it('countOnly "failed": a client answered 200 is never limited; one answered 401 is refused exactly at the limit', async () => {
    reset();
    const logins = limiter('logins', 2);
    const spec: AppSpec = {
      outcome: { limit: { limits: logins, key: () => 'client-1', countOnly: 'failed' } },
    };
    await withApp(spec, async (app) => {
      assert.deepEqual(await outcomes(app, ['200', '200', '201', '302', '200']), [200, 200, 201, 302, 200]);
      assert.equal((await logins.peek('client-1')).remaining, 2, 'every success was refunded');
      assert.deepEqual(await outcomes(app, ['401', '401', '401', '200']), [401, 401, 429, 429]);
      assert.equal((await logins.peek('client-1')).remaining, 0);
    });
  });

  it('countOnly "succeeded": a client answered 401 is never limited; one answered 200 is refused exactly at the limit', async () => {
    reset();
    const exports = limiter('exports', 2);
    const spec: AppSpec = {
      outcome: { limit: { limits: exports, key: () => 'client-1', countOnly: 'succeeded' } },
    };
    await withApp(spec, async (app) => {
      assert.deepEqual(await outcomes(app, ['401', '404', '500', '401']), [401, 404, 500, 401]);
      assert.equal((await exports.peek('client-1')).remaining, 2, 'every failure was refunded');
      assert.deepEqual(await outcomes(app, ['200', '399', '200', '401']), [200, 399, 429, 429]);
      assert.equal((await exports.peek('client-1')).remaining, 0);
    });
  });

  it('countOnly "failed": a handler that throws (the framework answers 500) counts', async () => {
    reset();
    const calls = limiter('calls', 2);
    const spec: AppSpec = {
      outcome: { limit: { limits: calls, key: () => 'client-1', countOnly: 'failed' } },
    };
    await withApp(spec, async (app) => {
      assert.deepEqual(await outcomes(app, ['throw', 'throw', 'throw']), [500, 500, 429]);
    });
  });

  it('countOnly: a client that goes away before the body ends is finished as failed, whatever the status already sent, and leaves no unhandled rejection', async () => {
    const rejections: unknown[] = [];
    const recordRejection = (reason: unknown) => void rejections.push(reason);
    process.on('unhandledRejection', recordRejection);
    try {
      for (const countOnly of ['failed', 'succeeded'] as const) {
        reset();
        const downloads = limiter('downloads', 3);
        let closed!: () => void;
        const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
        const spec: AppSpec = {
          outcome: { limit: { limits: downloads, key: () => 'client-1', countOnly }, closed },
        };
        await withApp(spec, async (app) => {
          await app.abandon!('/api/outcome', { 'x-outcome': 'stall' });
          await connectionClosed;
          // The 200 head went out, but the response never completed: a failed request.
          assert.equal(
            (await downloads.peek('client-1')).remaining,
            countOnly === 'failed' ? 2 : 3,
            `countOnly ${countOnly}`,
          );
        });
      }
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(rejections, []);
    } finally {
      process.off('unhandledRejection', recordRejection);
    }
  });
}

/** What an admitted request carries: its decisions, and with countOnly its receipts. */
function carriedTests(suite: HttpSuite): void {
  const { limiter, withApp, reset } = suite;

  it('an admitted request carries the decisions of its limits, and with countOnly the receipts', async () => {
    reset();
    const wide = limiter('wide', 5);
    const narrow = limiter('narrow', 3);
    for (const countOnly of [undefined, 'failed'] as const) {
      const seen: unknown[] = [];
      const spec: AppSpec = {
        outcome: {
          limit: { limits: [wide, narrow], key: () => 'client-1', ...(countOnly && { countOnly }) },
          seen: (rateLimit) => void seen.push(rateLimit),
        },
      };
      await withApp(spec, async (app) => {
        assert.deepEqual(await outcomes(app, ['401']), [401]);
      });
      assert.equal(seen.length, 1);
      const { decisions, receipts } = seen[0] as RequestRateLimit;
      assert.deepEqual(
        decisions.map((d) => [d.name, d.allowed, d.remaining]),
        countOnly === undefined
          ? [
              ['wide', true, 4],
              ['narrow', true, 2],
            ]
          : [
              ['wide', true, 3],
              ['narrow', true, 1],
            ],
      );
      assert.deepEqual(
        receipts.map((r) => [r.rule, r.cost]),
        countOnly === undefined
          ? []
          : [
              ['wide', 1],
              ['narrow', 1],
            ],
      );
    }
  });
}
