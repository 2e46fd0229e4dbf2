/**
 * The snippet check itself: it finds every ```ts block at its line, resolves the package's own
 * name, reports a type error at the document's line, and fails a snippet that rejects late or
 * leaves a server that never answers. A check that passed broken snippets would be worse than none.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { runId } from '../support/services.js';
import {
  exportedSources,
  extractSnippets,
  repoRoot,
  rewriteImports,
  type SnippetModule,
} from './doc-snippets.js';
import { typeCheck } from './type-check.js';

const dir = join(repoRoot, '.tmp', `doc-snippet-machinery-${runId}`);
mkdirSync(dir, { recursive: true });
after(() => rmSync(dir, { recursive: true, force: true }));

function moduleOf(name: string, code: string): SnippetModule {
  const path = join(dir, name);
  writeFileSync(path, `${rewriteImports(code, dir, exportedSources())}\nexport {};\n`);
  return { doc: 'docs/example.md', fenceLine: 10, code, path };
}

/** The exit code of one snippet under the runner. */
function exitCodeOf(snippet: SnippetModule): Promise<number | null> {
  const runner = join(repoRoot, 'test', 'docs', 'run-snippet.ts');
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', runner, snippet.path],
      { timeout: 20_000 },
      () => resolve(child.exitCode),
    );
  });
}

describe('snippet extraction', () => {
  test('finds ts and typescript blocks at the line of their fence, and skips every other block', () => {
    const markdown = [
      '# Title', // 1
      '```sh', // 2
      '```ts', // 3: inside a sh block, not an opening
      '```', // 4
      '```ts', // 5
      'const a = 1;', // 6
      '```', // 7
      '```typescript', // 8
      'const b = 2;', // 9
      '```', // 10
    ].join('\n');
    assert.deepEqual(extractSnippets('docs/x.md', markdown), [
      { doc: 'docs/x.md', fenceLine: 5, code: 'const a = 1;' },
      { doc: 'docs/x.md', fenceLine: 8, code: 'const b = 2;' },
    ]);
  });

  test('an unclosed block is an error naming the document and line', () => {
    assert.throws(() => extractSnippets('docs/x.md', 'text\n```ts\nconst a = 1;\n'), /docs\/x\.md:2/);
  });

  test('imports of the package and its subpaths point at the sources; unknown subpaths stay', () => {
    const code = [
      "import { tokenBucket } from 'sluice';",
      "import { RedisStore } from 'sluice/redis';",
      "import { nothing } from 'sluice/unknown';",
    ].join('\n');
    assert.deepEqual(rewriteImports(code, join(repoRoot, '.tmp', 'x'), exportedSources()).split('\n'), [
      "import { tokenBucket } from '../../src/index.js';",
      "import { RedisStore } from '../../src/stores/redis/index.js';",
      "import { nothing } from 'sluice/unknown';",
    ]);
  });
});

describe('snippet checks', () => {
  test('a type error is reported at the line of the document', () => {
    const snippet = moduleOf(
      'typed.ts',
      "import { tokenBucket } from 'sluice';\n\ntokenBucket(ruleOptions);",
    );
    const errors = typeCheck([snippet]);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0]!, /^docs\/example\.md:13: error TS\d+: Cannot find name 'ruleOptions'/);
  });

  test('a snippet that starts a server passes once the server answered', async () => {
    const snippet = moduleOf(
      'server.ts',
      "import { createServer } from 'node:http';\ncreateServer((req, res) => res.end('ok')).listen(80);",
    );
    assert.equal(await exitCodeOf(snippet), 0);
  });

  test('a rejection nobody handles after the top level finished fails the snippet', async () => {
    const snippet = moduleOf('late.ts', "setTimeout(() => Promise.reject(new Error('late')), 10);");
    assert.equal(await exitCodeOf(snippet), 1);
  });

  test('a server that never answers fails the snippet', async () => {
    const snippet = moduleOf(
      'silent.ts',
      "import { createServer } from 'node:http';\ncreateServer(() => {}).listen(80);",
    );
    assert.notEqual(await exitCodeOf(snippet), 0);
  });
});
