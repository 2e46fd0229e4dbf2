/** Runs the cross-process exactness workers (test/support/redis-worker.ts) and sums them. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const worker = fileURLToPath(new URL('./redis-worker.ts', import.meta.url));

/** Starts `processes` workers, releases them together, and returns their admitted/error totals. */
export async function takeFromProcesses(
  processes: number,
  args: {
    mode: 'single' | 'cluster';
    target: string;
    prefix: string;
    name: string;
    count: number;
    burst: number;
  },
): Promise<{ admitted: number; errors: number }> {
  const children = Array.from({ length: processes }, () =>
    spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        worker,
        args.mode,
        args.target,
        args.prefix,
        args.name,
        String(args.count),
        String(args.burst),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    ),
  );
  try {
    const lines = children.map((child) => {
      const out: string[] = [];
      let buffer = '';
      const waiters: ((line: string) => void)[] = [];
      child.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8');
        let i: number;
        while ((i = buffer.indexOf('\n')) !== -1) {
          const line = buffer.slice(0, i);
          buffer = buffer.slice(i + 1);
          const waiter = waiters.shift();
          if (waiter) waiter(line);
          else out.push(line);
        }
      });
      const exited = new Promise<never>((_, reject) =>
        child.once('exit', (code) => reject(new Error(`worker exited with ${code}`))),
      );
      return () =>
        Promise.race([
          new Promise<string>((resolve) => {
            const line = out.shift();
            if (line !== undefined) resolve(line);
            else waiters.push(resolve);
          }),
          exited,
        ]);
    });
    const readers = lines;
    await Promise.all(readers.map(async (next) => assertLine(await next(), 'ready')));
    const results = readers.map((next) => next());
    for (const child of children) child.stdin.write('go\n');
    const totals = { admitted: 0, errors: 0 };
    for (const line of await Promise.all(results)) {
      const { admitted, errors } = JSON.parse(line) as { admitted: number; errors: number };
      totals.admitted += admitted;
      totals.errors += errors;
    }
    return totals;
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

function assertLine(line: string, expected: string): void {
  if (line !== expected) throw new Error(`worker said ${JSON.stringify(line)}, expected ${expected}`);
}
