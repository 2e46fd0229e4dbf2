/**
 * The chat service's policy (examples/chat/README.md) over real HTTP: the chat example on a loopback port, a manual clock, fakes that count
 * the work each request ordered. Every budget here is a fresh app's, so tests never share one.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { manualClock } from '../../src/index.js';
import { send, start } from '../shared/test-server.js';
import { createApp } from './app.js';
import { clientAddressOf } from './policy.js';
import { MemoryUsers, type PasswordHasher, type UserStore } from './services.js';

const INVITE = 'open-sesame';

async function chat(t: TestContext, options: { log?: boolean } = {}) {
  const clock = manualClock(Date.UTC(2026, 0, 1, 9));
  const calls = { invite: 0, find: 0, verify: 0 };
  const users = new MemoryUsers();
  const countedUsers: UserStore = {
    find: (nick) => (calls.find++, users.find(nick)),
    create: (nick, hash) => users.create(nick, hash),
  };
  // A transparent fake hash: the tests count calls, they do not test hashing.
  const hasher: PasswordHasher = {
    hash: async (password) => `hash:${password}`,
    verify: async (password, hash) => (calls.verify++, hash === `hash:${password}`),
  };
  const invites = { check: async (code: string) => (calls.invite++, code === INVITE) };
  const app = createApp({
    clock,
    users: countedUsers,
    hasher,
    invites,
    ...(options.log ? {} : { log: () => {} }),
  });
  const running = await start(app.server);
  t.after(() => running.close());
  const call = (path: string, init: Parameters<typeof send>[1] = {}) => send(running.url + path, init);
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    call(path, { body, headers });
  /** A registered user's session token (the user is created directly: this is not under test). */
  const session = async (nick: string) => {
    await users.create(nick, 'hash:correct horse');
    const { body } = await post('/api/login', { nick, password: 'correct horse' });
    return { authorization: `Bearer ${body.token as string}` };
  };
  return { clock, calls, url: running.url, call, post, session };
}

const registration = (nick: unknown, invite: string, ip?: string) => ({
  body: { nick, password: 'a long password', invite },
  headers: ip === undefined ? {} : ({ 'x-real-ip': ip } as Record<string, string>),
});

/** A POST whose body is announced (Content-Length) but never finished. */
function unfinishedPost(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const request = httpRequest(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': '1000', ...headers },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> });
        request.destroy();
      });
    });
    request.write('{"ids":[1,2,'); // 12 of 1000 bytes, and then nothing
  });
}

