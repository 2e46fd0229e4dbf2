/** `sluice check <file>`: the normalized policy and exit 0, or every error as file:line:column and exit 1. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadPolicyText } from '../../src/server/policy/load.js';
import { checkPolicyFile, formatPolicy } from '../../src/server/check.js';
import { policyFile, root, runSluice } from './cli-support.js';

const good = `version: 1
rules:
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    algorithm: token-bucket
    limit: 10
    period: 10m
`;

describe('sluice check', () => {
  it('prints the normalized policy as JSON and exits 0', async () => {
    const result = await runSluice(['check', policyFile(good)]);
    assert.equal(result.code, 0, result.stderr);
    const printed = JSON.parse(result.stdout);
    assert.deepEqual(printed.rules[0].limits, [
      { name: 'login', algorithm: 'token-bucket', limit: 10, period: '10m', burst: 10 },
    ]);
    assert.deepEqual(printed.store, { type: 'memory' });
  });

  it('prints YAML with --format yaml', async () => {
    const result = await runSluice(['check', '--format', 'yaml', policyFile(good)]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(parse(result.stdout).rules[0].match.paths[0], '/api/login');
  });

  it('prints a policy file: its YAML output, checked again, loads into the same policy and prints the same', async () => {
    const env = {
      SLUICE_SECRET: 'a test secret of thirty-two bytes',
      SLUICE_TOKEN: 'a token of sixteen+ chars',
    };
    const rich = `version: 1
clients: { pseudonymSecret: \${SLUICE_SECRET}, ipv6Prefix: 56 }
auth: { tokens: [{ token: "\${SLUICE_TOKEN}", scopes: [decide] }] }
upstream: http://127.0.0.1:3000
defaults: { mode: shadow }
rules:
  - name: login
    match: { methods: [POST], paths: [/api/login], headers: { x-nick: '*' } }
    key: [address, header:x-nick]
    algorithm: token-bucket
    limit: 10
    period: 10m
    block: { duration: 15m, factor: 2 }
  - name: reports
    mode: enforce
    deny: [203.0.113.0/24]
    limits:
      - { algorithm: calendar-quota, limit: 1000, timeZone: Europe/Berlin }
      - { algorithm: sliding-window, limit: 20, window: 1m, name: reports-minute }
`;
    const first = await runSluice(['check', '--format', 'yaml', policyFile(rich)], env);
    assert.equal(first.code, 0, first.stderr);
    // Values read from the environment are printed as written, and read again from it.
    assert.match(first.stdout, /pseudonymSecret: \$\{SLUICE_SECRET\}/);
    const again = await runSluice(['check', '--format', 'yaml', policyFile(first.stdout)], env);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, first.stdout);
    assert.deepEqual(loadPolicyText(first.stdout, { env }).policy, loadPolicyText(rich, { env }).policy);
    assert.deepEqual(
      loadPolicyText(formatPolicy(checkPolicyFile(policyFile(rich), env), 'json'), { env }).policy,
      loadPolicyText(rich, { env }).policy,
    );
  });

  it('prints the example policy so that it loads into the same policy', () => {
    const text = readFileSync(join(root, 'sluice.example.yaml'), 'utf8');
    const printed = formatPolicy(checkPolicyFile(join(root, 'sluice.example.yaml'), {}), 'yaml');
    assert.deepEqual(loadPolicyText(printed, { env: {} }).policy, loadPolicyText(text, { env: {} }).policy);
  });

  it('prints every error as file:line:column: message and exits 1, without the secret it read', async () => {
    const file = policyFile(
      `version: 1
store: { type: redis, url: "\${REDIS_URL}", timeout: "\${STORE_TIMEOUT}" }
rules:
  - name: login
    algorithm: token-bucket
    limit: 10
    period: 10 minutes
`,
    );
    const result = await runSluice(['check', file], {
      REDIS_URL: 'redis://:hunter2@x',
      STORE_TIMEOUT: 'hunter2',
    });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      `${file}:2:53: store.timeout (the value of \${STORE_TIMEOUT}) must be a duration such as "10m": a whole number with ms, s, m, h or d\n` +
        `${file}:7:13: rules[0].period must be a duration such as "10m": a whole number with ms, s, m, h or d\n`,
    );
  });

  it('a file that does not exist is an error at its first line', async () => {
    const result = await runSluice(['check', 'no-such-policy.yaml']);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, 'no-such-policy.yaml:1:1: there is no such file\n');
  });

  it('--help describes the command and exits 0', async () => {
    const result = await runSluice(['check', '--help']);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /^Usage: sluice check \[options\] <file>/);
    assert.match(result.stdout, /--format <format>/);
  });
});
