/**
 * A flood of 1,000,000 distinct keys costs one rule at most 2 MB of heap (and array buffers): both generations full
 * and the evicted-bucket summary allocated. Measured in a child process with --expose-gc, so that
 * nothing else in the test run shares the heap.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

it('heap growth after 1,000,000 distinct keys stays within 2 MB per rule', async () => {
  const child = fileURLToPath(new URL('./memory-heap.child.ts', import.meta.url));
  const { stdout } = await run(process.execPath, ['--expose-gc', '--import', 'tsx', child], {
    timeout: 120_000,
  });
  const result = JSON.parse(stdout.trim().split('\n').at(-1) as string) as {
    heapGrowth: number;
    buckets: number;
    summaryBytes: number;
  };
  assert.equal(result.buckets, 8192, 'both generations are full');
  assert.equal(result.summaryBytes, 4 * 16384 * 8, 'the summary is allocated');
  assert.ok(result.heapGrowth <= 2 * 1024 * 1024, `heap grew by ${result.heapGrowth} bytes`);
});
