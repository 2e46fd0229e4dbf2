/**
 * The policy's own allow and deny lists: every rule reads them before its own, in decisions, in
 * peeks and in the gateway alike (the rule's guard decides them), and their errors are placed.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decide, peek } from '../../src/server/serve/decide.js';
import type { RequestInput } from '../../src/server/policy/request.js';
import { compiled, issuesOf } from './policy-support.js';

const policy = compiled(`version: 1
allow: [10.0.0.0/8]
deny: [203.0.113.0/24, 10.9.0.0/16]
rules:
  - name: login
    match: { paths: [/login] }
    algorithm: fixed-window
    limit: 1
    window: 1m
  - name: search
    match: { paths: [/search] }
    allow: [198.51.100.7]
    deny: [192.0.2.0/24]
    algorithm: fixed-window
    limit: 1
    window: 1m
`);
after(() => policy.close());

const from = (address: string, path: string): { request: RequestInput } => ({
  request: { method: 'GET', path, address },
});

describe('the policy-wide allow and deny lists', () => {
  it('deny is answered 403 by every rule, before its limits', async () => {
    for (const path of ['/login', '/search']) {
      const result = await decide(policy, from('203.0.113.9', path));
      assert.equal(result.status, 403, path);
      assert.equal((result.body as { code: string }).code, 'denied');
      assert.deepEqual(result.decisions, []);
    }
  });

  it('allow lets a client by every rule, uncharged; a rule adds its own to both lists', async () => {
    for (let i = 0; i < 3; i++) {
      assert.equal((await decide(policy, from('10.1.2.3', '/login'))).status, 200);
      assert.equal((await decide(policy, from('10.1.2.3', '/search'))).status, 200);
      assert.equal((await decide(policy, from('198.51.100.7', '/search'))).status, 200);
    }
    assert.equal((await decide(policy, from('198.51.100.7', '/login'))).status, 200);
    assert.equal((await decide(policy, from('198.51.100.7', '/login'))).status, 429);
    assert.equal((await decide(policy, from('192.0.2.1', '/search'))).status, 403);
    assert.equal((await decide(policy, from('192.0.2.1', '/login'))).status, 200);
  });

  it("deny is decided before allow, the policy's and the rule's alike; a peek reads them too", async () => {
    // 10.9.0.0/16 is in the allowed 10.0.0.0/8 and in the denied range: denied.
    assert.equal((await decide(policy, from('10.9.1.1', '/login'))).status, 403);
    assert.equal((await peek(policy, from('10.9.1.1', '/search'))).allowed, false);
    assert.equal((await peek(policy, from('203.0.113.1', '/login'))).allowed, false);
  });

  it('an entry that is no address or range is an error at its line, naming its place only', () => {
    assert.deepEqual(issuesOf('version: 1\nallow: [10.0.0.1/8]\ndeny: [loopback, nope]\nrules: []\n'), [
      '2:9: allow[0] must be a CIDR without host bits set (the network address)',
      '3:18: deny[1] must be an IP address or CIDR without zone id',
    ]);
  });
});
