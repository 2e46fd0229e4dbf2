/**
 * The tutorial's rate-limit contract over real HTTP: one write budget per subject, a separate
 * read budget, the 429 contract, replays that still cost, a failing store that is not a 429, and
 * exactness under 50 simultaneous writes. The clock is manual: one token per second is exact.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { manualClock, type Store } from '../../src/index.js';
import { send, start } from '../shared/test-server.js';
import { createApp } from './app.js';
import { Credentials } from './data.js';

async function catalog(t: TestContext, store?: Store) {
  const clock = manualClock(Date.UTC(2026, 2, 1, 12));
  const credentials = new Credentials();
  credentials.sessions.set('sid-a1', 'u17').set('sid-a2', 'u17').set('sid-b1', 'u18');
  credentials.tokens.set('tok-a1', 'u17').set('tok-a2', 'u17');
  const app = createApp({ clock, credentials, ...(store ? { store } : {}) });
  app.courses.byId.set('c003', { id: 'c003', title: 'Quality', owner: 'u99', version: 4 });
  const running = await start(app.server);
  t.after(() => running.close());
  const as = (credential: string): Record<string, string> =>
    credential.startsWith('tok-')
      ? { authorization: `Bearer ${credential}` }
      : { cookie: `sid=${credential}` };
  /** A protected write as `credential`: POST by default, with a JSON body. */
  const write = (
    credential: string,
    path = '/courses',
    init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
  ) =>
    send(running.url + path, {
      method: init.method ?? 'POST',
      headers: { ...as(credential), ...init.headers },
      body: init.body ?? { title: 'Intro to rate limits' },
    });
  const get = (path: string, credential?: string) =>
    send(running.url + path, { headers: credential ? as(credential) : {} });
  return { app, clock, credentials, url: running.url, write, get };
}

