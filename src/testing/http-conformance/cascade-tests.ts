/** Several limits on one request: a cascade wide to narrow, and a limit in shadow mode. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { DecisionEvents } from '../../limiter/events.js';
import { PROBLEM, DRAFT_EXPOSE, problem429 } from './expected-responses.js';
import type { AppSpec, HttpSuite } from './harness.js';

/** Registers the cascade and shadow mode tests. */
export function cascadeTests(suite: HttpSuite): void {
  const { limiter, withApp, post, reset } = suite;

  it('a cascade runs wide to narrow; the first refusal stops it and later limits are not charged', async () => {
    reset();
    const wide = limiter('wide', 2);
    const narrow = limiter('narrow', 5);
    const spec: AppSpec = { routes: { 'POST /api/things': { limits: [wide, narrow], key: () => 'same' } } };
    await withApp(spec, async (app) => {
      await post(app, '/api/things');
      await post(app, '/api/things');
      assert.deepEqual(await post(app, '/api/things'), {
        status: 429,
        headers: {
          'content-type': PROBLEM,
          'cache-control': 'no-store',
          // Only the limit that was asked and refused: the narrow one was never reached.
          'ratelimit-policy': '"wide";q=2;w=60',
          ratelimit: '"wide";r=0;t=60',
          'retry-after': '30',
          'access-control-expose-headers': DRAFT_EXPOSE,
        },
        body: problem429(30, ['wide']),
      });
      assert.equal((await narrow.peek('same')).remaining, 3, 'narrow charged twice, not three times');
      assert.equal((await wide.peek('same')).remaining, 0, 'each limit keeps its own counter');
    });
  });

  it('a limit in shadow mode never refuses and sends no headers; its would-be refusals are reported; the enforcing limit after it still decides', async () => {
    reset();
    const events = new DecisionEvents();
    const seen: string[] = [];
    events.subscribe((event) => void seen.push(`${event.rule}:${event.outcome}`));
    const trial = limiter('trial', 1, { mode: 'shadow', events });
    const enforced = limiter('enforced', 3, { events });
    const spec: AppSpec = {
      routes: { 'POST /api/things': { limits: [trial, enforced], key: () => 'same' } },
    };
    await withApp(spec, async (app) => {
      const first = await post(app, '/api/things');
      assert.equal(first.status, 200);
      assert.equal(first.headers['ratelimit-policy'], '"enforced";q=3;w=60', 'the shadow limit is invisible');
      assert.equal((await post(app, '/api/things')).status, 200, 'the shadow limit would have refused');
      assert.equal((await post(app, '/api/things')).status, 200);
      const refused = await post(app, '/api/things');
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['ratelimit-policy'], '"enforced";q=3;w=60');
      assert.deepEqual((refused.body as { limits?: unknown }).limits, ['enforced']);
    });
    assert.deepEqual(seen, [
      'trial:admitted',
      'enforced:admitted',
      'trial:shadow-refused',
      'enforced:admitted',
      'trial:shadow-refused',
      'enforced:admitted',
      'trial:shadow-refused',
      'enforced:refused',
    ]);
    assert.equal((await trial.peek('same')).remaining, 0, 'charged as enforcement would have been');
  });
}
