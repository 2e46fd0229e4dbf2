/**
 * The policy snippets of docs/server.md load and build: every ```yaml block that holds rules (or
 * the tokens' block) is a policy, given `version: 1` (and `rules: []`) when it leaves them out,
 * with the environment variables it names set. A snippet cannot drift from the loader.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './cli-support.js';
import { compiled } from './policy-support.js';

const env = {
  SLUICE_SECRET: 'a test secret of thirty-two bytes',
  JWT_SECRET: 'a jwt secret of at least 32 bytes!',
  SLUICE_TOKEN: 'a decide token of 16+ chars',
  SLUICE_ADMIN_TOKEN: 'an admin token of 16+ chars',
};

const doc = readFileSync(join(root, 'docs/server.md'), 'utf8');
const blocks = [...doc.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => ({
  line: doc.slice(0, m.index).split('\n').length,
  text: m[1]!,
}));
const policies = blocks.filter((b) => /^(rules|auth):/m.test(b.text));

describe('the policies of docs/server.md', () => {
  it('has policy snippets to check', () => {
    assert.ok(policies.length >= 6, String(policies.length));
  });

  for (const { line, text } of policies)
    it(`docs/server.md:${line} loads and builds`, () => {
      const version = /^version:/m.test(text) ? '' : 'version: 1\n';
      const rules = /^rules:/m.test(text) ? '' : 'rules: []\n';
      compiled(`${version}${text}${rules}`, env).close();
    });
});
