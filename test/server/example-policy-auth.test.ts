/**
 * The example policy's commented `auth` block loads once uncommented, and `${NAME}` written
 * unquoted in a flow mapping (`{ token: ${SLUICE_TOKEN}, … }`) reads as the variable, not as YAML.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPolicyText } from '../../src/server/policy/load.js';
import { root } from './cli-support.js';
import { issuesOf } from './policy-support.js';

const env = {
  SLUICE_TOKEN: 'a decide token of 16+ chars',
  SLUICE_ADMIN_TOKEN: 'an admin token of 16+ chars',
};

/** The example with its commented `auth:` block written as a section. */
function exampleWithAuth(): string {
  const lines = readFileSync(join(root, 'sluice.example.yaml'), 'utf8').split('\n');
  const start = lines.indexOf('# auth:');
  assert.ok(start >= 0, 'the example has a commented auth block');
  let end = start + 1;
  while (lines[end]!.startsWith('#   ')) end++;
  const block = lines.slice(start, end).map((line) => line.slice(2));
  return [...lines.slice(0, start), ...block, ...lines.slice(end)].join('\n');
}

describe('tokens written with ${NAME}', () => {
  it("the example policy's commented auth block, uncommented, loads with its tokens", () => {
    const { policy } = loadPolicyText(exampleWithAuth(), { env });
    assert.deepEqual(policy.tokens, [
      { token: env.SLUICE_TOKEN, scopes: ['decide'] },
      { token: env.SLUICE_ADMIN_TOKEN, scopes: ['decide', 'admin'] },
    ]);
  });

  it('reads ${NAME} unquoted in a flow mapping and a flow list, and prints it as written', () => {
    const loaded = loadPolicyText(
      `version: 1
auth:
  tokens:
    - { token: \${SLUICE_TOKEN}, scopes: [decide] }
    - {token: \${SLUICE_ADMIN_TOKEN},scopes: [decide, admin]}
hosts: [\${HOST}, b.example]
rules: []
`,
      { env: { ...env, HOST: 'a.example' } },
    );
    assert.deepEqual(
      loaded.policy.tokens.map((t) => t.token),
      [env.SLUICE_TOKEN, env.SLUICE_ADMIN_TOKEN],
    );
    assert.deepEqual(loaded.policy.hosts, ['a.example', 'b.example']);
    assert.deepEqual(
      loaded.printable().tokens.map((t) => t.token),
      ['${SLUICE_TOKEN}', '${SLUICE_ADMIN_TOKEN}'],
    );
  });

  it('keeps $${ literal and places an unset variable at its column, unquoted in braces', () => {
    const loaded = loadPolicyText(
      'version: 1\nrules: [{ name: r, key: [literal:a$${B}], algorithm: fixed-window, limit: 1, window: 1s }]\n',
      { env: {} },
    );
    assert.deepEqual(loaded.policy.rules[0]!.key, ['literal:a${B}']);
    assert.deepEqual(
      issuesOf('version: 1\nauth: { tokens: [{ token: ${NOPE}, scopes: [decide] }] }\nrules: []\n'),
      ['2:27: the environment variable NOPE is not set'],
    );
  });
});
