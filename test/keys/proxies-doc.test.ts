import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { format } from 'node:util';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import ts from 'typescript';

/**
 * docs/proxies.md promises code that works: every ```ts block type-checks under the project's
 * strict settings and runs on its own, and every `console.log(…); // text` line prints `text`.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const doc = readFileSync(join(root, 'docs/proxies.md'), 'utf8');
const snippets = [...doc.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1] as string);
const dir = mkdtempSync(join(tmpdir(), 'sluice-proxies-doc-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The snippet as a module of its own, importing sluice from this checkout's sources. */
const files = snippets.map((snippet, index) => {
  const file = join(dir, `snippet-${index}.mts`);
  writeFileSync(file, snippet.replaceAll("from 'sluice'", `from '${join(root, 'src/index.js')}'`));
  return file;
});

/** What each `console.log(…); // text` line of a snippet says it prints, in order. */
const promised = (snippet: string) =>
  [...snippet.matchAll(/^\s*console\.log\(.*\);\s*\/\/ (.*)$/gm)].map((match) => (match[1] as string).trim());

describe('docs/proxies.md', () => {
  it('has ts snippets', () => assert.ok(snippets.length >= 5, `found ${snippets.length}`));

  it('every ts snippet type-checks under strict', () => {
    const config = ts.readConfigFile(join(root, 'tsconfig.json'), (path) => ts.sys.readFile(path));
    const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
    const program = ts.createProgram(files, {
      ...options,
      noEmit: true,
      typeRoots: [join(root, 'node_modules/@types')],
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) =>
      ts.formatDiagnostic(d, {
        getCanonicalFileName: (f) => f,
        getCurrentDirectory: () => root,
        getNewLine: () => '\n',
      }),
    );
    assert.deepEqual(problems, []);
  });

  for (const [index, snippet] of snippets.entries()) {
    it(`snippet ${index + 1} runs and prints what it says`, async () => {
      const printed: string[] = [];
      const log = console.log;
      console.log = (...args: unknown[]) => void printed.push(format(...args));
      try {
        await import(pathToFileURL(files[index] as string).href);
      } finally {
        console.log = log;
      }
      assert.deepEqual(printed, promised(snippet), snippet);
    });
  }
});
