/**
 * docs/envoy.md holds: its policy files load (and serve the descriptors it describes), every other
 * YAML snippet (Envoy, Istio, Envoy Gateway) is well-formed YAML, the /json example is a request
 * the endpoint reads, and the settings table names every key of `envoy`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { findRule } from '../../../src/server/envoy/match.js';
import { requestFromJson } from '../../../src/server/envoy/json.js';
import { fileFields } from '../../../src/server/policy/file-types.js';
import { loadPolicyText } from '../../../src/server/policy/load.js';

const doc = readFileSync(new URL('../../../docs/envoy.md', import.meta.url), 'utf8');
const blocks = (lang: string) =>
  [...doc.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);

describe('docs/envoy.md', () => {
  it('its policy file loads and serves the limits it shows', () => {
    const policies = blocks('yaml').filter((b) => b.startsWith('version: 1'));
    assert.equal(policies.length, 1);
    const loaded = loadPolicyText(policies[0]!, { file: 'docs/envoy.md', env: {} });
    const login = findRule(loaded.envoy!, 'edge', [
      { key: 'route', value: 'login' },
      { key: 'user', value: 'alice' },
    ]);
    assert.deepEqual([login?.rule.requestsPerUnit, login?.rule.unit], [5, 'MINUTE']);
  });

  it('its domain files load', () => {
    const domains = blocks('yaml').filter((b) => b.startsWith('domain:'));
    assert.equal(domains.length, 1);
    const loaded = loadPolicyText(`version: 1\nrules: []\nenvoy:\n  domains:\n${indent(domains[0]!)}`, {
      file: 'docs/envoy.md',
      env: {},
    });
    assert.equal(findRule(loaded.envoy!, 'api', [{ key: 'api_key', value: 'k' }])?.rule.burst, 20);
  });

  it('every other YAML snippet is well-formed', () => {
    const others = blocks('yaml').filter((b) => !b.startsWith('version: 1') && !b.startsWith('domain:'));
    assert.ok(others.length >= 3);
    for (const block of others)
      for (const parsed of parseAllDocuments(block)) assert.deepEqual(parsed.errors, [], block.slice(0, 60));
  });

  it('its /json example is a request the endpoint reads', () => {
    const body = /-d '(\{.*\})'/.exec(blocks('sh').join('\n'))![1]!;
    assert.equal(requestFromJson(JSON.parse(body)).domain, 'edge');
  });

  it('names every key of envoy in its settings table', () => {
    for (const key of Object.keys(fileFields.envoy)) assert.match(doc, new RegExp(`\\| \`${key}\` \\|`), key);
  });
});

/** A domain file as an entry of `envoy.domains`. */
function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((line, i) => (i === 0 ? `    - ${line}` : `      ${line}`))
    .join('\n');
}
