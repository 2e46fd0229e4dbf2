/**
 * The guides show example files whole, so that what a reader copies is what the tests run. This
 * reads an example file as a guide shows it: its opening comment left out (the guide says it in
 * prose) and its imports of the repository's sources written as a user writes them.
 */
import { readFileSync } from 'node:fs';

/** The repository's entry modules, as their package subpaths. */
const entries: [source: string, subpath: string][] = [
  ['../../src/index.js', 'sluice'],
  ['../../src/http/index.js', 'sluice/http'],
  ['../../src/testing/index.js', 'sluice/testing'],
];

/**
 * The code of `file` as a guide shows it, e.g. to assert that docs/stores.md contains it.
 *
 * @example
 * assert.ok(guide.includes(shownInDocs(new URL('./bounded-map-store.ts', import.meta.url))));
 */
export function shownInDocs(file: URL): string {
  let code = readFileSync(file, 'utf8');
  // The opening block comment, if any: the first `/**` … `*/` before any code.
  if (code.startsWith('/**')) code = code.slice(code.indexOf('*/') + 2).trimStart();
  for (const [source, subpath] of entries) code = code.split(`'${source}'`).join(`'${subpath}'`);
  return code.trimEnd();
}
