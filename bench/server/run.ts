/**
 * The sluice server against what it stands on, measured in the same run:
 * - decide: `sluice serve` (the real CLI) answering POST /v1/decisions, one request item per call
 *   (matched against one rule keyed by address, memory store), against hello: a bare node:http
 *   hello-world. Target: decide ≥ 0.75 × hello.
 * - gateway: `sluice serve` in gateway mode in front of that hello-world, every request decided by
 *   one rule and forwarded, against proxy: http-proxy-3 alone in front of the same hello-world
 *   with the same keep-alive pool and no limit in the path. Target: gateway ≥ 0.9 × proxy.
 * - dashboard: decide again, on a server whose dashboard has one Server-Sent Events subscriber
 *   reading its feed for the whole run, against decide. Target: dashboard ≥ 0.97 × decide.
 *
 *   npm run bench:server
 *
 * Method: every server runs in its own child process on 127.0.0.1 port 0 (this process only drives
 * autocannon: 64 connections, kept alive, one request at a time on each). Every contender is warmed
 * up once, then ROUNDS (10) rounds measure the five for SECONDS (2) each, the order rotating every
 * round, and each ratio is computed per round from runs next to each other. Reported: medians of
 * the per-round requests/s, of the per-round ratios and of the decide runs' p99 latency, with the
 * load average before and after (a shared 2-core machine: read the figures with it).
 * Environment: BENCH_SERVER_ROUNDS, BENCH_SERVER_SECONDS. The limit never refuses (10^6 per
 * second, a bucket as large), so the admitted path is what every request pays; a run that sees
 * anything but a 2xx fails. Last line: one JSON object.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, median, spawnSluice, type Running } from '../support.js';
import autocannon from 'autocannon';

const ROUNDS = Number(process.env.BENCH_SERVER_ROUNDS ?? 10);
const SECONDS = Number(process.env.BENCH_SERVER_SECONDS ?? 2);
const CONNECTIONS = 64;
const HELLO = '{"hello":"world"}';
const DECISION = JSON.stringify({
  items: [{ request: { method: 'GET', path: '/', address: '127.0.0.1' } }],
});

type Contender = 'hello' | 'decide' | 'proxy' | 'gateway' | 'dashboard';
const contenders: readonly Contender[] = ['hello', 'decide', 'proxy', 'gateway', 'dashboard'];

/** The hello-world (also the upstream of proxy and gateway), in a child process. */
async function serveHello(): Promise<number> {
  return listen(
    createServer((req, res) => {
      req.resume();
      res.setHeader('Content-Type', 'application/json');
      res.end(HELLO);
    }),
  );
}

/** http-proxy-3 with nothing else, set up as the gateway sets it up. */
async function serveProxy(upstreamPort: number): Promise<number> {
  const { createProxyServer } = await import('http-proxy-3');
  const agent = new Agent({ keepAlive: true, scheduling: 'lifo' });
  const proxy = createProxyServer({ xfwd: false });
  const target = new URL(`http://127.0.0.1:${upstreamPort}`);
  return listen(
    createServer((req, res) =>
      proxy.web(req, res, { target, agent }, () => {
        res.statusCode = 502;
        res.end();
      }),
    ),
  );
}

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

async function forkServer(args: string[]): Promise<Running> {
  const child = fork(fileURLToPath(import.meta.url), ['serve', ...args], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const [message] = (await once(child, 'message')) as [{ port: number }];
  return { child, port: message.port };
}

/** `sluice serve` (the CLI) on a policy of one rule that never refuses; the port from its first line. */
async function startSluice(upstreamPort?: number): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  const config = join(dir, 'sluice.yaml');
  writeFileSync(
    config,
    'version: 1\n' +
      (upstreamPort === undefined ? '' : `upstream: http://127.0.0.1:${upstreamPort}\n`) +
      'rules:\n  - { name: bench, key: [address], algorithm: token-bucket, limit: 1000000, period: 1s }\n',
  );
  return spawnSluice(config, [], /on http:\/\/127\.0\.0\.1:(\d+)/);
}

