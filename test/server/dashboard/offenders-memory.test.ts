/**
 * The top offenders' memory is fixed: a million refusals of distinct keys leave the heap within
 * 1 MB of where it was (measured in a child process with --expose-gc, see the .child.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

describe('the dashboard’s offenders', () => {
  it('hold the heap within 1 MB after 1,000,000 distinct refused keys', async () => {
    const child = fileURLToPath(new URL('./offenders-memory.child.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', child, '1000000'],
      { timeout: 110_000 },
    );
    const { growth, held } = JSON.parse(stdout) as { growth: number; held: number };
    assert.equal(held, 64, 'the summary is full');
    assert.ok(growth <= 1024 * 1024, `heap grew by ${growth} bytes`);
  });
});
