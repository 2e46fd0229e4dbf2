/**
 * The Bun, Deno and workerd executables the dev dependencies ship, and a bounded way to run
 * them. Each package puts its binary in node_modules/.bin through an install script; where that
 * script did not run, the platform package holding the binary is looked in directly.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../docs/doc-snippets.js';

export type Runtime = 'bun' | 'deno' | 'workerd';

const modules = join(repoRoot, 'node_modules');

/** Where each platform package keeps its binary, under node_modules. */
const platformBinaries: Record<Runtime, (dir: string) => string> = {
  bun: (dir) => join(dir, 'bin', 'bun'),
  deno: (dir) => join(dir, 'deno'),
  workerd: (dir) => join(dir, 'bin', 'workerd'),
};
const platformScopes: Record<Runtime, string> = { bun: '@oven', deno: '@deno', workerd: '@cloudflare' };
const platformPrefix: Record<Runtime, string> = { bun: 'bun-', deno: '', workerd: 'workerd-' };

/** The runtime's executable, or undefined when neither its package nor its platform package holds one. */
export function binaryOf(runtime: Runtime): string | undefined {
  const linked = join(modules, '.bin', runtime);
  if (existsSync(linked)) return linked;
  const scope = join(modules, platformScopes[runtime]);
  if (!existsSync(scope)) return undefined;
  for (const name of readdirSync(scope)) {
    if (!name.startsWith(platformPrefix[runtime]) || !name.includes(process.platform)) continue;
    const binary = platformBinaries[runtime](join(scope, name));
    if (existsSync(binary)) return binary;
  }
  return undefined;
}

/**
 * Why a runtime's tests are skipped: its binary is absent; false when it is there. Under CI=true
 * an absent binary throws instead: CI installs them, so their tests must run.
 */
export function skipWithout(runtime: Runtime): string | false {
  if (binaryOf(runtime) !== undefined) return false;
  const reason = `no ${runtime} binary in node_modules (the ${runtime} dev dependency is not installed)`;
  if (process.env.CI === 'true') throw new Error(`${reason}; under CI=true this is a failure, not a skip`);
  return reason;
}

export interface RunResult {
  code: number | null;
  output: string;
}

/** Runs `binary args` in the repository, killed after `timeoutMs`: a hung runtime fails the test. */
export function run(
  binary: string,
  args: readonly string[],
  timeoutMs: number,
  env: Record<string, string> = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      binary,
      args,
      {
        cwd: repoRoot,
        env: { ...process.env, NO_COLOR: '1', ...env },
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
      },
      (_error, stdout, stderr) => resolve({ code: child.exitCode, output: stdout + stderr }),
    );
  });
}

/** The files every runtime runs: the fetch adapter's conformance, the core properties, the memory store. */
export const portableTests = [
  'test/adapters/fetch.test.ts',
  'test/core/algorithms.property.test.ts',
  'test/core/adjust.property.test.ts',
  'test/core/window-rules.property.test.ts',
  'test/stores/memory-contract.test.ts',
  'test/runtimes/redis-store.runtime.ts',
  'test/runtimes/doc-servers.runtime.ts',
];
