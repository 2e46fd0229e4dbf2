/**
 * The report API's checklist (examples/reports/README.md) over real HTTP: anonymous access, a
 * valid session, two users behind one IP, one user over several IPs, a valid API key, an invalid
 * and a revoked key, a session error, a deleted user, the headers, and account deletion across
 * secret generations.
 * Client addresses come in X-Forwarded-For, honoured because the tests connect from loopback.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { calendarQuota, createLimiter, createPseudonymRing, manualClock } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { closeAppSchema, openAppSchema, postgresUrl, runSchema } from '../../test/support/postgres.js';
import { skipUnlessReachable } from '../../test/support/services.js';
import { send, start } from '../shared/test-server.js';
import { createApp, type ReportsOptions } from './app.js';
import { ApiKeys, MemorySessions, Users, type Session, type UserDirectory } from './data.js';
import { reportQuota } from './policy.js';

const SECRET = 'current-auth-secret-of-at-least-32-bytes';
const OLD_SECRET = 'previous-auth-secret-of-at-least-32-bytes';
const REPORT = '/api/v1/report';

async function reports(t: TestContext, options: Partial<ReportsOptions> = {}) {
  const clock = manualClock(Date.UTC(2026, 7, 25, 9));
  const apiKeys = new ApiKeys();
  apiKeys.add('key-small', { id: 1, dailyLimit: 3 });
  apiKeys.add('key-large', { id: 2, dailyLimit: 1000 });
  apiKeys.add('key-revoked', { id: 3, dailyLimit: 50, revoked: true });
  const calls = { session: 0 };
  const sessions = new MemorySessions();
  sessions.byId.set('sid-1', { userId: 1 });
  sessions.byId.set('sid-2', { userId: 2 });
  sessions.byId.set('sid-incomplete', {});
  const store = {
    get: async (sid: string): Promise<Session | null> => {
      calls.session++;
      if (sid === 'sid-broken') throw new Error('session backend down');
      return sessions.get(sid);
    },
  };
  const users = new Users();
  users.ids.add(1).add(2);
  const app = createApp({
    authSecrets: [SECRET],
    clock,
    apiKeys,
    sessions: store,
    users,
    log: () => {},
    ...options,
  });
  const running = await start(app.server);
  t.after(() => running.close());
  /** A GET (or POST) of the report as `who`: a session id, an API key, both, or nobody. */
  const report = (
    who: {
      sid?: string;
      key?: string;
      apiKeyHeader?: string;
      ip?: string;
      method?: string;
      origin?: string;
    } = {},
  ) => {
    const headers: Record<string, string> = { 'x-forwarded-for': who.ip ?? '203.0.113.10' };
    if (who.origin !== undefined) headers.origin = who.origin;
    if (who.sid !== undefined) headers.cookie = `theme=dark; sid=${who.sid}`;
    if (who.key !== undefined) headers.authorization = `Bearer ${who.key}`;
    if (who.apiKeyHeader !== undefined) headers['x-api-key'] = who.apiKeyHeader;
    const method = who.method ?? 'GET';
    return send(running.url + REPORT, {
      method,
      headers,
      body: method === 'POST' ? { kind: 'usage' } : undefined,
    });
  };
  return { app, clock, calls, users, url: running.url, report };
}

/** The status and the headers the report API promises, as one comparable value. */
const contract = (r: { status: number; headers: Headers }) => ({
  status: r.status,
  mode: r.headers.get('x-auth-mode'),
  limit: r.headers.get('x-ratelimit-limit'),
  remaining: r.headers.get('x-ratelimit-remaining'),
});

