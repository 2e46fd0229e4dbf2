/**
 * docs/redis.md's setup snippets against a Redis that is not there (a closed loopback port): they
 * stop with a message that says why, instead of waiting for a connection for ever.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { closedPort, runId } from '../support/services.js';
import { repoRoot, writeSnippetModules } from './doc-snippets.js';

const dir = join(repoRoot, '.tmp', `redis-unreachable-${runId}`);
const setups = writeSnippetModules(dir).filter(
  (snippet) => snippet.doc === 'docs/redis.md' && snippet.code.includes('Redis cannot be reached'),
);
after(() => rmSync(dir, { recursive: true, force: true }));

describe('docs/redis.md with Redis down', () => {
  it('has the ioredis and node-redis setups', () => assert.equal(setups.length, 2));

  for (const snippet of setups) {
    it(`${snippet.doc}:${snippet.fenceLine} stops, saying Redis cannot be reached`, async () => {
      const port = await closedPort();
      const run = await new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          ['--import', 'tsx', join(repoRoot, 'test/docs/run-snippet.ts'), snippet.path],
          {
            cwd: repoRoot,
            env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${port}` },
            timeout: 20_000,
            killSignal: 'SIGKILL',
          },
          (_error, stdout, stderr) => resolve({ code: child.exitCode, output: stdout + stderr }),
        );
      });
      assert.notEqual(run.code, 0, run.output);
      assert.notEqual(run.code, null, `still waiting after 20 s:\n${run.output}`);
      assert.match(run.output, /Redis cannot be reached at REDIS_URL \(ECONNREFUSED\): is it running\?/);
    });
  }
});
