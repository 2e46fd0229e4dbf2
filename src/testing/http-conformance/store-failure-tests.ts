/** A store that fails or hangs: closed (503, or 500) or open (admitted). */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { FailingStore } from '../failing-store.js';
import { OK, problemError } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the store failure tests. */
export function storeFailureTests(suite: HttpSuite): void {
  const { limiter, withApp, post, reset, quiet } = suite;

  it('a failing store is a 503 under the default closed policy (never a 429), or 500 with closedStatus 500', async () => {
    reset();
    const store = new FailingStore();
    const closed = limiter('closed', 1, { store });
    const closed500 = limiter('closed500', 1, { store, closedStatus: 500 });
    const spec: AppSpec = {
      routes: {
        'POST /api/things': { limits: closed, key: () => 'k' },
        'POST /api/messages': { limits: closed500, key: () => 'k', onError: quiet.onError },
      },
    };
    await withApp(spec, async (app) => {
      store.mode = 'reject';
      for (let i = 0; i < 3; i++) assert.deepEqual(await post(app, '/api/things'), problemError(503));
      assert.deepEqual(await post(app, '/api/messages'), problemError(500));
      store.mode = 'ok';
      assert.equal((await post(app, '/api/things')).status, 200, 'the store decides again once it answers');
    });
  });

  it('a hung store is a 503 once the limit\'s timeout ("20ms") has passed', async () => {
    reset();
    const store = new FailingStore();
    const hung = limiter('hung', 1, { store, timeout: '20ms' });
    await withApp({ routes: { 'POST /api/things': { limits: hung, key: () => 'k' } } }, async (app) => {
      store.mode = 'hang';
      assert.deepEqual(await post(app, '/api/things'), problemError(503));
      assert.equal(hung.stats().timeouts, 1);
    });
  });

  it('failure "open" admits without rate-limit or expose headers (no bucket decided)', async () => {
    reset();
    const store = new FailingStore();
    const comfort = limiter('comfort', 1, { store, failure: 'open' });
    await withApp({ routes: { 'POST /api/things': { limits: comfort, key: () => 'k' } } }, async (app) => {
      store.mode = 'reject';
      for (let i = 0; i < 3; i++) {
        assert.deepEqual(await post(app, '/api/things'), { status: 200, headers: {}, body: OK });
      }
      assert.equal(comfort.stats().failOpenAdmits, 3);
    });
  });
}
