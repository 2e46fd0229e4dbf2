import { readFileSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

// sluice/client runs in browsers: no Node module, no Node global, and imports only from core/.
const dir = new URL('../../src/client/', import.meta.url);
const files = readdirSync(dir).filter((name) => name.endsWith('.ts'));

describe('sluice/client is browser-safe', () => {
  it('src/client has the files this test scans', () => {
    assert.ok(files.includes('index.ts') && files.includes('retry.ts'), files.join(', '));
  });

  for (const name of files) {
    it(`${name} imports nothing from Node and uses no Node global`, () => {
      const source = readFileSync(new URL(name, dir), 'utf8').replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '');
      const imports = [...source.matchAll(/from\s+'([^']+)'/g)].map((m) => m[1] as string);
      for (const path of imports)
        assert.ok(path.startsWith('./') || path.startsWith('../core/'), `${name} imports ${path}`);
      for (const global of [/\bBuffer\b/, /\bprocess\./, /\brequire\(/, /\bsetImmediate\b/, /\b__dirname\b/])
        assert.doesNotMatch(source, global, `${name} uses ${global}`);
    });
  }
});

describe('docs/client.md', () => {
  const docs = readFileSync(new URL('../../docs/client.md', import.meta.url), 'utf8');

  it('tells browser users that Retry-After must be exposed cross-origin', () => {
    assert.match(docs, /Access-Control-Expose-Headers:\s*Retry-After/);
  });

  it('documents every give-up reason', () => {
    for (const reason of [
      'max-attempts',
      'deadline',
      'retry-after-too-long',
      'not-idempotent',
      'body-too-large',
      'aborted',
    ])
      assert.ok(docs.includes(`\`${reason}\``), reason);
  });
});
