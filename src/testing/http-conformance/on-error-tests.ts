/** How often onError hears of a limit's failures: once a minute at most, with the count. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../core/errors.js';
import { FailingStore } from '../failing-store.js';
import { problemError } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the onError test. */
export function onErrorTests(suite: HttpSuite): void {
  const { limiter, withApp, post, reset } = suite;

  it("onError hears of a limit's failures at most once a minute, with how many there were", async () => {
    reset();
    const store = new FailingStore();
    const failing = limiter('failing', 5, { store, closedStatus: 500 });
    const reports: [unknown, unknown][] = [];
    const spec: AppSpec = {
      routes: {
        'POST /api/things': {
          limits: failing,
          key: () => 'k',
          onError: (error, details) => void reports.push([error, details]),
        },
      },
    };
    await withApp(spec, async (app) => {
      store.mode = 'reject';
      for (let i = 0; i < 4; i++) assert.deepEqual(await post(app, '/api/things'), problemError(500));
      assert.equal(reports.length, 1, 'one report for the first failure, none for the next ones');
      assert.deepEqual(reports[0]![1], { failures: 1 });
      suite.clock.advance(60_000);
      assert.deepEqual(await post(app, '/api/things'), problemError(500));
      assert.equal(reports.length, 2);
      assert.deepEqual(reports[1]![1], { failures: 4 }, 'the three held back and this one');
      assert.ok(isSluiceError(reports[1]![0], 'SLUICE_STORE_UNAVAILABLE'));
    });
  });
}
