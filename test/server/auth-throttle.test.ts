/**
 * Guesses at the server's tokens are slowed per peer address: the throttle on an injected clock
 * (exact tries, their return, the bound on remembered peers), then through `sluice serve`: of
 * 30 wrong guesses from one address 10 are compared, the rest answered 429 with Retry-After,
 * the right token too from there, while another address is not held up.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { authorizer } from '../../src/server/serve/auth.js';
import { AuthThrottle } from '../../src/server/serve/auth-throttle.js';
import { startSluice, type RunningSluice } from './serve-support.js';

describe('AuthThrottle', () => {
  it('lets a peer fail `limit` times, then gives one try back every period / limit', () => {
    let now = 0;
    const throttle = new AuthThrottle({ limit: 3, periodMs: 3000, now: () => now });
    let compared = 0;
    for (let i = 0; i < 10; i++) {
      if (throttle.waitMs('a') > 0) continue;
      compared++;
      throttle.failed('a');
    }
    assert.equal(compared, 3);
    assert.equal(throttle.waitMs('a'), 1000);
    assert.equal(throttle.waitMs('b'), 0);
    now = 999;
    assert.equal(throttle.waitMs('a'), 1);
    now = 1000;
    assert.equal(throttle.waitMs('a'), 0);
    throttle.failed('a');
    assert.equal(throttle.waitMs('a'), 1000);
  });

  it('remembers at most maxPeers addresses, whatever the flood', () => {
    let now = 0;
    const throttle = new AuthThrottle({ limit: 2, periodMs: 1000, maxPeers: 4, now: () => now });
    for (let i = 0; i < 1000; i++) {
      throttle.failed(`peer-${i}`);
      now += 1;
      assert.ok(throttle.size <= 4);
    }
    // The most recent failures are the ones kept.
    throttle.failed('peer-999');
    assert.ok(throttle.waitMs('peer-999') > 0);
  });
});

describe('authorizer: failed tries by peer', () => {
  const from = (remoteAddress: string, token: string) =>
    ({
      headers: { authorization: `Bearer ${token}` },
      socket: { remoteAddress },
    }) as unknown as IncomingMessage;

  it('counts an IPv6 peer by its /64: rotating through it buys no fresh tries', () => {
    const authorize = authorizer(
      [{ token: 'right-token-0123456789', scopes: ['decide'] }],
      new AuthThrottle(),
    );
    const statuses: number[] = [];
    for (let i = 1; i <= 12; i++)
      statuses.push(authorize(from(`2001:db8:1:2::${i.toString(16)}`, `guess-${i}`), 'decide')!.status);
    assert.deepEqual(statuses, [...Array(10).fill(401), 429, 429]);
    assert.equal(authorize(from('2001:db8:1:3::1', 'right-token-0123456789'), 'decide'), undefined);
    assert.equal(authorize(from('2001:db8:1:2:ffff::1', 'right-token-0123456789'), 'decide')!.status, 429);
  });
});

const TOKEN = 'decide-token-0123456789';

function decide(
  url: string,
  token: string,
  localAddress: string,
): Promise<{ status: number; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/decisions`,
      {
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ items: [{ rule: 'api', key: 'k' }] }));
  });
}

describe('sluice serve: guesses at its tokens', () => {
  let sluice: RunningSluice;
  before(async () => {
    sluice = await startSluice(
      `version: 1\nauth:\n  tokens:\n    - { token: "${TOKEN}", scopes: [decide] }\nrules:\n  - { name: api, algorithm: token-bucket, limit: 100, period: 1m }\n`,
    );
    sluice.sensitive(TOKEN);
  });
  after(async () => {
    await sluice.stop();
  });

  it('of 30 wrong guesses from one address, 10 are compared and 20 answered 429 with Retry-After', async () => {
    const statuses: number[] = [];
    const waits = new Set<string | undefined>();
    for (let i = 0; i < 30; i++) {
      const reply = await decide(sluice.url, `guess-${i}-0123456789abcdef`, '127.0.0.1');
      statuses.push(reply.status);
      if (reply.status === 429) waits.add(reply.retryAfter);
    }
    assert.deepEqual(statuses, [...Array(10).fill(401), ...Array(20).fill(429)]);
    assert.ok([...waits].every((w) => w !== undefined && /^[1-9]\d*$/.test(w)));
    // Nor is the right token compared from there: a guess could not be confirmed.
    assert.equal((await decide(sluice.url, TOKEN, '127.0.0.1')).status, 429);
    // Another address is not held up.
    assert.equal((await decide(sluice.url, TOKEN, '127.0.0.2')).status, 200);
  });

  it("the dashboard's login form counts against the same limit", async () => {
    const login = (token: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          `${sluice.url}/dashboard/login`,
          {
            method: 'POST',
            localAddress: '127.0.0.3',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end(`token=${encodeURIComponent(token)}`);
      });
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push(await login(`guess-${i}-0123456789abcdef`));
    assert.deepEqual(statuses, [...Array(10).fill(401), 429, 429]);
    assert.equal((await decide(sluice.url, TOKEN, '127.0.0.3')).status, 429);
  });
});
