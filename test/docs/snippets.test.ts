/**
 * Every ```ts block of README.md and docs/*.md compiles under `strict` and runs, so that the
 * documentation cannot drift from the code. No block is exempt: a block that cannot run as
 * written must be rewritten until it can. Blocks that need Redis or PostgreSQL run against the
 * local servers (skipped with the reason when those are down, failing under CI=true).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { postgresUrl, redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { docLocation, repoRoot, writeSnippetModules, type SnippetModule } from './doc-snippets.js';
import { typeCheck } from './type-check.js';

// Inside the repository (and ignored by git) so that the snippets resolve the repository's
// node_modules; one folder per run, so that concurrent runs never share files.
const dir = join(repoRoot, '.tmp', `doc-snippets-${runId}`);
const modules = writeSnippetModules(dir);
after(() => rmSync(dir, { recursive: true, force: true }));

// tsx applies a tsconfig only to the files it includes: this one adds the snippets to the
// repository's (NestJS snippets need its experimentalDecorators), the sources staying included.
const tsconfig = join(dir, 'tsconfig.json');
writeFileSync(
  tsconfig,
  JSON.stringify({
    extends: join(repoRoot, 'tsconfig.json'),
    include: ['*.ts', ...['src', 'test', 'examples', 'scripts'].map((folder) => join(repoRoot, folder))],
  }),
);

const RUN_TIMEOUT_MS = 20_000;

const postgres = new URL(postgresUrl);
/** What a snippet may read from its environment: the local services and a service's secret. */
const snippetEnv = {
  ...process.env,
  REDIS_URL: process.env.REDIS_URL ?? redisUrl,
  DATABASE_URL: process.env.DATABASE_URL ?? postgresUrl,
  SLUICE_POSTGRES_URL: postgresUrl,
  TSX_TSCONFIG_PATH: tsconfig,
  // `new pg.Pool()` without options, as in the docs, reads these.
  PGHOST: postgres.hostname,
  PGPORT: postgres.port || '5432',
  PGUSER: decodeURIComponent(postgres.username) || 'postgres',
  PGDATABASE: postgres.pathname.slice(1) || 'test',
  AUTH_SECRET: `doc-snippets-${runId}-a-secret-of-at-least-32-bytes`,
  AUTH_SECRET_PREVIOUS: `doc-snippets-${runId}-the-secret-before-the-current`,
};

/** The services a snippet talks to, read from what it imports. */
function servicesOf(snippet: SnippetModule): { name: string; url: string }[] {
  const needs: { name: string; url: string }[] = [];
  if (/from '(?:sluice\/redis|ioredis|redis)'/.test(snippet.code))
    needs.push({ name: 'redis', url: redisUrl });
  if (/from '(?:sluice\/postgres|pg|postgres)'/.test(snippet.code))
    needs.push({ name: 'postgres', url: postgresUrl });
  return needs;
}

interface RunResult {
  code: number | null;
  signal: string | null;
  output: string;
}

function runSnippet(snippet: SnippetModule): Promise<RunResult> {
  const runner = join(repoRoot, 'test', 'docs', 'run-snippet.ts');
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', runner, snippet.path],
      {
        cwd: repoRoot,
        env: snippetEnv,
        timeout: RUN_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 4 * 1024 * 1024,
      },
      (_error, stdout, stderr) =>
        resolve({ code: child.exitCode, signal: child.signalCode, output: stdout + stderr }),
    );
  });
}

// Asked before any test starts: the type check holds the event loop for seconds, long enough
// for a connection probe running beside it to time out.
const skips = new Map<string, string | false>([
  ['redis', await skipUnlessReachable('redis', redisUrl)],
  ['postgres', await skipUnlessReachable('postgres', postgresUrl)],
]);

test('every snippet type-checks under --strict', () => {
  const errors = typeCheck(modules);
  assert.deepEqual(errors, [], `type errors in documentation snippets:\n${errors.join('\n')}`);
});

describe('every snippet runs', { concurrency: 2 }, () => {
  for (const snippet of modules) {
    const skip = servicesOf(snippet)
      .map((service) => skips.get(service.name))
      .find((reason) => typeof reason === 'string');
    test(docLocation(snippet, 0), { skip: skip ?? false }, async () => {
      const run = await runSnippet(snippet);
      const why =
        run.signal === 'SIGKILL'
          ? `did not finish within ${RUN_TIMEOUT_MS / 1000} s`
          : `exited with ${run.code}`;
      assert.equal(run.code, 0, `${docLocation(snippet, 0)} ${why}:\n${run.output}`);
    });
  }
});
