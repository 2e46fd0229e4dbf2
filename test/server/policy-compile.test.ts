/**
 * A built policy: which requests a rule matches (methods, path patterns, exceptions, host,
 * headers, source ranges), what its key is made of, and that keys are stored as HMACs when the
 * policy has a secret.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pathPattern } from '../../src/server/policy/path-pattern.js';
import type { RequestInput } from '../../src/server/policy/request.js';
import { SECRET, compiled } from './policy-support.js';

const policy = compiled(`version: 1
clients: { trustedProxies: [10.0.0.0/8], proxyHeader: x-real-ip, ipv6Prefix: 56 }
rules:
  - name: reads
    match: { methods: [GET], paths: [/rooms/*/messages], host: Chat.Example }
    key: [address, method, path]
    algorithm: token-bucket
    limit: 5
    period: 1m
  - name: writes
    match: { paths: [/api/**], exceptPaths: [/api/health], headers: { authorization: '*', x-tenant: blue } }
    key: [header:authorization, route, literal:v1, host]
    algorithm: fixed-window
    limit: 5
    window: 1m
  - name: internal
    match: { sourceCidrs: [loopback, 192.0.2.0/24] }
    algorithm: fixed-window
    limit: 5
    window: 1m
`);
after(() => policy.close());

const request = (overrides: Partial<RequestInput>): RequestInput => ({
  method: 'GET',
  path: '/',
  address: '203.0.113.9',
  ...overrides,
});
const matched = (overrides: Partial<RequestInput>) =>
  policy.matching(policy.read(request(overrides))).map((rule) => rule.name);

describe('a built policy', () => {
  it('methods (GET brings HEAD), path patterns in their one spelling, host without port or case', () => {
    const chat = { headers: { host: 'chat.example:8443' } };
    assert.deepEqual(matched({ ...chat, path: '/rooms/42/messages' }), ['reads']);
    assert.deepEqual(matched({ ...chat, method: 'head', path: '//Rooms/42/./messages/?page=2' }), ['reads']);
    assert.deepEqual(matched({ ...chat, path: '/rooms/42/43/messages' }), []);
    assert.deepEqual(matched({ ...chat, method: 'POST', path: '/rooms/42/messages' }), []);
    assert.deepEqual(matched({ path: '/rooms/42/messages', host: 'other.example' }), []);
  });

  it('a final /** is the path and everything below; exceptPaths leave a route out; headers exact or present', () => {
    const headers = { Authorization: 'Bearer t', 'X-Tenant': 'blue' };
    assert.deepEqual(matched({ method: 'POST', path: '/api', headers }), ['writes']);
    assert.deepEqual(matched({ method: 'POST', path: '/api/a/b', headers }), ['writes']);
    assert.deepEqual(matched({ method: 'POST', path: '/apis', headers }), []);
    assert.deepEqual(matched({ method: 'POST', path: '/api/health', headers }), []);
    assert.deepEqual(
      matched({ method: 'POST', path: '/api/a', headers: { ...headers, 'x-tenant': 'red' } }),
      [],
    );
    assert.deepEqual(matched({ method: 'POST', path: '/api/a', headers: { 'x-tenant': 'blue' } }), []);
  });

  it('source ranges are matched against the client address, behind the trusted proxies', () => {
    assert.deepEqual(matched({ address: '192.0.2.7' }), ['internal']);
    assert.deepEqual(matched({ address: '10.1.2.3', headers: { 'x-real-ip': '192.0.2.8' } }), ['internal']);
    // A peer that is not a trusted proxy has its header ignored.
    assert.deepEqual(matched({ address: '203.0.113.1', headers: { 'x-real-ip': '192.0.2.8' } }), []);
    assert.deepEqual(matched({ address: '::1' }), ['internal']);
  });

  it('key parts: the address by its IPv6 prefix, method, normalized path; a missing header is a value of its own', () => {
    const reads = policy.rule('reads')!;
    const v6 = policy.read(request({ path: '/Rooms/1/messages', address: '2001:db8:0:1::7' }));
    assert.equal(reads.keyText(v6), '13:2001:db8::/56|3:GET|17:/rooms/1/messages');
    const writes = policy.rule('writes')!;
    assert.equal(
      writes.keyText(policy.read(request({ headers: { authorization: 'Bearer t', host: 'a.example' } }))),
      '9:=Bearer t|6:writes|2:v1|10:=a.example',
    );
    assert.equal(writes.keyText(policy.read(request({}))), '1:!|6:writes|2:v1|1:!');
  });

  it('path patterns escape every other character', () => {
    assert.ok(pathPattern('/files/*.pdf').test('/files/report.pdf'));
    assert.ok(!pathPattern('/files/*.pdf').test('/files/reportXpdf'));
    assert.ok(pathPattern('/**').test('/anything/at/all'));
  });
});

describe('keys with a pseudonym secret', () => {
  const hashed = compiled(`version: 1
clients: { pseudonymSecret: "${SECRET}", previousSecrets: ["${'b'.repeat(32)}"] }
rules:
  - { name: login, key: [address], algorithm: token-bucket, limit: 2, period: 1h }
`);
  after(() => hashed.close());

  it('a caller key and a request key are stored as HMACs, never as themselves', async () => {
    const keyed = hashed.keyed('ann@example.com');
    assert.match(keyed.key!, /^key:v1:[A-Za-z0-9_-]{43}$/);
    const login = hashed.rule('login')!;
    const outcome = await login.guard.check(hashed.read(request({ address: '203.0.113.9' })), {
      method: 'GET',
      path: '/',
    });
    assert.equal(outcome.action, 'continue');
    // The bucket under the HMAC of the address's key text is the one charged.
    const text = login.keyText(hashed.read(request({ address: '203.0.113.9' })));
    assert.equal((await login.limiters[0]!.peek(hashed.keys.current(text))).remaining, 1);
    assert.equal((await login.limiters[0]!.peek(text)).remaining, 2);
  });

  it('forget reaches every secret generation', () => {
    const all = hashed.keys.all('ann@example.com');
    assert.equal(all.length, 2);
    assert.equal(all[0], hashed.keyed('ann@example.com').key);
    assert.notEqual(all[0], all[1]);
  });
});