describe('examples/catalog (tutorial: subject budgets)', () => {
  it('one write budget per subject across sessions and bearer tokens; rotating credentials gives no new attempts', async (t) => {
    const { write, credentials } = await catalog(t);
    const statuses: number[] = [];
    for (const credential of ['sid-a1', 'tok-a1', 'sid-a2', 'tok-a2', 'sid-a1'])
      statuses.push(
        (await write(credential)).status,
        (await write(credential, '/exports', { body: {} })).status,
      );
    assert.deepEqual(statuses, [201, 202, 201, 202, 201, 202, 201, 202, 201, 202]);
    assert.equal((await write('tok-a2')).status, 429);
    // Alice signs in again and mints a new token: still the same subject, still no tokens.
    credentials.sessions.set('sid-a3', 'u17');
    credentials.tokens.set('tok-a3', 'u17');
    assert.equal((await write('sid-a3')).status, 429);
    assert.equal((await write('tok-a3', '/exports', { body: {} })).status, 429);
    assert.equal((await write('sid-b1')).status, 201, 'another subject has its own budget');
  });

  it("the 429 is the tutorial's problem, with Retry-After and no-store, and the course is not created", async (t) => {
    const { write, app, clock } = await catalog(t);
    for (let i = 0; i < 10; i++) assert.equal((await write('sid-a1')).status, 201);
    const refused = await write('sid-a1');
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.equal(refused.headers.get('cache-control'), 'no-store');
    assert.equal(refused.headers.get('retry-after'), '1', 'one token a second');
    assert.equal(refused.headers.get('ratelimit'), null, 'the contract publishes no remaining budget');
    assert.deepEqual(
      { ...refused.body, limits: undefined },
      {
        type: 'https://catalog.example/problems/write-rate-limit',
        title: 'Исчерпан бюджет изменений',
        status: 429,
        detail: 'Подождите перед следующей попыткой записи.',
        code: 'rate_limited',
        limits: undefined,
      },
    );
    for (let i = 0; i < 5; i++) assert.equal((await write('sid-a1')).status, 429, 'refusals cost nothing');
    assert.equal(app.courses.created, 10, 'no 429 created a course');
    clock.advance('1s');
    assert.equal((await write('sid-a1')).status, 201);
    assert.equal((await write('sid-a1')).status, 429);
    clock.advance('1h'); // an idle bucket fills to 10, never more
    for (let i = 0; i < 10; i++) assert.equal((await write('sid-a1')).status, 201);
    assert.equal((await write('sid-a1')).status, 429);
    assert.equal(app.courses.created, 21);
  });

  it('polling reads have their own budget and never use the write attempts', async (t) => {
    const { write, get } = await catalog(t);
    const job = await write('sid-a1', '/exports', { body: {} });
    for (let i = 0; i < 30; i++)
      assert.equal((await get(`/exports/${job.body.id as string}`, 'sid-a1')).status, 200);
    for (let i = 0; i < 30; i++) assert.equal((await get('/courses', 'tok-a1')).status, 200);
    const over = await get('/courses', 'sid-a2');
    assert.equal(over.status, 429, 'the read budget is per subject too');
    assert.deepEqual(over.body.limits, ['reads']);
    for (let i = 0; i < 9; i++) assert.equal((await write('sid-a1')).status, 201, 'all nine writes left');
    assert.equal((await write('sid-a1')).status, 429);
  });

  it('an Idempotency-Key replay returns the stored result and still consumes a token', async (t) => {
    const { write, app, clock } = await catalog(t);
    const first = await write('sid-a1', '/courses', { headers: { 'idempotency-key': 'k-1' } });
    assert.equal(first.status, 201);
    for (let i = 0; i < 9; i++) {
      const replay = await write('tok-a1', '/courses', { headers: { 'idempotency-key': 'k-1' } });
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(replay.body, first.body);
    }
    assert.equal((await write('sid-a1', '/courses', { headers: { 'idempotency-key': 'k-1' } })).status, 429);
    assert.equal(app.courses.created, 1, 'ten attempts, one course');
    // A key refused by the limit was never accepted: after admission it creates the first resource.
    assert.equal((await write('sid-a1', '/courses', { headers: { 'idempotency-key': 'k-2' } })).status, 429);
    assert.equal(app.courses.created, 1);
    clock.advance('1s');
    const admitted = await write('sid-a1', '/courses', { headers: { 'idempotency-key': 'k-2' } });
    assert.equal(admitted.status, 201);
    assert.equal(admitted.headers.get('idempotent-replayed'), null);
    assert.equal(app.courses.created, 2);
  });

  it('a failing store answers 503, not 429, and applies nothing', async (t) => {
    const warnings = t.mock.method(console, 'warn', () => {});
    const failure = () => Promise.reject(new Error('ECONNREFUSED'));
    // A deliberate test double: a store whose every call fails, as a dead Redis would.
    const down: Store = {
      kind: 'down',
      bind: (name, rule) => ({ name, rule, take: failure, reset: failure, adjust: failure }),
      unbind: () => {},
      takeAll: failure,
    };
    const { write, get, app } = await catalog(t, down);
    const refused = await write('sid-a1');
    assert.equal(refused.status, 503);
    assert.equal(refused.body.code, 'rate_limit_unavailable');
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.equal(app.courses.created, 0);
    assert.equal((await get('/courses', 'sid-a1')).status, 503);
    assert.ok(warnings.mock.callCount() >= 1, 'the failure is logged');
    assert.equal((await write('nobody')).status, 401, 'identification still comes first');
  });

  it('50 simultaneous writes of one subject with a full bucket admit exactly 10 and create exactly 10 courses', async (t) => {
    const { write, app } = await catalog(t);
    const credentials = ['sid-a1', 'sid-a2', 'tok-a1', 'tok-a2'];
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => write(credentials[i % credentials.length] as string)),
    );
    const count = (status: number) => results.filter((r) => r.status === status).length;
    assert.equal(count(201), 10);
    assert.equal(count(429), 40);
    assert.equal(app.courses.created, 10);
  });

  it('a free token grants no right: scope and If-Match are still checked, and each attempt costs', async (t) => {
    const { write } = await catalog(t);
    const mine = await write('sid-a1');
    const id = mine.body.id as string;
    const edit = (course: string, ifMatch: string) =>
      write('tok-a1', `/courses/${course}`, {
        method: 'PUT',
        headers: { 'if-match': ifMatch },
        body: { title: 'New' },
      });
    assert.equal((await edit('c003', '"v4"')).status, 403, "another subject's course");
    assert.equal((await edit(id, '"v0"')).status, 412, 'a stale version');
    const updated = await edit(id, '"v1"');
    assert.equal(updated.status, 200);
    assert.equal(updated.headers.get('etag'), '"v2"');
    assert.equal((await edit(id, '"v1"')).status, 412, 'the retry of a PUT that already went through');
    for (let i = 0; i < 5; i++) await edit('c003', '"v4"');
    assert.equal((await edit(id, '"v2"')).status, 429, 'ten attempts spent, whatever their outcome');
  });
});