describe('examples/reports: one daily quota per identity over HTTP', () => {
  it('anonymous access has 10 reports a day per IP, GET and POST alike; the next UTC day starts over', async (t) => {
    const { report, clock } = await reports(t);
    for (let i = 1; i <= 10; i++) {
      const r = await report({ method: i % 2 === 0 ? 'POST' : 'GET' });
      assert.deepEqual(contract(r), {
        status: i % 2 === 0 ? 201 : 200,
        mode: 'anon',
        limit: '10',
        remaining: String(10 - i),
      });
    }
    const over = await report();
    assert.deepEqual(contract(over), { status: 429, mode: 'anon', limit: '10', remaining: '0' });
    assert.equal(over.body.code, 'rate_limited');
    assert.equal(over.headers.get('retry-after'), String(15 * 3600)); // until midnight UTC
    clock.set(Date.UTC(2026, 7, 26, 0, 0, 1));
    assert.deepEqual(contract(await report()), { status: 200, mode: 'anon', limit: '10', remaining: '9' });
  });

  it('a valid session uses the account bucket, which an exhausted IP bucket does not block', async (t) => {
    const { report } = await reports(t);
    for (let i = 0; i < 10; i++) await report();
    assert.equal((await report()).status, 429, 'the office IP is exhausted');
    assert.deepEqual(contract(await report({ sid: 'sid-1' })), {
      status: 200,
      mode: 'session',
      limit: '10',
      remaining: '9',
    });
  });

  it('two users behind one IP have separate quotas', async (t) => {
    const { report } = await reports(t);
    for (let i = 0; i < 10; i++) await report({ sid: 'sid-1' });
    assert.deepEqual(contract(await report({ sid: 'sid-1' })), {
      status: 429,
      mode: 'session',
      limit: '10',
      remaining: '0',
    });
    assert.deepEqual(contract(await report({ sid: 'sid-2' })), {
      status: 200,
      mode: 'session',
      limit: '10',
      remaining: '9',
    });
    assert.deepEqual(contract(await report()), { status: 200, mode: 'anon', limit: '10', remaining: '9' });
  });

  it('one user over several IPs has one quota', async (t) => {
    const { report } = await reports(t);
    const ips = ['203.0.113.1', '198.51.100.2', '2001:db8::1', '192.0.2.77', '203.0.113.200'];
    for (let i = 0; i < 10; i++) {
      const r = await report({ sid: 'sid-1', ip: ips[i % ips.length] });
      assert.equal(r.headers.get('x-ratelimit-remaining'), String(9 - i));
    }
    assert.equal(
      (await report({ sid: 'sid-1', ip: '192.0.2.200' })).status,
      429,
      'a new IP gives no second quota',
    );
  });

  it('a valid API key has its own daily limit from the table, by Bearer or X-API-Key', async (t) => {
    const { report } = await reports(t);
    assert.deepEqual(contract(await report({ key: 'key-small' })), {
      status: 200,
      mode: 'key',
      limit: '3',
      remaining: '2',
    });
    assert.deepEqual(contract(await report({ apiKeyHeader: 'key-small' })), {
      status: 200,
      mode: 'key',
      limit: '3',
      remaining: '1',
    });
    assert.deepEqual(contract(await report({ key: 'key-small', method: 'POST' })), {
      status: 201,
      mode: 'key',
      limit: '3',
      remaining: '0',
    });
    const over = await report({ key: 'key-small', sid: 'sid-1' });
    assert.deepEqual(contract(over), { status: 429, mode: 'key', limit: '3', remaining: '0' });
    assert.deepEqual(contract(await report({ key: 'key-large' })), {
      status: 200,
      mode: 'key',
      limit: '1000',
      remaining: '999',
    });
    // The machine identity never touched the browser's or the IP's quota.
    assert.equal((await report({ sid: 'sid-1' })).headers.get('x-ratelimit-remaining'), '9');
    assert.equal((await report()).headers.get('x-ratelimit-remaining'), '9');
  });

  it('an invalid or revoked key gets 401 before session and quota, with no fallback', async (t) => {
    const { report, calls } = await reports(t);
    for (const key of ['no-such-key', 'key-revoked']) {
      for (const sid of [undefined, 'sid-1']) {
        const r = await report({ key, ...(sid ? { sid } : {}) });
        assert.equal(r.status, 401, `${key} with ${sid ?? 'no session'}`);
        assert.equal(r.body.code, 'unauthorized');
        assert.equal(r.headers.get('x-ratelimit-remaining'), null, 'no bucket was charged');
      }
    }
    assert.equal((await report({ apiKeyHeader: 'key-revoked' })).status, 401);
    assert.equal(
      (await report({ key: 'key-small', apiKeyHeader: 'key-large' })).status,
      401,
      'two keys at once',
    );
    assert.equal(calls.session, 0, 'the session was never resolved');
    assert.equal((await report({ sid: 'sid-1' })).headers.get('x-ratelimit-remaining'), '9');
    assert.equal((await report()).headers.get('x-ratelimit-remaining'), '9');
  });

  it('a session error or an incomplete session falls back to anon and its IP bucket, and can get 429 there', async (t) => {
    const lines: string[] = [];
    const { report } = await reports(t, { log: (line) => lines.push(line) });
    for (let i = 0; i < 5; i++) await report();
    assert.deepEqual(contract(await report({ sid: 'sid-broken' })), {
      status: 200,
      mode: 'anon',
      limit: '10',
      remaining: '4',
    });
    assert.deepEqual(contract(await report({ sid: 'sid-incomplete' })), {
      status: 200,
      mode: 'anon',
      limit: '10',
      remaining: '3',
    });
    for (let i = 0; i < 3; i++) await report({ sid: 'sid-broken' });
    assert.deepEqual(contract(await report({ sid: 'sid-broken' })), {
      status: 429,
      mode: 'anon',
      limit: '10',
      remaining: '0',
    });
    assert.ok(lines.includes('report: session fell back to anon (session-error)'));
    assert.doesNotMatch(
      lines.join('\n'),
      /backend down|203\.0\.113/,
      'neither the error nor the IP is logged',
    );
  });

  it("a deleted user's session falls back to anon", async (t) => {
    const { report, users } = await reports(t);
    assert.equal((await report({ sid: 'sid-1' })).headers.get('x-auth-mode'), 'session');
    await users.delete(1);
    assert.deepEqual(contract(await report({ sid: 'sid-1' })), {
      status: 200,
      mode: 'anon',
      limit: '10',
      remaining: '9',
    });
  });

  it('the headers describe the chosen bucket, are exposed to other origins, and responses are not cached', async (t) => {
    const { report } = await reports(t);
    const origin = 'https://dashboard.example';
    const ok = await report({ sid: 'sid-1', method: 'POST', origin });
    assert.equal(ok.status, 201);
    assert.equal(ok.headers.get('cache-control'), 'private, no-store');
    assert.equal(ok.headers.get('x-ratelimit-reset'), String(15 * 3600), 'seconds until the quota resets');
    assert.match(ok.headers.get('access-control-expose-headers') ?? '', /X-RateLimit-Remaining.*X-Auth-Mode/);
    // Not from a page on another origin (no Origin header): nobody reads an expose list.
    const direct = await report({ sid: 'sid-1' });
    assert.equal(direct.headers.get('x-ratelimit-remaining'), '8');
    assert.equal(direct.headers.get('access-control-expose-headers'), null);
    for (let i = 0; i < 8; i++) await report({ sid: 'sid-1' });
    const refused = await report({ sid: 'sid-1' });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.equal(refused.headers.get('cache-control'), 'private, no-store');
    assert.match(refused.headers.get('access-control-expose-headers') ?? '', /Retry-After/);
    const unauthorized = await report({ key: 'nope' });
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.headers.get('cache-control'), 'private, no-store');
  });

  it('deleting an account resets its buckets of every secret generation, and nothing else', async (t) => {
    const clock = manualClock(Date.UTC(2026, 7, 25, 9));
    const quota = reportQuota(clock); // one store shared by the deployment before and after rotation
    const before = await reports(t, { authSecrets: [OLD_SECRET], clock, quota });
    for (let i = 0; i < 10; i++) await before.report({ sid: 'sid-1' });
    assert.equal((await before.report({ sid: 'sid-1' })).status, 429);
    // AUTH_SECRET rotates: the new deployment names a new bucket and keeps the old secret second.
    const after = await reports(t, { authSecrets: [SECRET, OLD_SECRET], clock, quota });
    for (let i = 0; i < 3; i++) await after.report({ sid: 'sid-1' });
    for (let i = 0; i < 2; i++) await after.report();
    await after.report({ key: 'key-small' });
    const ring = createPseudonymRing({
      secrets: [SECRET, OLD_SECRET],
      purpose: 'report:account',
      prefix: 'account',
    });
    const [current, previous] = ring.all(1) as [string, string];
    assert.match(current, /^account:v1:[\w-]{43}$/);
    assert.deepEqual(
      after.app.accounts.all(1),
      [current, previous],
      'the app names the account buckets as account:v1:<HMAC>, current secret first',
    );
    assert.equal((await quota.peek(previous)).remaining, 0);
    assert.equal((await quota.peek(current)).remaining, 7);

    const deleted = await send(after.url + '/api/v1/account', {
      method: 'DELETE',
      headers: { cookie: 'sid=sid-1' },
    });
    assert.equal(deleted.status, 204);
    assert.equal((await quota.peek(previous)).remaining, 10);
    assert.equal((await quota.peek(current)).remaining, 10);
    // Other identities' buckets are untouched: the IP's, the API key's, another account's.
    assert.equal((await after.report()).headers.get('x-ratelimit-remaining'), '7');
    assert.equal((await after.report({ key: 'key-small' })).headers.get('x-ratelimit-remaining'), '1');
    assert.equal(
      (await after.report({ sid: 'sid-1' })).headers.get('x-auth-mode'),
      'anon',
      'the user is gone',
    );
  });

  it('on PostgreSQL, the rows the route charged for an account are linked to the user, and deleting the user erases them', async (t) => {
    const skip = await skipUnlessReachable('postgres', postgresUrl);
    if (skip !== false) return t.skip(String(skip));
    const schema = runSchema('reports');
    const users = { schema, table: 'users' };
    const pool = await openAppSchema(schema, users);
    t.after(() => closeAppSchema(pool, schema));
    await pool.query(`INSERT INTO "${schema}".users (id) VALUES (1), (2)`);
    const directory: UserDirectory = {
      exists: async (id) =>
        (await pool.query(`SELECT 1 FROM "${schema}".users WHERE id = $1`, [id])).rowCount === 1,
      delete: async (id) => void (await pool.query(`DELETE FROM "${schema}".users WHERE id = $1`, [id])),
    };
    const clock = manualClock(Date.UTC(2026, 7, 25, 9));
    const store = new PostgresStore({ client: pool, schema, users, timeSource: 'app', timeout: '10s' });
    const quota = createLimiter({
      name: 'reports',
      rule: calendarQuota({ limit: 10 }),
      store,
      clock,
      timeout: '10s',
    });
    const { report, url } = await reports(t, {
      clock,
      quota,
      users: directory,
      accountKey: (userId, bucket) => store.accountKey(userId, bucket),
    });
    const accountRows = async () =>
      Number(
        (
          await pool.query(
            `SELECT count(*) FROM "${schema}".window_counters WHERE account_bucket IS NOT NULL`,
          )
        ).rows[0].count,
      );
    for (let i = 0; i < 2; i++) await report({ sid: 'sid-1' });
    assert.deepEqual(contract(await report({ sid: 'sid-2' })), {
      status: 200,
      mode: 'session',
      limit: '10',
      remaining: '9',
    });
    await report();
    assert.equal(await accountRows(), 2, "each user's row is linked to the user");
    const deleted = await send(url + '/api/v1/account', {
      method: 'DELETE',
      headers: { cookie: 'sid=sid-1' },
    });
    assert.equal(deleted.status, 204);
    assert.equal(await accountRows(), 1, "user 1's row is gone, user 2's stays");
    assert.equal((await report({ sid: 'sid-1' })).headers.get('x-auth-mode'), 'anon', 'the user is gone');
    assert.equal((await report()).headers.get('x-ratelimit-remaining'), '7', 'the IP bucket counts on');
  });
});
