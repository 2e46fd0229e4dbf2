/** Nothing logged contains the key. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { tokenBucket } from '../../core/rules/token-bucket.js';
import { createLimiter } from '../../limiter/limiter.js';
import { FailingStore } from '../failing-store.js';
import type { HttpSuite } from './harness.js';

/** Registers the privacy test. */
export function privacyTests(suite: HttpSuite): void {
  const { header, withApp, reset } = suite;

  it('nothing logged on refusals, key errors or store failures contains the key', async (t) => {
    reset();
    const lines: string[] = [];
    const capture = (...args: unknown[]) => void lines.push(inspect(args, { depth: 8 }));
    t.mock.method(console, 'error', capture);
    t.mock.method(console, 'warn', capture);
    t.mock.method(console, 'log', capture);
    const store = new FailingStore();
    // Default logger and onError: what an application that configures nothing would log.
    const login = createLimiter({
      name: 'login',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      clock: suite.clock,
    });
    const key = (request: unknown) =>
      header(request, 'x-case') === 'missing' ? '' : 'login:alice@example.com|203.0.113.7';
    await withApp({ routes: { 'POST /api/things': { limits: login, key } } }, async (app) => {
      const bodies: string[] = [];
      const statuses: number[] = [];
      for (const [mode, which] of [
        ['ok', 'ok'],
        ['ok', 'ok'],
        ['ok', 'missing'],
        ['reject', 'ok'],
        ['hang', 'ok'],
      ] as const) {
        store.mode = mode;
        const reply = await app.request('POST', '/api/things', { 'x-case': which });
        statuses.push(reply.status);
        bodies.push(reply.body);
      }
      assert.deepEqual(statuses, [200, 429, 500, 503, 503]);
      assert.ok(lines.length >= 2, 'the 500 and the store failure were logged');
      for (const text of [...lines, ...bodies]) {
        assert.doesNotMatch(text, /alice|example\.com|203\.0\.113/);
      }
    });
  });
}
