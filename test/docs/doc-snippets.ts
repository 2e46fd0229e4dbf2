/**
 * The TypeScript snippets of README.md and docs/*.md, written out as modules a compiler and Node
 * can run, each remembering the document line it came from.
 *
 * How `sluice`, `sluice/redis`, … resolve: every `from 'sluice…'` is rewritten, on its own line,
 * to a relative import of the source file that tsup builds that subpath from (package.json
 * "exports" names the built file, scripts/entries.mjs the source of each built file). A relative `.js`
 * import works unchanged for `tsc` (NodeNext maps it to the `.ts` source) and for Node under tsx,
 * so the type check and the run need no path mapping, no loader of our own, and no build. A
 * subpath the package does not export is left alone and fails to resolve, as it would for a user.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { entries } from '../../scripts/entries.mjs';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** One fenced ```ts block of a document. */
export interface Snippet {
  /** The document, relative to the repository root, e.g. `docs/redis.md`. */
  readonly doc: string;
  /** The 1-based line of the opening fence; the snippet's first line is the next one. */
  readonly fenceLine: number;
  readonly code: string;
}

/** A snippet written out as a module. */
export interface SnippetModule extends Snippet {
  readonly path: string;
}

const OPENING = /^```(?:ts|typescript)\s*$/;
const CLOSING = /^```\s*$/;

/** README.md and every Markdown file under docs/, in a stable order. */
export function documents(): string[] {
  const docs = readdirSync(join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/**
 * The ```ts and ```typescript blocks of one Markdown text, or with `runtime` the blocks marked
 * for that runtime (```ts bun, ```ts deno, ```ts worker), which test/runtimes/ runs there. An
 * unclosed block is an error.
 */
export function extractSnippets(doc: string, markdown: string, runtime?: string): Snippet[] {
  const opening = runtime === undefined ? OPENING : new RegExp(`^\`\`\`ts ${runtime}\\s*$`);
  const lines = markdown.split('\n');
  const found: Snippet[] = [];
  let open: { fenceLine: number; body: string[] } | undefined;
  let otherFence = false;
  for (const [index, line] of lines.entries()) {
    if (open !== undefined) {
      if (CLOSING.test(line)) {
        found.push({ doc, fenceLine: open.fenceLine, code: open.body.join('\n') });
        open = undefined;
      } else open.body.push(line);
    } else if (otherFence) {
      if (CLOSING.test(line)) otherFence = false;
    } else if (opening.test(line)) open = { fenceLine: index + 1, body: [] };
    else if (line.startsWith('```')) otherFence = true;
  }
  if (open !== undefined) throw new Error(`${doc}:${open.fenceLine}: a \`\`\`ts block is never closed`);
  return found;
}

/** `sluice` and each `sluice/<name>` the package exports, mapped to its source file. */
export function exportedSources(): Map<string, string> {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    exports: Record<string, { import?: { default?: string } }>;
  };
  const sources = new Map<string, string>();
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const built = target.import?.default;
    if (built === undefined) continue;
    const entry = (entries as Record<string, string>)[basename(built, '.js')];
    if (entry === undefined) continue;
    sources.set(subpath === '.' ? 'sluice' : `sluice/${subpath.slice(2)}`, join(repoRoot, entry));
  }
  return sources;
}

const PACKAGE_IMPORT = /(\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)(['"])(sluice(?:\/[\w-]+)?)\2/gm;

/** The snippet with its imports of the package pointing at the sources; lines stay in place. */
export function rewriteImports(code: string, fromDir: string, sources: Map<string, string>): string {
  return code.replace(PACKAGE_IMPORT, (whole, before: string, quote: string, specifier: string) => {
    const source = sources.get(specifier);
    if (source === undefined) return whole;
    const path = relative(fromDir, source).replace(/\.ts$/, '.js').split('\\').join('/');
    return `${before}${quote}${path.startsWith('.') ? path : `./${path}`}${quote}`;
  });
}

/** A file name that says where the snippet is: `docs-redis-md-26.ts`. */
function moduleName(snippet: Snippet): string {
  return `${snippet.doc.replace(/[^\w]+/g, '-')}-${snippet.fenceLine}.ts`;
}

/**
 * Writes every snippet of every document into `dir` (created if needed). `export {}` at the end
 * makes each one a module of its own, so that two snippets declaring the same name do not clash.
 */
export function writeSnippetModules(dir: string): SnippetModule[] {
  mkdirSync(dir, { recursive: true });
  const sources = exportedSources();
  const modules: SnippetModule[] = [];
  for (const doc of documents()) {
    for (const snippet of extractSnippets(doc, readFileSync(join(repoRoot, doc), 'utf8'))) {
      const path = join(dir, moduleName(snippet));
      writeFileSync(path, `${rewriteImports(snippet.code, dirname(path), sources)}\nexport {};\n`);
      modules.push({ ...snippet, path });
    }
  }
  return modules;
}

/** `docs/redis.md:27` for line `line` (1-based) of a snippet's module. */
export function docLocation(snippet: Snippet, line: number): string {
  return `${snippet.doc}:${snippet.fenceLine + line}`;
}
