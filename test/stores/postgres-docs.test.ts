/**
 * docs/postgres.md's `ts` snippets as a reader runs them: each one alone, type-checked under
 * strict and run against the local PostgreSQL, in a database of its own (the snippets use the
 * default schema and `public.users`, which must not meet another run's).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type pg from 'pg';
import { skipUnlessReachable } from '../support/services.js';
import { postgresUrl, runSchema, testPool } from '../support/postgres.js';

const run = promisify(execFile);
const skip = await skipUnlessReachable('postgres', postgresUrl);
const root = fileURLToPath(new URL('../../', import.meta.url));
const database = runSchema('docs');
// Inside the repository (ignored by git), so that the snippets resolve `pg` as an application would.
const dir = `${root}.tmp/${database}`;

/** The ```ts blocks of the document, with the package's imports pointed at the sources. */
async function snippets(): Promise<string[]> {
  const text = await readFile(`${root}docs/postgres.md`, 'utf8');
  const blocks = [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
  return blocks.map((code) =>
    code
      .replaceAll(`from 'sluice/postgres'`, `from '${root}src/stores/postgres/index.js'`)
      .replaceAll(`from 'sluice'`, `from '${root}src/index.js'`),
  );
}

describe('docs/postgres.md', { skip }, () => {
  let pool: pg.Pool;
  let files: string[] = [];

  before(async () => {
    pool = testPool({ max: 2 });
    await pool.query(`CREATE DATABASE "${database}"`);
    await mkdir(dir, { recursive: true });
    files = [];
    for (const [i, code] of (await snippets()).entries()) {
      const file = `${dir}/snippet-${i + 1}.ts`;
      await writeFile(file, `${code}\nexport {};\n`);
      files.push(file);
    }
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    await pool.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await pool.end();
  });

  it('has snippets, and every one type-checks under strict', async () => {
    assert.ok(files.length >= 3, `${files.length} snippets`);
    const tsc = `${root}node_modules/typescript/bin/tsc`;
    const options = ['--noEmit', '--strict', '--noUncheckedIndexedAccess', '--skipLibCheck'];
    const target = ['--target', 'ES2022', '--module', 'NodeNext', '--moduleResolution', 'NodeNext'];
    const result = await run(process.execPath, [tsc, ...options, ...target, '--types', 'node', ...files], {
      cwd: root,
    }).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? String(e) }));
    assert.equal(result.stdout.trim(), '', result.stdout);
  });

  it('every snippet runs against the local PostgreSQL, in order', async () => {
    const url = new URL(postgresUrl);
    const env = {
      ...process.env,
      PGHOST: url.hostname,
      PGPORT: url.port || '5432',
      PGUSER: decodeURIComponent(url.username) || 'postgres',
      PGDATABASE: database,
    };
    for (const file of files) {
      await run(process.execPath, ['--import', 'tsx', file], { cwd: root, env, timeout: 60_000 }).catch(
        (e: { stderr?: string }) => assert.fail(`${file.slice(dir.length + 1)}: ${e.stderr ?? String(e)}`),
      );
    }
  });
});
