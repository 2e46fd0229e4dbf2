/**
 * The concurrency cases of the HTTP conformance suite, for adapters that finish a request when
 * its response closes: a lease is held while the request runs and released when the response
 * finishes or the connection closes (never left to expire), the 429 of a refused lease with the
 * draft's `concurrent-requests` unit, and a refused lease refunding the rate limits before it.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { ManualClock } from '../../core/clock.js';
import { concurrencyLimit, type ConcurrencyLimiter } from '../../limiter/concurrency.js';
import { MemoryStore } from '../../stores/memory/store.js';
import type { RequestRateLimit } from '../../http/guard.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** True once `limit` grants a lease on `key` again (probed, and released at once), within 2 s. */
async function freed(limit: ConcurrencyLimiter, key: string): Promise<boolean> {
  const until = performance.now() + 2000;
  while (performance.now() < until) {
    const { lease } = await limit.acquire(key);
    if (lease !== undefined) {
      await limit.release(lease);
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return false;
}

/**
 * Registers the lease cases (inside the suite's `describe`).
 *
 * @example
 * leaseTests(suite)
 */
export function leaseTests(suite: HttpSuite): void {
  const { limiter, withApp, reset } = suite;
  const inFlight = (clock: ManualClock) =>
    concurrencyLimit({ name: 'in-flight', max: 1, leaseTtl: '1m', store: new MemoryStore(), clock });

  it('a concurrency limit: each request holds a lease while it runs, released when its response ends', async () => {
    const clock = reset();
    const limit = inFlight(clock);
    const seen: unknown[] = [];
    const spec: AppSpec = {
      outcome: { limit: { limits: limit, key: () => 'client-1' }, seen: (r) => void seen.push(r) },
    };
    await withApp(spec, async (app) => {
      for (const ask of ['200', '401', 'throw', '200']) {
        const reply = await app.request('POST', '/api/outcome', { 'x-outcome': ask });
        assert.notEqual(reply.status, 429, `${ask}: the lease of the request before was released`);
        assert.ok(await freed(limit, 'client-1'), `${ask}: released once the response ended`);
      }
      const first = seen[0] as RequestRateLimit;
      assert.equal(first.lease?.rule, 'in-flight', 'the request carries its lease');
      assert.deepEqual(
        first.decisions.map((d) => [d.name, d.remaining]),
        [['in-flight', 0]],
      );
    });
  });

  it('a concurrency limit: a client that goes away mid-response releases its lease at once', async () => {
    const clock = reset();
    const limit = inFlight(clock);
    let closed!: () => void;
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
    const spec: AppSpec = { outcome: { limit: { limits: limit, key: () => 'client-1' }, closed } };
    await withApp(spec, async (app) => {
      await app.abandon!('/api/outcome', { 'x-outcome': 'stall' });
      await connectionClosed;
      // No time has passed on the limit's clock: the lease was released, not left to expire.
      const { decision, lease } = await limit.acquire('client-1');
      assert.equal(decision.allowed, true);
      await limit.release(lease!);
    });
  });

  it('a refused lease is a 429 with the concurrent-requests unit, and refunds the rate limit before it', async () => {
    const clock = reset();
    const limit = inFlight(clock);
    const perMinute = limiter('per-minute', 5);
    const held = await limit.acquire('client-1');
    clock.advance('15s');
    const spec: AppSpec = {
      outcome: { limit: { limits: [perMinute, limit], key: () => 'client-1' } },
    };
    await withApp(spec, async (app) => {
      const reply = await app.request('POST', '/api/outcome', { 'x-outcome': '200' });
      assert.equal(reply.status, 429);
      assert.equal(reply.headers['retry-after'], '45', 'when the lease held expires at the latest');
      assert.equal(
        reply.headers['ratelimit-policy'],
        '"per-minute";q=5;w=60, "in-flight";q=1;qu="concurrent-requests"',
      );
      assert.equal(reply.headers['ratelimit'], '"per-minute";r=4;t=12, "in-flight";r=0;t=45');
      assert.equal((await perMinute.peek('client-1')).remaining, 5, 'the rate take was refunded');
      await limit.release(held.lease!);
      const admitted = await app.request('POST', '/api/outcome', { 'x-outcome': '200' });
      assert.equal(admitted.status, 200);
      assert.equal(
        admitted.headers['ratelimit'],
        '"per-minute";r=4;t=12, "in-flight";r=0',
        'a lease admitted says how many slots are left, with no reset',
      );
    });
  });
}