describe('examples/chat: the chat policy over HTTP', () => {
  it('registration is 5 per hour per IP with burst 5, and its limit runs before the invite check', async (t) => {
    const app = await chat(t);
    for (let i = 0; i < 5; i++) {
      const r = await app.post('/api/register', registration(`guess${i}`, 'wrong-code').body);
      assert.equal(r.status, 403, `wrong code ${i + 1}`);
      assert.equal(r.body.code, 'invalid_invite');
    }
    const sixth = await app.post('/api/register', registration('carol', INVITE).body);
    assert.equal(sixth.status, 429, 'the right code, but after five wrong ones');
    assert.equal(sixth.body.code, 'rate_limited');
    assert.equal(sixth.headers.get('retry-after'), '720'); // one token per 12 minutes
    assert.equal(app.calls.invite, 5, 'the refused attempt never reached the invite check');
    app.clock.advance('12m');
    assert.equal((await app.post('/api/register', registration('carol', INVITE).body)).status, 201);
    assert.equal(app.calls.invite, 6);
  });

  it('a malformed form or a non-string nick gets 400 and consumes nothing', async (t) => {
    const app = await chat(t);
    const malformed = [
      { nick: { $ne: '' }, password: 'a long password', invite: INVITE },
      { nick: ['eve'], password: 'a long password', invite: INVITE },
      { nick: 42, password: 'a long password', invite: INVITE },
      { nick: 'eve', password: 'short', invite: INVITE },
      { nick: 'eve', password: 'a long password' },
      { nick: '   ', password: 'a long password', invite: INVITE },
    ];
    for (const body of malformed) {
      const r = await app.post('/api/register', body);
      assert.equal(r.status, 400, JSON.stringify(body));
    }
    assert.equal((await app.post('/api/register', malformed[0])).body.code, 'invalid_request');
    // All five registrations of the hour are still there.
    for (let i = 0; i < 5; i++)
      assert.equal((await app.post('/api/register', registration(`user${i}`, INVITE).body)).status, 201);
    assert.equal((await app.post('/api/login', { nick: { $gt: '' }, password: 'x' })).status, 400);
    assert.equal(app.calls.invite, 5);
    assert.equal(app.calls.find, 5, 'only the five admitted registrations looked a nick up');
  });

  it('login is 10 per 10 minutes per IP + nick, before storage and hashing', async (t) => {
    const app = await chat(t);
    await app.session('alice'); // one successful login: 1 of alice's 10
    const before = { ...app.calls };
    const spellings = ['alice', 'Alice', ' ALICE ', 'ａｌｉｃｅ']; // one user, one bucket
    for (let i = 0; i < 9; i++) {
      const r = await app.post('/api/login', { nick: spellings[i % 4], password: 'guess' });
      assert.equal(r.status, 401, `guess ${i + 1}`);
    }
    assert.equal(app.calls.find - before.find, 9);
    assert.equal(app.calls.verify - before.verify, 9);
    for (let i = 0; i < 3; i++) {
      const refused = await app.post('/api/login', { nick: 'alice', password: 'correct horse' });
      assert.equal(refused.status, 429);
      assert.equal(refused.body.code, 'rate_limited');
      assert.deepEqual(refused.body.limits, ['login']);
    }
    assert.equal(app.calls.find - before.find, 9, 'refused attempts reached no storage');
    assert.equal(app.calls.verify - before.verify, 9, 'refused attempts hashed nothing');
    // The same IP with another nick, and the same nick from another address, have their own buckets.
    assert.equal((await app.post('/api/login', { nick: 'bob', password: 'x' })).status, 401);
    const elsewhere = { 'x-real-ip': '198.51.100.20' };
    const fromElsewhere = await app.post(
      '/api/login',
      { nick: 'alice', password: 'correct horse' },
      elsewhere,
    );
    assert.equal(fromElsewhere.status, 200);
    app.clock.advance('1m'); // one token per minute
    assert.equal((await app.post('/api/login', { nick: 'alice', password: 'correct horse' })).status, 200);
  });

  it('login cascade: 30 per 10 minutes per IP comes first, so one address cannot rotate throwaway nicks', async (t) => {
    const app = await chat(t);
    const attacker = { 'x-real-ip': '198.51.100.66' };
    // Every nick is new, so the per-(IP, nick) limit never refuses; the per-IP one does, at 31.
    for (let i = 0; i < 30; i++) {
      const r = await app.post('/api/login', { nick: `junk${i}`, password: 'guess' }, attacker);
      assert.equal(r.status, 401, `nick ${i + 1}`);
    }
    const refused = await app.post('/api/login', { nick: 'alice', password: 'guess' }, attacker);
    assert.equal(refused.status, 429);
    assert.deepEqual(refused.body.limits, ['login-ip']);
    assert.equal(refused.headers.get('retry-after'), '20'); // one login per 20 seconds per IP
    assert.equal(app.calls.find, 30, 'the refused attempt reached no storage');
    // Twenty seconds later the address has earned exactly one more login.
    app.clock.advance('20s');
    assert.equal((await app.post('/api/login', { nick: 'alice', password: 'guess' }, attacker)).status, 401);
    assert.equal((await app.post('/api/login', { nick: 'alice', password: 'guess' }, attacker)).status, 429);
    // Another address has its own budget.
    const other = { 'x-real-ip': '198.51.100.67' };
    assert.equal((await app.post('/api/login', { nick: 'junk0', password: 'guess' }, other)).status, 401);
    assert.equal(app.calls.find, 32);
  });

  it('login cascade: a refusal by the per-(IP, nick) limit keeps its per-IP charge (first refusal stops, earlier limits stay charged)', async (t) => {
    const app = await chat(t);
    const from = { 'x-real-ip': '198.51.100.70' };
    for (let i = 0; i < 10; i++)
      assert.equal((await app.post('/api/login', { nick: 'bob', password: 'guess' }, from)).status, 401);
    const eleventh = await app.post('/api/login', { nick: 'bob', password: 'guess' }, from);
    assert.equal(eleventh.status, 429);
    assert.deepEqual(eleventh.body.limits, ['login']);
    // 11 of the IP's 30 are spent: 19 more nicks, then the per-IP limit refuses.
    for (let i = 0; i < 19; i++)
      assert.equal(
        (await app.post('/api/login', { nick: `n${i}`, password: 'x' }, from)).status,
        401,
        `nick ${i + 1}`,
      );
    const over = await app.post('/api/login', { nick: 'n19', password: 'x' }, from);
    assert.equal(over.status, 429);
    assert.deepEqual(over.body.limits, ['login-ip']);
    assert.equal(app.calls.find, 29);
  });

  it('nick_taken (409) lives after the invite check, so nicks cannot be probed without a code', async (t) => {
    const app = await chat(t);
    assert.equal((await app.post('/api/register', registration('Ivan', INVITE).body)).status, 201);
    const probe = await app.post('/api/register', registration('ivan', 'wrong-code').body);
    assert.equal(probe.status, 403, 'a taken nick is not revealed to a wrong code');
    const taken = await app.post('/api/register', registration(' IVAN ', INVITE).body);
    assert.equal(taken.status, 409);
    assert.equal(taken.body.code, 'nick_taken');
  });

  it('X-Real-IP from a loopback peer is honoured, so two client addresses have separate budgets', async (t) => {
    const app = await chat(t);
    const first = '198.51.100.1';
    for (let i = 0; i < 5; i++) await app.call('/api/register', registration(`a${i}`, 'wrong', first));
    assert.equal((await app.call('/api/register', registration('a5', 'wrong', first))).status, 429);
    const second = await app.call('/api/register', registration('b0', 'wrong', '198.51.100.2'));
    assert.equal(second.status, 403, 'another address: admitted, then refused by the invite check');
  });

  it('from a non-loopback peer X-Real-IP is not read at all; from 127.0.0.0/8 and ::1 it is', () => {
    const headers = { 'x-real-ip': '198.51.100.1' };
    assert.deepEqual(clientAddressOf({ peer: '203.0.113.9', headers }), {
      address: '203.0.113.9',
      source: 'untrusted-peer',
    });
    assert.equal(clientAddressOf({ peer: '10.0.0.1', headers }).address, '10.0.0.1');
    for (const peer of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1'])
      assert.deepEqual(clientAddressOf({ peer, headers }), { address: '198.51.100.1', source: 'x-real-ip' });
  });

  it('IPv6 clients share one registration budget per /64', async (t) => {
    const app = await chat(t);
    const net = [
      '2001:db8:1:2::1',
      '2001:db8:1:2::2',
      '2001:db8:1:2:aaaa::9',
      '2001:DB8:1:2::3',
      '2001:db8:1:2::4',
    ];
    for (const [i, ip] of net.entries()) await app.call('/api/register', registration(`v${i}`, 'wrong', ip));
    const sameNet = await app.call('/api/register', registration('v5', INVITE, '2001:db8:1:2:ffff::1'));
    assert.equal(sameNet.status, 429, 'a new address in the same /64 is the same client');
    const otherNet = await app.call('/api/register', registration('v6', INVITE, '2001:db8:1:3::1'));
    assert.equal(otherNet.status, 201);
  });

  it('401 for a missing session comes before the general limit, which answers before the body is read', async (t) => {
    const app = await chat(t);
    const noSession = await unfinishedPost(`${app.url}/api/ack`, {});
    assert.equal(noSession.status, 401);
    assert.equal(noSession.body.code, 'unauthenticated');
    const auth = await app.session('dave');
    for (let i = 0; i < 60; i++)
      assert.equal((await app.post('/api/ack', { ids: [i] }, auth)).status, 204, `ack ${i + 1}`);
    const over = await unfinishedPost(`${app.url}/api/ack`, auth);
    assert.equal(over.status, 429, 'answered although the body never finished');
    assert.equal(over.body.code, 'rate_limited');
    assert.deepEqual(over.body.limits, ['mutations']);
    // The missing session still wins over the exhausted budget.
    assert.equal((await unfinishedPost(`${app.url}/api/ack`, { authorization: 'Bearer nope' })).status, 401);
  });

  it('one general bucket per user for every other mutating route (POST /api/ack, PUT /api/profile); GET is unlimited', async (t) => {
    const app = await chat(t);
    const auth = await app.session('erin');
    for (let i = 0; i < 30; i++) await app.post('/api/ack', { ids: [i] }, auth);
    for (let i = 0; i < 30; i++)
      assert.equal(
        (await app.call('/api/profile', { method: 'PUT', body: { bio: 'hi' }, headers: auth })).status,
        204,
      );
    assert.equal((await app.call('/api/profile', { method: 'PUT', body: {}, headers: auth })).status, 429);
    assert.equal((await app.post('/api/ack', { ids: [] }, auth)).status, 429);
    for (let i = 0; i < 100; i++)
      assert.equal((await app.call('/api/messages', { headers: auth })).status, 200, `read ${i + 1}`);
    // Another user's budget is untouched.
    assert.equal((await app.post('/api/ack', { ids: [] }, await app.session('frank'))).status, 204);
  });

  it('messages are 30 per minute with burst 10, in their own bucket and not in the general one', async (t) => {
    const app = await chat(t);
    const auth = await app.session('grace');
    const message = { channel: 'general', text: 'hello' };
    for (let i = 0; i < 10; i++) assert.equal((await app.post('/api/messages', message, auth)).status, 201);
    const eleventh = await app.post('/api/messages', message, auth);
    assert.equal(eleventh.status, 429);
    assert.deepEqual(eleventh.body.limits, ['messages']);
    assert.equal(eleventh.headers.get('retry-after'), '2');
    // The general bucket (same user, same key text) never saw the messages: its own counter.
    const ack = await app.post('/api/ack', { ids: [] }, auth);
    assert.match(ack.headers.get('ratelimit') ?? '', /"mutations";r=59;/);
    for (let i = 0; i < 59; i++) await app.post('/api/ack', { ids: [] }, auth);
    assert.equal((await app.post('/api/ack', { ids: [] }, auth)).status, 429);
    app.clock.advance('2s');
    assert.equal(
      (await app.post('/api/messages', message, auth)).status,
      201,
      'general exhausted, messages not',
    );
  });

  it('the message limit runs last, after the form and the rights check', async (t) => {
    const app = await chat(t);
    const auth = await app.session('heidi');
    for (let i = 0; i < 10; i++) {
      assert.equal((await app.post('/api/messages', { channel: 'general', text: '' }, auth)).status, 400);
      assert.equal(
        (await app.post('/api/messages', { channel: 'announcements', text: 'x' }, auth)).status,
        403,
      );
    }
    for (let i = 0; i < 10; i++)
      assert.equal((await app.post('/api/messages', { channel: 'random', text: 'hi' }, auth)).status, 201);
  });

  it('no nick and no IP reach the logs, refusals included', async (t) => {
    const lines: string[] = [];
    for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const)
      t.mock.method(console, method, (...args: unknown[]) => lines.push(args.map(String).join(' ')));
    const app = await chat(t, { log: true });
    const ip = '198.51.100.77';
    const nick = 'zebediah';
    for (let i = 0; i < 6; i++) await app.call('/api/register', registration(nick, 'wrong', ip));
    for (let i = 0; i < 11; i++)
      await app.post('/api/login', { nick, password: 'guess' }, { 'x-real-ip': ip });
    await app.post('/api/login', { nick: { nick }, password: 'x' }, { 'x-real-ip': ip });
    const log = lines.join('\n');
    assert.match(log, /POST \/api\/login 429/, 'refusals are logged');
    assert.match(log, /POST \/api\/register 429/);
    assert.doesNotMatch(log, new RegExp(nick, 'i'));
    assert.doesNotMatch(log, /198\.51\.100\.77|127\.0\.0\.1/);
  });
});