interface Run {
  rps: number;
  p99: number;
}

/** One subscriber of a server's dashboard feed, reading (and dropping) every event until closed. */
async function subscribe(port: number): Promise<() => void> {
  const controller = new AbortController();
  const response = await fetch(`http://127.0.0.1:${port}/dashboard/events`, { signal: controller.signal });
  if (response.status !== 200) throw new Error(`the dashboard feed answered ${response.status}`);
  void (async () => {
    for await (const _chunk of response.body as unknown as AsyncIterable<Uint8Array>);
  })().catch(() => {});
  return () => controller.abort();
}

async function measure(contender: Contender, port: number, seconds: number): Promise<Run> {
  const decide = contender === 'decide' || contender === 'dashboard';
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${decide ? '/v1/decisions' : '/'}`,
    connections: CONNECTIONS,
    duration: seconds,
    ...(decide
      ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: DECISION }
      : { method: 'GET' }),
  });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0)
    throw new Error(
      `${contender}: ${result.non2xx} non-2xx responses, ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  return { rps: result.requests.average, p99: result.latency.p99 };
}

async function main(): Promise<void> {
  console.log(`load average before: ${load()}`);
  const hello = await forkServer(['hello']);
  const servers: Record<Contender, Running> = {
    hello,
    decide: await startSluice(),
    proxy: await forkServer(['proxy', String(hello.port)]),
    gateway: await startSluice(hello.port),
    dashboard: await startSluice(),
  };
  const unsubscribe = await subscribe(servers.dashboard.port);
  const rps: Record<Contender, number[]> = { hello: [], decide: [], proxy: [], gateway: [], dashboard: [] };
  const decideP99: number[] = [];
  const decideRatio: number[] = [];
  const gatewayRatio: number[] = [];
  const dashboardRatio: number[] = [];
  try {
    // Warm-up: JIT, connection set-up, the upstream pool.
    for (const contender of contenders) await measure(contender, servers[contender].port, 1);
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order each round, so that no contender always runs first or last.
      const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!);
      const got = {} as Record<Contender, number>;
      for (const contender of order) {
        const run = await measure(contender, servers[contender].port, SECONDS);
        got[contender] = run.rps;
        rps[contender].push(run.rps);
        if (contender === 'decide') decideP99.push(run.p99);
      }
      decideRatio.push(got.decide / got.hello);
      gatewayRatio.push(got.gateway / got.proxy);
      dashboardRatio.push(got.dashboard / got.decide);
      console.log(`round ${round + 1}/${ROUNDS} done`);
    }
  } finally {
    unsubscribe();
    for (const { child } of Object.values(servers)) child.kill();
  }
  for (const contender of contenders)
    console.log(
      `${contender.padEnd(9)} median ${Math.round(median(rps[contender]))} req/s  (${rps[contender].map(Math.round).join(', ')})`,
    );
  console.log(
    `decide / hello median ${median(decideRatio).toFixed(3)} (target 0.75); gateway / proxy median ${median(gatewayRatio).toFixed(3)} (target 0.9); dashboard / decide median ${median(dashboardRatio).toFixed(3)} (target 0.97)`,
  );
  console.log(`load average after: ${load()}`);
  console.log(
    JSON.stringify({
      suite: 'server',
      decide_rps: Math.round(median(rps.decide)),
      hello_rps: Math.round(median(rps.hello)),
      gateway_rps: Math.round(median(rps.gateway)),
      proxy_rps: Math.round(median(rps.proxy)),
      dashboard_rps: Math.round(median(rps.dashboard)),
      dashboard_ratio: Number(median(dashboardRatio).toFixed(3)),
      decide_p99_ms: median(decideP99),
    }),
  );
}

if (process.argv[2] === 'serve') {
  const port = process.argv[3] === 'hello' ? await serveHello() : await serveProxy(Number(process.argv[4]));
  process.send!({ port });
} else {
  await main();
}
