/**
 * `sluice explain <file> '<METHOD> <path>' -H …`, the real CLI as a child process: the rules a
 * request matches (and the conditions the others fail), their keys as stored (pseudonyms, never
 * the address or header values given), what each decides for a first such request, and
 * `--help` of every command.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { withoutValues } from '../../src/server/cli.js';
import { join } from 'node:path';
import { policyFile, root, runSluice } from './cli-support.js';
import { SECRET } from './policy-support.js';

const rules = `rules:
  - name: login-ip
    match: { methods: [POST], paths: [/api/login] }
    key: [address]
    deny: [198.51.100.0/24]
    algorithm: token-bucket
    limit: 30
    period: 10m
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    key: [address, header:x-nick]
    algorithm: token-bucket
    limit: 10
    period: 10m
  - name: reports
    match: { paths: [/api/v1/report], headers: { x-api-key: "*" } }
    key: [header:x-api-key]
    algorithm: fixed-window
    limit: 5
    window: 1m
`;
const withSecret = policyFile(`version: 1\nclients: { pseudonymSecret: "${SECRET}" }\n${rules}`);
const withoutSecret = policyFile(`version: 1\n${rules}`);

const explain = (...args: string[]) => runSluice(['explain', ...args]);

describe('sluice explain', () => {
  it('names the rules that match, their keys as stored and what each would decide', async () => {
    const result = await explain(
      withSecret,
      'POST /api/login',
      '-H',
      'x-forwarded-for: 203.0.113.7',
      '-H',
      'x-nick: ann',
    );
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trimEnd().split('\n');
    assert.match(
      lines[0]!,
      /^POST \/api\/login: client address from the x-forwarded-for header \(the peer is a trusted proxy\); keys stored as HMACs/,
    );
    assert.match(lines[1]!, /^ {2}login-ip {2}matches; key \[address\] stored as key:v1:[\w-]{43}$/);
    assert.match(lines[2]!, /would admit \(login-ip 29 of 30 left\)$/);
    assert.match(
      lines[3]!,
      /^ {2}login {5}matches; key \[address, header:x-nick\] stored as key:v1:[\w-]{43}$/,
    );
    assert.match(lines[4]!, /would admit \(login 9 of 10 left\)$/);
    assert.equal(lines[5], '  reports   does not match (paths, headers)');
    assert.equal(lines[6], 'decision: 200, admitted');
    // Neither the address nor the nick given is printed back.
    assert.ok(!/203\.0\.113\.7|\bann\b/.test(result.stdout.replace(lines[0]!, '')), result.stdout);
  });

  it('counts what is left out of what a bucket holds, its burst, not its rate (the example policy)', async () => {
    const example = join(root, 'sluice.example.yaml');
    const result = await explain(example, 'POST /courses', '-H', 'authorization: Bearer t');
    assert.equal(result.code, 0, result.stderr);
    // writes: 1 a second, holding 10; writes-ip: 3 a second, holding 30.
    assert.match(result.stdout, /would admit \(writes-ip 29 of 30 left\)\n/);
    assert.match(result.stdout, /would admit \(writes 9 of 10 left\)\n/);
    const json = JSON.parse((await explain(example, 'POST /courses', '--format', 'json')).stdout);
    const writes = json.rules.find((r: { rule: string }) => r.rule === 'writes');
    assert.deepEqual(writes.decision.limits, [
      { name: 'writes', allowed: true, remaining: 9, capacity: 10, limit: 1, cost: 1 },
    ]);
  });

  it('a deny-listed client: 403 from the first rule, the next one not asked (JSON)', async () => {
    const result = await explain(
      withSecret,
      'post /api/login',
      '-H',
      'X-Forwarded-For: 198.51.100.7',
      '--format',
      'json',
    );
    assert.equal(result.code, 0, result.stderr);
    const explanation = JSON.parse(result.stdout);
    assert.deepEqual(explanation.request, { method: 'POST', path: '/api/login' });
    assert.equal(explanation.client, 'x-forwarded-for');
    assert.deepEqual(
      explanation.rules.map(
        (r: { rule: string; matches: boolean; decision?: { outcome: string; status: number } }) => [
          r.rule,
          r.matches,
          r.decision?.outcome,
          r.decision?.status,
        ],
      ),
      [
        ['login-ip', true, 'respond', 403],
        ['login', true, 'not asked', 403],
        ['reports', false, undefined, undefined],
      ],
    );
    assert.equal(explanation.status, 403);
    assert.deepEqual(explanation.refusedBy, ['login-ip']);
    assert.ok(!result.stdout.includes('198.51.100.7'));
  });

  it('without a secret keys are stored as they are: shown by a fingerprint, never in clear', async () => {
    const result = await explain(
      withoutSecret,
      'GET /api/v1/report',
      '-H',
      'x-api-key: team-secret-key',
      '--address',
      '192.0.2.44',
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /keys stored as they are \(no clients\.pseudonymSecret\)/);
    assert.match(result.stdout, /client address from the peer \(--address\)/);
    assert.match(
      result.stdout,
      /reports {3}matches; key \[header:x-api-key\] stored as plain text, fingerprint sha256:[0-9a-f]{16}/,
    );
    assert.match(result.stdout, /login-ip {2}does not match \(methods, paths\)/);
    assert.ok(!/team-secret-key|192\.0\.2\.44/.test(result.stdout), result.stdout);
  });

  it('a proxy header from a peer that is not a trusted proxy is not read', async () => {
    const result = await explain(
      withSecret,
      'POST /api/login',
      '-H',
      'x-forwarded-for: 203.0.113.7',
      '--address',
      '192.0.2.10',
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /client address from the peer \(--address\): it is not a trusted proxy/);
  });

  it('refuses a request or a header it cannot read, and reports a policy with errors at its lines', async () => {
    const noPath = await explain(withSecret, 'POST');
    assert.equal(noPath.code, 1);
    assert.match(noPath.stderr, /a request is a method and a path, as 'POST \/api\/login'/);
    const badHeader = await explain(withSecret, 'GET /', '-H', 'x-nick ann-the-nick');
    assert.equal(badHeader.code, 1);
    assert.match(
      badHeader.stderr,
      /option '-H, --header <header>' argument is invalid\. a header is a name, a colon and a value/,
    );
    // The refused value is request data (a nick here): never repeated.
    assert.doesNotMatch(badHeader.stderr, /ann-the-nick/);
    const badRequest = await explain(withSecret, 'POST-/secret-path');
    assert.match(badRequest.stderr, /the value is invalid for argument 'request'/);
    assert.doesNotMatch(badRequest.stderr, /secret-path/);
    const broken = policyFile(
      'version: 1\nrules:\n  - name: x\n    algorithm: token-bucket\n    limit: 0\n    period: 1m\n',
    );
    const result = await explain(broken, 'GET /');
    assert.equal(result.code, 1);
    assert.match(result.stderr, /sluice\.yaml:5:12: rules\[0\]\.limit must be at least 1/);
  });

  it('--help for the program and each command', async () => {
    for (const args of [['--help'], ['check', '--help'], ['serve', '--help'], ['explain', '--help']]) {
      const result = await runSluice(args);
      assert.equal(result.code, 0, args.join(' '));
      assert.match(result.stdout, /^Usage: sluice/, args.join(' '));
    }
    const help = (await runSluice(['explain', '--help'])).stdout;
    for (const option of ['--header', '--address', '--format']) assert.ok(help.includes(option), option);
    assert.ok((await runSluice(['serve', '--help'])).stdout.includes('--no-watch'));
  });
});

describe('command-line errors never repeat the value they refuse', () => {
  // commander's own wording, with the value where it quotes it; whatever the value holds.
  const templates = [
    (v: string) => `error: option '-H, --header <header>' argument '${v}' is invalid. a header is a name`,
    (v: string) => `error: option '--address <address>' value '${v}' from env 'X' is invalid.`,
    (v: string) => `error: command-argument value '${v}' is invalid for argument 'request'. a request is`,
  ];
  it('takes the value out of every message commander writes about one', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.constantFrom(...templates), (value, template) => {
        const shown = withoutValues(template(`SECRET${value}`));
        assert.ok(!shown.includes('SECRET'), shown);
        assert.match(shown, /^error: /);
      }),
    );
  });
});
