/**
 * Every class of policy error, with its exact message and place: the schema's, the loader's
 * and the library's own option checks, each at the line and column where the value is written.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isSluiceError } from '../../src/core/errors.js';
import { PolicyError } from '../../src/server/policy/errors.js';
import { loadPolicyText } from '../../src/server/policy/load.js';
import { SECRET, issuesOf, loginPolicy } from './policy-support.js';

const bucket = loginPolicy;

describe('policy errors', () => {
  it('a PolicyError is a SLUICE_CONFIG SluiceError whose message is the first issue', () => {
    try {
      loadPolicyText('version: 2\nrules: []\n', { file: 'p.yaml' });
      assert.fail('accepted');
    } catch (error) {
      assert.ok(error instanceof PolicyError);
      assert.ok(isSluiceError(error, 'SLUICE_CONFIG'));
      assert.equal(error.message, 'p.yaml:1:10: version must be 1');
      assert.equal(error.format(), 'p.yaml:1:10: version must be 1');
    }
  });

  it("YAML that does not parse: yaml's reason at its place, without the quoted line", () => {
    assert.deepEqual(issuesOf('version: 1\nrules: [\n  {name: a\n'), [
      '4:1: not valid YAML: Flow map in block collection must be sufficiently indented and end with a }',
      '4:1: not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ]);
  });

  it('a key written twice', () => {
    assert.deepEqual(issuesOf('version: 1\nrules: []\nversion: 1\n'), [
      '3:1: not valid YAML: Map keys must be unique',
    ]);
  });

  it('an unknown key, at the key, anywhere (a rule, a nested block, the top)', () => {
    assert.deepEqual(issuesOf(bucket('    burts: 3\n    block: { duration: 1m, factr: 2 }\nextra: 1\n')), [
      '7:5: rules[0] has an unknown key "burts"',
      '8:28: rules[0].block has an unknown key "factr"',
      '9:1: the policy has an unknown key "extra"',
    ]);
  });

  it('a value of the wrong type, a missing key, a number out of range', () => {
    assert.deepEqual(
      issuesOf(
        'version: 1\nstore: { type: redis }\nrules:\n  - name: a\n    algorithm: token-bucket\n    limit: "5"\n    period: 1h\n    cost: -1\n',
      ),
      [
        '2:8: store needs "url"',
        '6:12: rules[0].limit must be a whole number',
        '8:11: rules[0].cost must be at least 0',
      ],
    );
  });

  it('a bad duration says what a duration is', () => {
    assert.deepEqual(issuesOf(bucket().replace('period: 10m', 'period: 10 minutes')), [
      '6:13: rules[0].period must be a duration such as "10m": a whole number with ms, s, m, h or d',
    ]);
  });

  it('a duration written as a bare number suggests the string to write, with its unit', () => {
    assert.deepEqual(
      issuesOf(
        bucket().replace('period: 10m', 'period: 60\n    block: { duration: 0 }') +
          '  - { name: b, limits: [{ algorithm: fixed-window, limit: 1, window: 60 }] }\n',
      ),
      [
        '6:13: rules[0].period must be a duration string with a unit: "60s" for seconds, "60ms" for milliseconds (a bare number has no unit)',
        '7:24: rules[0].block.duration must be a duration string such as "10m": a whole number with ms, s, m, h or d',
        '8:70: rules[1].limits[0].window must be a duration string with a unit: "60s" for seconds, "60ms" for milliseconds (a bare number has no unit)',
      ],
    );
  });

  it('an unknown algorithm lists the known ones; a rule with neither algorithm nor limits says so', () => {
    assert.deepEqual(
      issuesOf(
        'version: 1\nrules:\n  - name: a\n    algorithm: leaky-bucket\n  - name: b\n    key: [address]\n',
      ),
      [
        '4:16: rules[0].algorithm must be one of "token-bucket", "fixed-window", "sliding-window", "calendar-quota", "anchored-window" or "concurrency"',
        '5:5: rules[1] needs an algorithm ("token-bucket", "fixed-window", "sliding-window", "calendar-quota", "anchored-window" or "concurrency") or a list of limits',
      ],
    );
  });

  it('a rule with limits may not also hold a limit of its own', () => {
    assert.deepEqual(
      issuesOf(
        'version: 1\nrules:\n  - name: a\n    limit: 5\n    limits:\n      - { algorithm: fixed-window, limit: 5, window: 1m }\n',
      ),
      ['4:5: rules[0] has an unknown key "limit"'],
    );
  });

  it('an unset environment variable names the variable and the line, never a value', () => {
    assert.deepEqual(issuesOf('version: 1\nstore:\n  type: redis\n  url: "${REDIS_URL}"\nrules: []\n'), [
      '4:8: the environment variable REDIS_URL is not set',
    ]);
    assert.deepEqual(
      issuesOf('version: 1\nrules: []\nauth: { tokens: [{ token: "${TOK", scopes: [decide] }] }\n'),
      ['3:27: a "${" that names no variable: write ${NAME} (letters, digits, _) or $${ for a literal "${"'],
    );
  });

  it('a wrong value read from the environment is "the value of ${NAME}", never the value', () => {
    const lines = issuesOf('version: 1\nstore: { type: redis, url: x, timeout: "${TIMEOUT}" }\nrules: []\n', {
      TIMEOUT: 'soon-secret-text',
    });
    assert.deepEqual(lines, [
      '2:40: store.timeout (the value of ${TIMEOUT}) must be a duration such as "10m": a whole number with ms, s, m, h or d',
    ]);
    assert.ok(!lines.join('').includes('soon-secret-text'));
  });

  it('$${ is a literal ${ and reads no variable', () => {
    const loaded = loadPolicyText(
      'version: 1\nrules:\n  - { name: a, algorithm: token-bucket, limit: 1, period: 1s, match: { headers: { x-t: "$${X}" } } }\n',
      { env: {} },
    );
    assert.deepEqual(loaded.policy.rules[0]!.match.headers, { 'x-t': '${X}' });
  });

  it('two rules of one name, and a limit named like another rule', () => {
    assert.deepEqual(
      issuesOf(
        bucket(
          '  - { name: login, algorithm: fixed-window, limit: 1, window: 1m }\n' +
            '  - name: other\n    limits:\n      - { name: login, algorithm: fixed-window, limit: 1, window: 1m }\n',
        ),
      ),
      [
        '7:13: rules[1].name repeats the name of rules[0]: rule names are unique',
        '10:9: rules[2].limits[0] names a limit "login" as rules[0] does: limit names are unique',
      ],
    );
  });

  it('a bad CIDR in any address list, at its entry', () => {
    assert.deepEqual(
      issuesOf(
        'version: 1\nclients: { trustedProxies: [loopback, 10.0.0.1/8] }\nrules:\n' +
          '  - { name: a, algorithm: token-bucket, limit: 1, period: 1s, deny: [203.0.113.0/24, nope], match: { sourceCidrs: [10.0.0.0/33] } }\n',
      ),
      [
        '2:39: clients.trustedProxies[1] must be a CIDR without host bits set (the network address)',
        '4:86: rules[0].deny[1] must be an IP address or CIDR without zone id',
        '4:116: rules[0].match.sourceCidrs[0] must be a prefix length of at most 32',
      ],
    );
  });

  it("the library's own option checks, at the option's line: a block max below its duration, a time zone", () => {
    assert.deepEqual(
      issuesOf(
        bucket('    block: { duration: 1h, max: 10m }\n') +
          '  - name: quota\n    algorithm: calendar-quota\n    limit: 10\n    timeZone: Mars/Olympus\n',
      ),
      [
        '7:33: rules[0].block.max is not accepted: tokenBucket block max must be a duration at least as long as duration',
        '11:15: rules[1].timeZone is not accepted: calendarQuota timeZone must be an IANA time zone name such as "UTC" or "Europe/Berlin"',
      ],
    );
  });

  it('a shadow rule with several limits is refused by the library (all or nothing needs every limit to enforce)', () => {
    assert.deepEqual(
      issuesOf(
        'version: 1\nrules:\n  - name: a\n    mode: shadow\n    limits:\n' +
          '      - { algorithm: fixed-window, limit: 5, window: 1m }\n      - { algorithm: fixed-window, limit: 50, window: 1h }\n',
      ),
      [
        '3:5: rules[0] is not accepted: createCascade limiters must be limits that enforce in an all-or-nothing cascade: a limit in shadow mode cannot veto the group (use first-refusal)',
      ],
    );
  });

  it('a shadow rule that fails closed is refused; a secret that is too short names its length only', () => {
    assert.deepEqual(
      issuesOf(
        bucket('    mode: shadow\n    failure: closed\n') +
          `clients: { pseudonymSecret: short, previousSecrets: ["${SECRET}", "${SECRET}"] }\n`,
      ),
      [
        '8:14: rules[0].failure is not accepted: limiter "login" failure must be "open" (or left out) for a limit in shadow mode, which never refuses',
        '9:29: clients.pseudonymSecret must be at least 32 bytes; received 5 bytes',
      ],
    );
  });

  it('a repeated secret is refused at the repeat', () => {
    assert.deepEqual(
      issuesOf(bucket() + `clients:\n  pseudonymSecret: "${SECRET}"\n  previousSecrets: ["${SECRET}"]\n`),
      ['9:21: clients.previousSecrets[0] repeats an earlier secret'],
    );
  });

  it('an empty file, a list, a scalar: the policy must be a mapping', () => {
    for (const text of ['', '- a\n', 'just text\n'])
      assert.deepEqual(issuesOf(text), ['1:1: the policy must be a mapping']);
  });

  it('errors come in file order, all of them at once', () => {
    const lines = issuesOf(
      'rules:\n  - name: "bad name"\n    algorithm: token-bucket\n    limit: 0\n    period: 1h\n',
    );
    assert.deepEqual(lines, [
      '1:1: the policy needs "version"',
      '2:11: rules[0].name must be letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64',
      '4:12: rules[0].limit must be at least 1',
    ]);
  });
});
