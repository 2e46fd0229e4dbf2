/**
 * Run by Bun and Deno (test/runtimes/*.test.ts), not by node: the examples of docs/fetch.md
 * marked for this runtime (```ts bun, ```ts deno), each written out with its imports pointing at
 * the sources, started, and asked over HTTP: two requests admitted, the third refused.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';
import { exportedSources, extractSnippets, repoRoot, rewriteImports } from '../docs/doc-snippets.js';
import { runId } from '../support/services.js';

type Server = {
  port?: number;
  addr?: { port: number };
  stop?(force: boolean): unknown;
  shutdown?(): Promise<void>;
};

const runtime = typeof (globalThis as { Bun?: unknown }).Bun === 'object' ? 'bun' : 'deno';
const doc = 'docs/fetch.md';
const snippets = extractSnippets(doc, readFileSync(join(repoRoot, doc), 'utf8'), runtime);
const dir = join(repoRoot, '.tmp', `runtime-snippets-${runtime}-${runId}`);
mkdirSync(dir, { recursive: true });
after(() => rmSync(dir, { recursive: true, force: true }));

describe(`${doc} on ${runtime}`, () => {
  it('has an example for this runtime', () => assert.ok(snippets.length > 0));

  for (const snippet of snippets) {
    it(`${doc}:${snippet.fenceLine} serves, admits twice and refuses the third request`, async () => {
      const path = join(dir, `fetch-md-${snippet.fenceLine}.ts`);
      const code = rewriteImports(snippet.code, dirname(path), exportedSources());
      writeFileSync(path, `${code}\nexport { server };\n`);
      const { server } = (await import(pathToFileURL(path).href)) as { server: Server };
      const port = server.port ?? server.addr!.port;
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) {
          const response = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(10_000) });
          await response.text();
          statuses.push(response.status);
        }
        assert.deepEqual(statuses, [200, 200, 429]);
      } finally {
        await (server.stop?.(true) ?? server.shutdown?.());
      }
    });
  }
});
