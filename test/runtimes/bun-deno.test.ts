/**
 * The portable tests on Bun and on Deno themselves: the HTTP conformance suite through
 * sluice/fetch on each runtime's own server, the core property tests, the memory store's
 * contract, the Redis store through ioredis and node-redis, and docs/fetch.md's example for the
 * runtime. Each runtime runs them as one child process, killed if it hangs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { binaryOf, portableTests, run, skipWithout, type RunResult } from './binaries.js';

const RUN_TIMEOUT_MS = 240_000;

/** The suites each run must report, by the names the files give them. */
const suites = (runtime: string) => [
  `http conformance: fetch on ${runtime}`,
  `store conformance: redis on ${runtime} (ioredis)`,
  `store conformance: redis on ${runtime} (node-redis)`,
  `docs/fetch.md on ${runtime}`,
  'MemoryStore contract',
];

function assertPassed(runtime: string, result: RunResult, summary: RegExp): void {
  const tail = result.output.slice(-6000);
  assert.equal(result.code, 0, `${runtime} exited with ${result.code}:\n${tail}`);
  assert.match(result.output, summary, `${runtime} reported failures:\n${tail}`);
  for (const name of suites(runtime)) assert.ok(result.output.includes(name), `${runtime} ran no "${name}"`);
}

describe('on bun', { skip: skipWithout('bun') }, () => {
  it('the portable tests pass', async () => {
    const files = portableTests.map((file) => `./${file}`);
    const result = await run(binaryOf('bun')!, ['test', '--timeout', '60000', ...files], RUN_TIMEOUT_MS);
    assertPassed('bun', result, /\n\s*0 fail\n/);
  });
});

describe('on deno', { skip: skipWithout('deno') }, () => {
  it('the portable tests pass', async () => {
    // --sloppy-imports: the sources import each other as .js, which tsc maps to .ts and Deno does not.
    const args = ['test', '--allow-all', '--sloppy-imports', '--no-check', ...portableTests];
    const result = await run(binaryOf('deno')!, args, RUN_TIMEOUT_MS);
    assertPassed('deno', result, /ok \| \d+ passed \(\d+ steps\) \| 0 failed/);
  });
});
