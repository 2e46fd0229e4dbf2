/**
 * What a Markdown document points at in the repository: its relative links, and the repository
 * paths it names in its text (`src/stores/contract/store.ts`, `test/docs/`, …). A guide that names a file which
 * was renamed or never written sends its reader nowhere; the links test checks both kinds.
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

/** One thing a document points at, with the 1-based line it is on. */
export interface Reference {
  readonly line: number;
  /** As written, e.g. `docs/http.md#cors` or `src/stores/contract/store.ts`. */
  readonly text: string;
  /** Relative to the repository root, without a fragment: what must exist. */
  readonly path: string;
}

/** The folders whose paths a document may name; a path is checked when it starts with one. */
export const REPOSITORY_FOLDERS = ['src', 'test', 'examples', 'docs', 'bench', 'scripts'] as const;

// `[text](target)` and `![alt](target)`; the target ends at whitespace or the closing paren.
const LINK = /\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;
// A path starts at one of the folders, not inside a longer path or word (`../src/x.js` is an
// import relative to a snippet, and `node_modules/x/src` or a URL are not ours).
const NAMED_PATH = new RegExp(`(?<![\\w./@:-])(?:${REPOSITORY_FOLDERS.join('|')})/[\\w./-]*`, 'g');
// A pattern rather than a path: a placeholder (`<kind>.ts`), a glob, a brace list.
const PATTERN = /[<>*{}]/;

/** True for a link that leaves the repository or stays in the document. */
function external(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#') || target.startsWith('//');
}

/**
 * The relative links of `markdown` (a document at `doc`, relative to the repository root),
 * resolved against the document's folder.
 */
export function linksOf(doc: string, markdown: string): Reference[] {
  const found: Reference[] = [];
  for (const [index, line] of markdown.split('\n').entries()) {
    for (const match of line.matchAll(LINK)) {
      const target = match[1] as string;
      if (external(target)) continue;
      const withoutFragment = decodeURI(target.split('#')[0] as string);
      if (withoutFragment === '') continue;
      found.push({ line: index + 1, text: target, path: normalize(join(dirname(doc), withoutFragment)) });
    }
  }
  return found;
}

/**
 * The repository paths `markdown` names in its text (prose, inline code and code blocks alike),
 * relative to the repository root. Trailing punctuation is not part of a path; patterns with
 * placeholders or globs are left out.
 */
export function namedPathsOf(markdown: string): Reference[] {
  const found: Reference[] = [];
  for (const [index, line] of markdown.split('\n').entries()) {
    for (const match of line.matchAll(NAMED_PATH)) {
      const end = (match.index ?? 0) + match[0].length;
      if (PATTERN.test(line.charAt(end))) continue;
      const text = match[0].replace(/[.-]+$/, '');
      found.push({ line: index + 1, text, path: normalize(text) });
    }
  }
  return found;
}

/**
 * Whether `path` (relative to `root`) exists. A `.js` file also counts as its `.ts` source: the
 * code imports TypeScript modules by the name they are compiled to.
 */
export function existsInRepository(root: string, path: string): boolean {
  if (existsSync(join(root, path))) return true;
  return path.endsWith('.js') && existsSync(join(root, path.replace(/\.js$/, '.ts')));
}

/** README.md, docs/*.md and every README.md under examples/, relative to `root`. */
export function referencingDocuments(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  const examples = readdirSync(join(root, 'examples'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(root, 'examples', entry.name, 'README.md')))
    .map((entry) => `examples/${entry.name}/README.md`)
    .sort();
  return ['README.md', ...docs, 'examples/README.md', ...examples];
}
