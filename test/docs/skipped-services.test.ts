/**
 * A run without Redis or PostgreSQL must say so in its closing summary: the suites that need
 * them are skipped, and "skipped 0" would read as a complete run.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const fixture = fileURLToPath(new URL('fixtures/unreachable-service.ts', import.meta.url));

test('a suite skipped for an unreachable service counts as skipped in the summary', () => {
  const env = { ...process.env };
  delete env.CI; // under CI=true an unreachable service is a failure, not a skip
  delete env.NODE_TEST_CONTEXT; // else the nested runner reports to this one instead of printing
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', fixture], {
    encoding: 'utf8',
    env,
    timeout: 60_000,
  });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^# skipped 1$/m);
  assert.match(run.stdout, /^# pass 0$/m);
  assert.match(run.stdout, /# SKIP redis at 127\.0\.0\.1:1 is unreachable/);
});
