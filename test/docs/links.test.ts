/**
 * Every relative link of README.md, docs/*.md and the examples' READMEs leads to a file or folder
 * that exists, and every repository path they name (`src/…`, `test/…`, `examples/…`, `docs/…`,
 * `bench/…`, `scripts/…`) exists too. A failure names the document and line.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from './doc-snippets.js';
import {
  existsInRepository,
  linksOf,
  namedPathsOf,
  referencingDocuments,
  type Reference,
} from './doc-references.js';

function missing(find: (doc: string, markdown: string) => Reference[]): string[] {
  const broken: string[] = [];
  for (const doc of referencingDocuments(repoRoot)) {
    for (const reference of find(doc, readFileSync(join(repoRoot, doc), 'utf8'))) {
      if (!existsInRepository(repoRoot, reference.path))
        broken.push(`${doc}:${reference.line}: ${reference.text}`);
    }
  }
  return broken;
}

describe('references in the documentation', () => {
  it('every relative link leads to a file or folder of the repository', () => {
    const broken = missing(linksOf);
    assert.deepEqual(broken, [], `links to nothing:\n${broken.join('\n')}`);
  });

  it('every repository path named in the text exists', () => {
    const broken = missing((_doc, markdown) => namedPathsOf(markdown));
    assert.deepEqual(broken, [], `paths that do not exist:\n${broken.join('\n')}`);
  });
});

describe('how references are found', () => {
  it('resolves relative links against the document, drops fragments, and skips URLs and anchors', () => {
    const markdown = [
      'See [the guide](docs/http.md#cors) and [up](../README.md).',
      '[web](https://example.com/src/x.ts), [here](#top), ![picture](images/a.svg "A")',
    ].join('\n');
    assert.deepEqual(
      linksOf('examples/chat/README.md', markdown).map((r) => [r.line, r.path]),
      [
        [1, 'examples/chat/docs/http.md'],
        [1, 'examples/README.md'],
        [2, 'examples/chat/images/a.svg'],
      ],
    );
  });

  it('finds named paths in prose and code, without trailing punctuation, and skips patterns and relative imports', () => {
    const markdown = [
      'The contract is in `src/stores/contract/store.ts`. Tests: test/docs/, and bench/keys/run.ts.',
      "import { x } from '../../src/index.js'; see src/stores/<kind>.ts and src/**/x.ts",
      'https://github.com/o/r/blob/main/src/a.ts and examples/chat/README.md:',
    ].join('\n');
    assert.deepEqual(
      namedPathsOf(markdown).map((r) => [r.line, r.path]),
      [
        [1, 'src/stores/contract/store.ts'],
        [1, 'test/docs/'],
        [1, 'bench/keys/run.ts'],
        [3, 'examples/chat/README.md'],
      ],
    );
  });

  it('takes a .js path as its .ts source, and knows a path that does not exist', () => {
    assert.equal(existsInRepository(repoRoot, 'src/stores/contract/store.js'), true);
    assert.equal(existsInRepository(repoRoot, 'src/stores/contract/store.ts'), true);
    assert.equal(existsInRepository(repoRoot, 'src/no-such-module.ts'), false);
  });
});
