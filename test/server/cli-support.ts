/** Runs the real `sluice` CLI as a child process (TypeScript through tsx), with bounded waits. */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const bin = join(root, 'src/server/bin.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `sluice <args>` to its end (at most 30 s). */
export function runSluice(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', bin, ...args],
      { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Writes `text` to a new file in a fresh temporary directory; returns its path. */
export function policyFile(text: string, name = 'sluice.yaml'): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-policy-'));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
