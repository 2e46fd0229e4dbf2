/** What the server benchmarks share: the CLI as a child process, medians, the load average. */
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

/** A server in a child process and the port it listens on. */
export interface Running {
  child: ChildProcess;
  port: number;
}

/** `sluice serve --config <config> --port 0 <args>`; the port is the first group of `found` in its output. */
export async function spawnSluice(config: string, args: string[], found: RegExp): Promise<Running> {
  const bin = fileURLToPath(new URL('../src/server/bin.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', bin, 'serve', '--config', config, '--port', '0', ...args],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk;
      const match = found.exec(output);
      if (match !== null) resolve(Number(match[1]));
    });
    child.once('exit', () => reject(new Error(`sluice serve exited:\n${output}`)));
  });
  child.stdout!.resume();
  return { child, port };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The load average, 1, 5 and 15 minutes. */
export const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/**
 * Requests/s autocannon gets from `GET /` on 127.0.0.1:`port` in `seconds`, each request with
 * `headers` besides autocannon's own; a non-2xx response or an error fails the run (the limit
 * under test must never fire).
 */
export async function helloRps(
  port: number,
  seconds: number,
  connections: number,
  pipelining: number,
  headers: Record<string, string> = {},
): Promise<number> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/`,
    connections,
    pipelining,
    duration: seconds,
    headers,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`port ${port}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  }
  return result.requests.average;
}
