/**
 * sluice/fetch on Bun and on Deno: requests/s of a hello-world Fetch handler behind a limit that
 * never fires (memory store, per-IP key, rate-limit headers sent), divided by requests/s of the
 * same runtime's bare hello-world, measured in the same run.
 *
 *   npm run bench:runtimes
 *
 * Method: the four servers (bun bare, bun sluice, deno bare, deno sluice; bench/runtimes/server.ts)
 * each run in their own child process on 127.0.0.1 port 0, and this process only drives
 * autocannon. Every server is warmed up once; then ROUNDS (12) rounds measure each runtime's bare
 * and sluice servers back to back for SECONDS (1) each, the order alternating every round, and a
 * ratio is computed per round from the two runs next to each other. Reported: each server's median
 * requests/s and each runtime's median of the per-round ratios, with the load average. Environment:
 * BENCH_RUNTIMES_ROUNDS, BENCH_RUNTIMES_SECONDS. Last line: one JSON object.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { helloRps, load, median } from '../support.js';

const ROUNDS = Number(process.env.BENCH_RUNTIMES_ROUNDS ?? 12);
const SECONDS = Number(process.env.BENCH_RUNTIMES_SECONDS ?? 1);
const CONNECTIONS = 20;
// Pipelining keeps the one-core client ahead of the server, so the server is what is measured.
const PIPELINING = 10;

type Runtime = 'bun' | 'deno';
type Variant = 'bare' | 'sluice';
const runtimes: readonly Runtime[] = ['bun', 'deno'];
const variants: readonly Variant[] = ['bare', 'sluice'];

const bin = (name: string) => fileURLToPath(new URL(`../../node_modules/.bin/${name}`, import.meta.url));
const server = fileURLToPath(new URL('./server.ts', import.meta.url));
const command: Record<Runtime, (variant: Variant) => [string, string[]]> = {
  bun: (variant) => [bin('bun'), [server, variant]],
  // The sources import each other as .js, which Deno maps to .ts only with --sloppy-imports.
  deno: (variant) => [bin('deno'), ['run', '--allow-all', '--sloppy-imports', '--no-check', server, variant]],
};

interface Running {
  child: ChildProcess;
  port: number;
}

function start(runtime: Runtime, variant: Variant): Promise<Running> {
  const [file, args] = command[runtime](variant);
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk;
      const match = /port (\d+)/.exec(output);
      if (match !== null) resolve({ child, port: Number(match[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${runtime} ${variant} exited with ${code}:\n${output}`)));
  });
}

function measure(port: number, seconds: number): Promise<number> {
  return helloRps(port, seconds, CONNECTIONS, PIPELINING);
}

async function main(): Promise<void> {
  console.log(`load average before: ${load()}`);
  const servers = new Map<string, Running>();
  const rps = new Map<string, number[]>();
  const ratios = new Map<Runtime, number[]>();
  try {
    for (const runtime of runtimes) {
      for (const variant of variants) {
        const running = await start(runtime, variant);
        servers.set(`${runtime}_${variant}`, running);
        await measure(running.port, 1); // warm-up: JIT and connection set-up
      }
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const runtime of runtimes) {
        // Alternate the order each round, so that neither variant always runs first.
        const order = round % 2 === 0 ? variants : [...variants].reverse();
        const got: Partial<Record<Variant, number>> = {};
        for (const variant of order) {
          const name = `${runtime}_${variant}`;
          got[variant] = await measure(servers.get(name)!.port, SECONDS);
          rps.set(name, [...(rps.get(name) ?? []), got[variant]!]);
        }
        ratios.set(runtime, [...(ratios.get(runtime) ?? []), got.sluice! / got.bare!]);
      }
      console.log(`round ${round + 1}/${ROUNDS} done`);
    }
  } finally {
    for (const { child } of servers.values()) child.kill();
  }
  for (const [name, values] of rps) {
    console.log(
      `${name.padEnd(12)} median ${Math.round(median(values))} req/s  (${values.map(Math.round).join(', ')})`,
    );
  }
  console.log(`load average after: ${load()}`);
  const ratio = (runtime: Runtime) => Number(median(ratios.get(runtime)!).toFixed(3));
  console.log(JSON.stringify({ suite: 'runtimes', bun_ratio: ratio('bun'), deno_ratio: ratio('deno') }));
}

await main();
