/**
 * A negative match: `match: { headers: { name: { absent: true } } }` holds only for a request
 * without that header, so that requests without an API key get a rule of their own.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestInput } from '../../src/server/policy/request.js';
import { compiled, issuesOf } from './policy-support.js';

const policy = compiled(`version: 1
rules:
  - name: anonymous
    match: { headers: { X-Api-Key: { absent: true } } }
    algorithm: fixed-window
    limit: 1
    window: 1m
  - name: keyed
    match: { headers: { x-api-key: '*' } }
    key: [header:x-api-key]
    algorithm: fixed-window
    limit: 5
    window: 1m
  - name: anonymous-writes
    match: { methods: [POST], headers: { x-api-key: { absent: true }, x-tenant: blue } }
    algorithm: fixed-window
    limit: 5
    window: 1m
`);
after(() => policy.close());

const matched = (input: Partial<RequestInput>) =>
  policy
    .matching(policy.read({ method: 'GET', path: '/', address: '203.0.113.9', ...input }))
    .map((rule) => rule.name);

describe('a header asked to be absent', () => {
  it('matches a request without the header, in any case, and no request with it (even empty)', () => {
    assert.deepEqual(matched({}), ['anonymous']);
    assert.deepEqual(matched({ headers: { 'x-api-key': 'k1' } }), ['keyed']);
    assert.deepEqual(matched({ headers: { 'X-API-KEY': '' } }), ['keyed']);
  });

  it('holds with the other conditions: all must hold', () => {
    assert.deepEqual(matched({ method: 'POST', headers: { 'x-tenant': 'blue' } }), [
      'anonymous',
      'anonymous-writes',
    ]);
    assert.deepEqual(matched({ method: 'POST' }), ['anonymous']);
    assert.deepEqual(matched({ method: 'POST', headers: { 'x-tenant': 'blue', 'x-api-key': 'k' } }), [
      'keyed',
    ]);
  });

  it('refuses anything else than a string or { absent: true }, at its line', () => {
    const rule = (value: string) =>
      `version: 1\nrules:\n  - name: r\n    match: { headers: { x-api-key: ${value} } }\n    algorithm: fixed-window\n    limit: 1\n    window: 1m\n`;
    const expected =
      '4:36: rules[0].match.headers.x-api-key must be a header value ("*" for any) or { absent: true }';
    assert.deepEqual(issuesOf(rule('{ absent: false }')), [expected]);
    assert.deepEqual(issuesOf(rule('7')), [expected]);
    assert.deepEqual(issuesOf(rule('{ present: true }')), [expected]);
  });
});
