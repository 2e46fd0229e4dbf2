/**
 * A rule's own answer to a request over its limit: another status (503, 403), the problem body's
 * wording, or a body of its own with its content type. Only the refusal of a limit changes; a
 * denied client keeps the library's 403. Bad responses are errors at their place.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestInput } from '../../src/server/policy/request.js';
import { decide } from '../../src/server/serve/decide.js';
import { compiled, issuesOf } from './policy-support.js';

const policy = compiled(`version: 1
rules:
  - name: plain
    match: { paths: [/plain] }
    deny: [203.0.113.0/24]
    response: { status: 503, contentType: text/html; charset=utf-8, body: "<p>Busy, try again soon.</p>" }
    algorithm: fixed-window
    limit: 1
    window: 1m
  - name: worded
    match: { paths: [/worded] }
    response: { status: 403, problem: { title: Quota exhausted, detail: Upgrade your plan. } }
    algorithm: fixed-window
    limit: 1
    window: 1m
  - name: default
    match: { paths: [/default] }
    response: { status: 429 }
    algorithm: fixed-window
    limit: 1
    window: 1m
`);
after(() => policy.close());

const item = (path: string, address = '198.51.100.7'): { request: RequestInput } => ({
  request: { method: 'GET', path, address },
});
async function refused(path: string) {
  assert.equal((await decide(policy, item(path))).status, 200);
  return decide(policy, item(path));
}

describe("a rule's response", () => {
  it('a body of its own, with its status and content type, keeping Retry-After and the rate-limit headers', async () => {
    const result = await refused('/plain');
    assert.equal(result.status, 503);
    assert.equal(result.body, '<p>Busy, try again soon.</p>');
    assert.equal(result.headers['Content-Type'], 'text/html; charset=utf-8');
    assert.ok(Number(result.headers['Retry-After']) > 0);
    assert.ok(result.headers.RateLimit !== undefined);
    assert.deepEqual(result.refusedBy, ['plain']);
  });

  it("the problem body's wording, with the status written in it", async () => {
    const result = await refused('/worded');
    assert.equal(result.status, 403);
    assert.equal(result.headers['Content-Type'], 'application/problem+json');
    const body = result.body as Record<string, unknown>;
    assert.equal(body.status, 403);
    assert.equal(body.title, 'Quota exhausted');
    assert.equal(body.detail, 'Upgrade your plan.');
    assert.equal(body.code, 'rate_limited');
  });

  it("status 429 and no body is the library's answer; a denied client keeps the library's 403", async () => {
    const result = await refused('/default');
    assert.equal(result.status, 429);
    assert.equal((result.body as { status: number }).status, 429);
    const denied = await decide(policy, item('/plain', '203.0.113.5'));
    assert.equal(denied.status, 403);
    assert.equal((denied.body as { code: string }).code, 'denied');
  });

  it('a status other than 429, 503 or 403, a body too long, a body with a problem, a type without a body: errors at their place', () => {
    const rule = (response: string) =>
      `version: 1\nrules:\n  - name: r\n    response: ${response}\n    algorithm: fixed-window\n    limit: 1\n    window: 1m\n`;
    const cases: [string, string][] = [
      ['{ status: 200 }', '4:25: rules[0].response.status must be one of 429, 503 or 403'],
      [`{ body: "${'x'.repeat(4097)}" }`, '4:23: rules[0].response.body must be at most 4096 bytes'],
      [
        '{ body: x, problem: { title: t } }',
        "4:35: rules[0].response.problem is left out with a body of the rule's own (the body replaces the problem body)",
      ],
      [
        '{ contentType: text/plain }',
        '4:30: rules[0].response.contentType is the type of a body: write body too',
      ],
      [
        '{ body: x, contentType: "text/plain\\r\\nx: y" }',
        '4:39: rules[0].response.contentType must be a media type such as "text/plain; charset=utf-8"',
      ],
    ];
    for (const [response, expected] of cases)
      assert.deepEqual(issuesOf(rule(response)), [expected], response);
  });
});
