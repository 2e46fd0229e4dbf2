/**
 * The API reference names each module by the path a user imports (`sluice/redis`), not by its
 * source folder (`stores/redis`): every library entry's file comment carries that `@module` name,
 * which typedoc uses as the module's title.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { libraryEntries } from '../../scripts/entries.mjs';
import { repoRoot } from './doc-snippets.js';

describe('API reference module names', () => {
  for (const [key, source] of Object.entries(libraryEntries)) {
    const name = key === 'index' ? 'sluice' : `sluice/${key}`;
    it(`${source} is the module ${name}`, () => {
      const text = readFileSync(join(repoRoot, source), 'utf8');
      const fileComment = /^\/\*\*[\s\S]*?\*\//.exec(text)?.[0] ?? '';
      assert.deepEqual(
        [...fileComment.matchAll(/@module (\S+)/g)].map((m) => m[1]),
        [name],
      );
    });
  }
});
