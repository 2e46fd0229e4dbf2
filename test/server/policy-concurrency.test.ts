/**
 * A concurrency rule in a policy (`algorithm: concurrency`): it loads in gateway mode into the
 * library's concurrency limit, `sluice check` prints it back in a form that loads again, and the
 * loader and `sluice check` refuse one that could not work (no upstream, in a limits list, in
 * shadow or delay mode, failing open). The decision API never matches one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isConcurrencyLimiter } from '../../src/limiter/concurrency.js';
import { checkPolicyFile, formatPolicy } from '../../src/server/check.js';
import { PolicyError } from '../../src/server/policy/errors.js';
import { loadPolicyText } from '../../src/server/policy/load.js';
import { decide } from '../../src/server/serve/decide.js';
import { policyFile } from './cli-support.js';
import { compiled, issuesOf } from './policy-support.js';

const gateway = 'version: 1\nupstream: http://127.0.0.1:3000\n';
const inFlight = `rules:
  - name: exports
    match: { paths: [/exports/**] }
    key: [header:x-api-key]
    algorithm: concurrency
    max: 2
`;

describe('a concurrency rule in the policy', () => {
  it('builds the library’s concurrency limit, named as the rule, with a lease ttl of 5m by default', () => {
    const policy = compiled(`${gateway}${inFlight}`);
    try {
      const [rule] = policy.rules;
      assert.deepEqual(rule!.model.concurrency, { name: 'exports', max: 2, leaseTtl: '5m' });
      assert.deepEqual(rule!.limiters, []);
      assert.ok(isConcurrencyLimiter(rule!.concurrency));
      assert.equal(rule!.concurrency?.max, 2);
      assert.equal(rule!.concurrency?.leaseTtlMs, 300_000);
    } finally {
      policy.close();
    }
  });

  it('is printed by sluice check as a rule of its own that loads again into the same policy', () => {
    const text = `${gateway}${inFlight.replace('max: 2', 'max: 2\n    leaseTtl: 10m')}`;
    const printed = checkPolicyFile(policyFile(text));
    const yaml = formatPolicy(printed, 'yaml');
    assert.match(yaml, /algorithm: concurrency\n\s+max: 2\n\s+leaseTtl: 10m/);
    assert.deepEqual(loadPolicyText(yaml).policy, loadPolicyText(text).policy);
  });

  it('is refused without an upstream: the decision API cannot release a slot', () => {
    assert.deepEqual(issuesOf(`version: 1\n${inFlight}`), [
      '6:16: rules[0].algorithm concurrency works in gateway mode only for now (the policy needs upstream or upstreams): the decision API has no way to release a slot yet',
    ]);
    // sluice check says the same, with the file's name.
    assert.throws(
      () => checkPolicyFile(policyFile(`version: 1\n${inFlight}`)),
      (error: unknown) =>
        error instanceof PolicyError && /works in gateway mode only/.test(error.issues[0]!.message),
    );
  });

  it('is refused in a limits list, in shadow or delay mode, and failing open', () => {
    const listed = issuesOf(`${gateway}rules:
  - name: mixed
    limits:
      - { algorithm: token-bucket, limit: 5, period: 1m }
      - { algorithm: concurrency, max: 2 }
`);
    assert.ok(
      listed.some((issue) =>
        /rules\[0\]\.limits\[1\]\.algorithm cannot be concurrency in a limits list/.test(issue),
      ),
      listed.join('\n'),
    );
    const rule = (extra: string) =>
      `${gateway}rules:\n  - { name: r, ${extra}algorithm: concurrency, max: 1 }\n`;
    assert.deepEqual(
      issuesOf(rule('mode: shadow, ')).map((issue) => issue.replace(/^\d+:\d+: /, '')),
      // In the file's order: the failure shadow brings is said at the rule, before its mode.
      [
        'rules[0].failure is open, but a concurrency rule fails closed (no slot without its store): write failure: closed on it',
        'rules[0].mode is shadow, but a concurrency rule only enforces: write mode: enforce on it',
      ],
    );
    assert.match(issuesOf(rule('mode: delay, maxWait: 1s, '))[0]!, /rules\[0\]\.mode is delay/);
    assert.match(issuesOf(rule('failure: open, '))[0]!, /rules\[0\]\.failure is open/);
    // The policy's default mode and failure count as the rule's own.
    assert.match(
      issuesOf(`version: 1\nupstream: http://127.0.0.1:3000\ndefaults: { failure: open }\n${inFlight}`)[0]!,
      /rules\[0\]\.failure is open/,
    );
  });

  it('takes max from 1 to 100,000 and a duration as its lease ttl', () => {
    const rule = (options: string) =>
      `${gateway}rules:\n  - { name: r, algorithm: concurrency, ${options} }\n`;
    assert.match(issuesOf(rule('max: 0'))[0]!, /rules\[0\]\.max must be at least 1/);
    assert.match(issuesOf(rule('max: 100001'))[0]!, /rules\[0\]\.max must be at most 100000/);
    assert.match(
      issuesOf(rule('max: 1, leaseTtl: 60'))[0]!,
      /rules\[0\]\.leaseTtl must be a duration string/,
    );
    assert.match(issuesOf(rule('max: 1, limit: 5'))[0]!, /rules\[0\] has an unknown key "limit"/);
    assert.match(
      issuesOf(`${gateway}rules:\n  - { name: r, algorithm: concurrent, max: 1 }\n`)[0]!,
      /"concurrency"/,
    );
  });

  it('is never matched by a request of the decision API', async () => {
    const policy = compiled(
      `${gateway}${inFlight}  - { name: rate, algorithm: token-bucket, limit: 5, period: 1m }\n`,
    );
    try {
      const result = await decide(policy, {
        request: {
          method: 'GET',
          path: '/exports/1',
          address: '203.0.113.7',
          headers: { 'x-api-key': 'k1' },
        },
      });
      assert.equal(result.status, 200);
      assert.deepEqual(result.rules, ['rate']);
    } finally {
      policy.close();
    }
  });
});
