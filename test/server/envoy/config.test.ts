/**
 * envoyproxy/ratelimit's configuration files load unchanged: the examples, the matching rules
 * (exact, wildcard, default, depth, no backtracking), and every rejection with upstream's reason.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { PolicyError } from '../../../src/server/policy/errors.js';
import { loadPolicyText } from '../../../src/server/policy/load.js';
import { findRule, wildcardMatch } from '../../../src/server/envoy/match.js';
import type { EnvoyDomains } from '../../../src/server/envoy/config.js';

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

function domainsOf(policy: string, envoyConfig?: string, file = join(fixtures, 'sluice.yaml')): EnvoyDomains {
  const loaded = loadPolicyText(policy, { file, env: {}, envoyConfig });
  assert.ok(loaded.envoy !== undefined);
  return loaded.envoy;
}

/** Loads one envoyproxy/ratelimit file of this text; returns its domains or throws. */
function loadText(text: string, name = 'config.yaml'): EnvoyDomains {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-envoy-'));
  writeFileSync(join(dir, name), text);
  return domainsOf('version: 1\nrules: []\n', dir);
}

function rejection(text: string): string {
  try {
    loadText(text);
  } catch (error) {
    assert.ok(error instanceof PolicyError);
    return error.issues[0]!.message;
  }
  assert.fail('the file was accepted');
}

const entries = (...pairs: [string, string][]) => pairs.map(([key, value]) => ({ key, value }));

