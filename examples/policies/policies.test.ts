/**
 * The access policy over real HTTP: a denied network gets the 403 problem and never reaches the
 * limit, internal clients and partners pass uncharged, everyone else is limited to 5 a minute,
 * and the decisions are counted from the events. Client addresses come in X-Forwarded-For,
 * honoured because the tests connect from loopback, the trusted proxy of the policy.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ipKey, manualClock } from '../../src/index.js';
import { send, start } from '../shared/test-server.js';
import { createApp } from './app.js';

async function policies(t: TestContext) {
  const clock = manualClock(Date.UTC(2026, 11, 2, 9));
  const app = createApp({ clock, partnerKeys: new Set(['partner-7']) });
  const running = await start(app.server);
  t.after(() => running.close());
  const quote = (client: string, headers: Record<string, string> = {}) =>
    send(`${running.url}/api/quote`, { headers: { 'x-forwarded-for': client, ...headers } });
  /** Units left in a client's bucket: 5 when the limit never charged it. */
  const left = async (client: string) => (await app.api.peek(ipKey(client))).remaining;
  return { ...app, clock, url: running.url, quote, left };
}

describe('policies example', () => {
  it('a denied network gets 403 problem+json with code denied, and is never charged', async (t) => {
    const { quote, left } = await policies(t);
    for (const client of ['203.0.113.9', '2001:db8:bad:1::2', '::ffff:203.0.113.10']) {
      const reply = await quote(client);
      assert.equal(reply.status, 403, client);
      assert.equal(reply.headers.get('content-type'), 'application/problem+json');
      assert.equal(reply.headers.get('cache-control'), 'no-store');
      assert.equal(reply.headers.get('ratelimit'), null);
      assert.deepEqual(reply.body, {
        type: 'about:blank',
        title: 'Forbidden',
        status: 403,
        detail: 'Requests from this client are not accepted.',
        code: 'denied',
      });
      assert.equal(await left(client), 5, 'the limit was never asked');
    }
  });

  it('internal clients are never limited and carry no rate-limit headers', async (t) => {
    const { quote, left } = await policies(t);
    for (let i = 0; i < 8; i++) {
      const reply = await quote(i % 2 === 0 ? '10.20.30.40' : 'fd00::1');
      assert.equal(reply.status, 200);
      assert.equal(reply.headers.get('ratelimit'), null);
    }
    assert.equal(await left('10.20.30.40'), 5);
    assert.equal(await left('fd00::1'), 5);
  });

  it('a partner (async skip) passes uncharged; a wrong partner key is limited like anyone', async (t) => {
    const { quote } = await policies(t);
    for (let i = 0; i < 7; i++) {
      const reply = await quote('198.51.100.1', { 'x-partner-key': 'partner-7' });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers.get('ratelimit'), null);
    }
    const guessed = await quote('198.51.100.1', { 'x-partner-key': 'partner-8' });
    assert.equal(guessed.headers.get('ratelimit'), '"api";r=4;t=12', 'charged as the first of five');
  });

  it('everyone else gets 5 a minute per client address, then 429', async (t) => {
    const { quote, clock } = await policies(t);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await quote('198.51.100.2')).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    assert.equal((await quote('198.51.100.3')).status, 200, 'another client has its own budget');
    clock.advance('12s');
    assert.equal((await quote('198.51.100.2')).status, 200, 'one request back after 12 s');
  });

  it('an address on both lists is denied: deny is decided first', async (t) => {
    // 10.0.0.0/8 is allowed; a denied client that a proxy says came through 10.x is still the
    // rightmost untrusted entry, and that one decides.
    const { quote } = await policies(t);
    assert.equal((await quote('10.1.1.1, 203.0.113.9')).status, 403);
    assert.equal((await quote('203.0.113.9, 10.1.1.1')).status, 200, 'the client is the last untrusted hop');
  });

  it('the decisions are counted from the guard events and the limit events', async (t) => {
    const { quote, url } = await policies(t);
    await quote('203.0.113.1');
    await quote('10.0.0.1');
    await quote('198.51.100.9', { 'x-partner-key': 'partner-7' });
    await quote('198.51.100.9');
    const counts = await send(`${url}/internal/decisions`, { headers: { 'x-forwarded-for': '10.0.0.1' } });
    assert.deepEqual(counts.body, { denied: 1, 'allowed-by-list': 2, skipped: 1, admitted: 1 });
  });
});