describe('envoyproxy/ratelimit configuration', () => {
  it('loads every example of the reference from a directory, and from the policy file', () => {
    const all = domainsOf('version: 1\nrules: []\n', fixtures);
    assert.deepEqual([...all.keys()].sort(), ['mongo_cps', 'rl', 'test-domain']);
    const named = domainsOf(
      'version: 1\nrules: []\nenvoy:\n  domains: [mongo_cps.yaml, example.yaml]\n',
      undefined,
    );
    assert.deepEqual([...named.keys()].sort(), ['mongo_cps', 'rl']);
    const users = findRule(all, 'mongo_cps', entries(['database', 'users']));
    assert.equal(users?.rule.requestsPerUnit, 500);
    assert.equal(users?.rule.unit, 'SECOND');
  });

  it('matches as upstream does on its basic configuration', () => {
    const domains = domainsOf('version: 1\nrules: []\n', fixtures);
    const limit = (...pairs: [string, string][]) => {
      const found = findRule(domains, 'test-domain', entries(...pairs));
      return found === undefined
        ? 'none'
        : found.rule.unlimited
          ? 'unlimited'
          : `${found.rule.requestsPerUnit}/${found.rule.unit}`;
    };
    assert.equal(limit(['key1', 'value1'], ['subkey1', 'x']), '5/SECOND');
    assert.equal(limit(['key1', 'value1'], ['subkey1', 'subvalue1']), '10/SECOND');
    assert.equal(limit(['key2', 'x']), '20/MINUTE');
    assert.equal(limit(['key2', 'value2']), '30/MINUTE');
    assert.equal(limit(['key2', 'value3']), 'none');
    assert.equal(limit(['key1', 'value1']), 'none');
    assert.equal(limit(['key5', 'value5'], ['subkey5', 'subvalue']), 'none');
    assert.equal(limit(['key5', 'value5']), '15/DAY');
    assert.equal(limit(['key6', 'anything']), 'unlimited');
    assert.equal(limit(['key7', 'x']), '70/MINUTE');
    assert.equal(findRule(domains, 'test-domain', entries(['key7', 'x']))?.detailed, true);
    assert.equal(limit(['key4', 'x']), '1/DAY');
    assert.equal(findRule(domains, 'test-domain', entries(['key4', 'x']))?.rule.name, 'key4_rate_limit');
    // Depth must be equal: a 2-entry descriptor never uses a 1-level limit.
    assert.equal(limit(['key2', 'x'], ['other', 'y']), 'none');
    assert.equal(findRule(domains, 'no-such-domain', entries(['key2', 'x'])), undefined);
    assert.equal(findRule(domains, 'test-domain', [])?.rule, undefined);
    // An empty value looks up key_ first, then the key alone.
    assert.equal(limit(['key2', '']), '20/MINUTE');
  });

  it('matches wildcards: trailing, middle, several, exact first, file order; share_threshold shares a counter', () => {
    const domains = loadText(`domain: w
descriptors:
  - key: path
    value: /api/*
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: path
    value: /api/v1
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: path
    value: /a*
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: mid
    value: a*z
    rate_limit: { unit: hour, requests_per_unit: 4 }
  - key: multi
    value: foo*bar*baz
    rate_limit: { unit: hour, requests_per_unit: 5 }
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 6 }
`);
    const find = (key: string, value: string) => findRule(domains, 'w', entries([key, value]));
    assert.equal(find('path', '/api/v1')?.rule.requestsPerUnit, 2);
    assert.equal(find('path', '/api/v2')?.rule.requestsPerUnit, 1);
    assert.equal(find('path', '/ab')?.rule.requestsPerUnit, 3);
    assert.equal(find('path', '/b'), undefined);
    assert.equal(find('mid', 'az')?.rule.requestsPerUnit, 4);
    assert.equal(find('mid', 'a-long-z')?.rule.requestsPerUnit, 4);
    assert.equal(find('mid', 'za'), undefined);
    assert.equal(find('multi', 'foobarbaz')?.rule.requestsPerUnit, 5);
    assert.equal(find('multi', 'foo-bar-x-baz')?.rule.requestsPerUnit, 5);
    assert.equal(find('multi', 'foobaz'), undefined);
    assert.equal(find('files', 'files/a')?.counter, find('files', 'files/b')?.counter);
    assert.notEqual(find('path', '/api/x')?.counter, find('path', '/api/y')?.counter);
    assert.equal(find('path', '/api/x')?.detailed, false);
    const valued = loadText(
      'domain: v\ndescriptors:\n  - key: route\n    value_to_metric: true\n    descriptors:\n      - key: method\n        rate_limit: { unit: minute, requests_per_unit: 6 }\n',
    );
    assert.equal(findRule(valued, 'v', entries(['route', 'r'], ['method', 'GET']))?.detailed, true);
  });

  it('wildcardMatch agrees with a regular expression of the pattern', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', '*'), maxLength: 8 });
    fc.assert(
      fc.property(text, fc.string({ unit: fc.constantFrom('a', 'b'), maxLength: 10 }), (pattern, value) => {
        const regex = new RegExp(`^${pattern.split('*').join('.*')}$`);
        assert.equal(wildcardMatch(pattern.split('*'), value), regex.test(value));
      }),
    );
  });

  it('rejects what upstream rejects, with its reason, at the line', () => {
    const cases: [string, string][] = [
      ['descriptors:\n', 'config file cannot have empty domain'],
      ['domain: d\ndescriptors:\n  - value: v\n', 'descriptor has empty key'],
      [
        'domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n  - key: key1\n    value: value1\n',
        "duplicate descriptor composite key 'test-domain.key1_value1'",
      ],
      [
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: foo, requests_per_unit: 5 }\n',
        "invalid rate limit unit 'foo'",
      ],
      [
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { name: self, replaces: [{ name: self }], unit: second, requests_per_unit: 5 }\n',
        'replaces should not contain name of same descriptor',
      ],
      [
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      name: self\n      replaces:\n        - name:\n      unit: second\n',
        'should not have an empty replaces entry',
      ],
      [
        'domain: d\ndescriptors:\n  - key: k\n    ratelimit: { unit: day, requests_per_unit: 5 }\n',
        "config error, unknown key 'ratelimit'",
      ],
      [
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: day, requestsperunit: 5 }\n',
        "config error, unknown key 'requestsperunit'",
      ],
      ['0.25: d\ndescriptors: []\n', 'config error, key is not of type string: 0.25'],
      [
        'domain: d\ndescriptors:\n  - a\n  - b\n',
        'config error, yaml file contains list of type other than map: a',
      ],
      [
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, unit: day, requests_per_unit: 25 }\n',
        'should not specify rate limit unit when unlimited',
      ],
      [
        'domain: d\ndescriptors:\n  - key: k\n    value: plain\n    share_threshold: true\n',
        "share_threshold can only be used with wildcard values (containing '*'), but found key 'k_plain'",
      ],
      [
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: day, requests_per_unit: 1.5 }\n',
        'error checking config',
      ],
    ];
    const sluice =
      'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 10 }\n    sluice: ';
    cases.push(
      [`${sluice}{ algorithm: leaky }\n`, 'sluice.algorithm must be fixed-window or token-bucket'],
      [`${sluice}{ burst: 4 }\n`, 'sluice.burst needs sluice.algorithm token-bucket'],
      [`${sluice}{ algorithm: token-bucket, burst: 0 }\n`, 'sluice.burst must be at least 1'],
      [`${sluice}{ algorithm: token-bucket, size: 4 }\n`, 'sluice has a key other than algorithm and burst'],
      [
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: day, requests_per_unit: 2000000 }\n    sluice: { algorithm: token-bucket }\n',
        "sluice.algorithm token-bucket needs requests_per_unit from 1 to 1000000 (a day's refill)",
      ],
    );
    for (const [text, reason] of cases) assert.equal(rejection(text), reason, text);
    const bucket = loadText(`${sluice}{ algorithm: token-bucket, burst: 4 }\n`);
    assert.equal(findRule(bucket, 'd', entries(['k', 'x']))?.rule.burst, 4);
    const rate = loadText(`${sluice}{ algorithm: token-bucket }\n`);
    assert.equal(findRule(rate, 'd', entries(['k', 'x']))?.rule.burst, 10);
    assert.equal(
      findRule(loadText(`${sluice}{ algorithm: fixed-window }\n`), 'd', entries(['k', 'x']))?.rule.burst,
      undefined,
    );
    assert.match(rejection("'''\n"), /^error loading config file: yaml: /);
    assert.match(
      rejection(
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: day, requests_per_unit: -1 }\n',
      ),
      /^error loading config file: yaml: unmarshal errors: cannot unmarshal !!int into uint32$/,
    );
  });

  it('names the domain file and the line of its problem; a domain twice is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-envoy-'));
    writeFileSync(join(dir, 'a.yaml'), 'domain: same\n');
    writeFileSync(join(dir, 'b.yml'), 'domain: x\ndescriptors:\n  - key: k\n    rate_limit: { unit: foo }\n');
    writeFileSync(join(dir, 'c.yaml'), 'domain: same\n');
    writeFileSync(join(dir, 'notes.txt'), 'not a configuration');
    try {
      domainsOf('version: 1\nrules: []\n', dir);
      assert.fail('accepted');
    } catch (error) {
      assert.ok(error instanceof PolicyError);
      assert.equal(error.file, join(dir, 'b.yml'));
      assert.deepEqual(
        { line: error.issues[0]!.line, message: error.issues[0]!.message },
        { line: 4, message: "invalid rate limit unit 'foo'" },
      );
    }
    writeFileSync(join(dir, 'b.yml'), 'domain: x\n');
    assert.throws(
      () => domainsOf('version: 1\nrules: []\n', dir),
      (error: PolicyError) =>
        error.file === join(dir, 'c.yaml') &&
        error.issues[0]!.message === "duplicate domain 'same' in config file",
    );
  });

  it('checks a domain written in the policy file by the schema and by upstream, at its line', () => {
    const at = (text: string) => {
      try {
        loadPolicyText(text, { file: 'p.yaml', env: {} });
      } catch (error) {
        assert.ok(error instanceof PolicyError);
        return error.issues.map((i) => `${i.line}:${i.column} ${i.message}`);
      }
      assert.fail('accepted');
    };
    const head = 'version: 1\nrules: []\nenvoy:\n  domains:\n';
    assert.deepEqual(
      at(`${head}    - domain: d\n      descriptors:\n        - key: k\n          burst: 3\n`),
      ['8:11 envoy.domains[0].descriptors[0] has an unknown key "burst"'],
    );
    assert.deepEqual(
      at(
        `${head}    - domain: d\n      descriptors:\n        - key: k\n          rate_limit: { unit: fortnight }\n`,
      ),
      ["8:31 envoy.domains[0]: invalid rate limit unit 'fortnight'"],
    );
    assert.deepEqual(at(`${head}    - missing.yaml\n`), [
      '5:7 envoy.domains[0] names no file or directory that can be read',
    ]);
    const inline = loadPolicyText(
      `${head}    - domain: d\n      descriptors:\n        - key: k\n          value: '1'\n          rate_limit: { unit: Minute, requests_per_unit: 7 }\n`,
      { file: 'p.yaml', env: {} },
    );
    assert.equal(findRule(inline.envoy!, 'd', entries(['k', '1']))?.rule.unit, 'MINUTE');
    assert.equal(inline.policy.envoy?.headers, 'draft');
    assert.equal(inline.policy.envoy?.shadowMode, false);
  });
});
