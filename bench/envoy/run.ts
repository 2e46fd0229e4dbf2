/**
 * Envoy's rate limit service against what it stands on, measured in the same run:
 * - should_rate_limit: `sluice serve` (the real CLI) answering ShouldRateLimit over gRPC, one
 *   descriptor per call matching one rule that never refuses (10^9 per second), memory store;
 * - echo: a bare @grpc/grpc-js unary server that sends each request's bytes back.
 * Target: should_rate_limit ≥ 0.7 × echo calls/s, p99 ≤ 5 ms (Envoy's default timeout for the
 * call is 20 ms).
 *
 *   npm run bench:envoy
 *
 * Method: each server runs in its own child process on 127.0.0.1 port 0; this process only drives
 * them: 64 calls kept in flight on one channel (one HTTP/2 connection, as Envoy's cluster uses),
 * each as soon as the previous one on its lane answered, the same request bytes for both (so the
 * client's cost is the same). Both are warmed up, then ROUNDS (3) rounds measure each for SECONDS
 * (3), the order alternating every round; the ratio is computed per round from runs next to each
 * other. Reported: medians of calls/s, of the per-round ratios and of the should_rate_limit p99,
 * with the load average before and after. Any failed call fails the run. Last line: one JSON object.
 * Environment: BENCH_ENVOY_ROUNDS, BENCH_ENVOY_SECONDS.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, median, spawnSluice, type Running } from '../support.js';
import { Client, Metadata, Server, ServerCredentials, credentials } from '@grpc/grpc-js';

const ROUNDS = Number(process.env.BENCH_ENVOY_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_ENVOY_SECONDS ?? 3);
const CONCURRENCY = 64;
const SHOULD_RATE_LIMIT = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const ECHO = '/bench.Echo/Echo';

type Contender = 'echo' | 'should_rate_limit';
const contenders: readonly Contender[] = ['echo', 'should_rate_limit'];

/**
 * RateLimitRequest { domain: "edge", descriptors: [{ entries: [{ key: "remote_address",
 * value: "127.0.0.1" }] }] } on the wire (field numbers of Envoy's API), as Envoy sends it.
 */
function requestBytes(): Buffer {
  const field = (n: number, bytes: Buffer) =>
    Buffer.concat([Buffer.from([(n << 3) | 2, bytes.length]), bytes]);
  const entry = Buffer.concat([field(1, Buffer.from('remote_address')), field(2, Buffer.from('127.0.0.1'))]);
  return Buffer.concat([field(1, Buffer.from('edge')), field(2, field(1, entry))]);
}

const identity = (b: Buffer) => b;

/** The bare echo server, in a child process. */
async function serveEcho(): Promise<number> {
  const server = new Server();
  server.addService(
    {
      Echo: {
        path: ECHO,
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    {
      Echo: (call: { request: Buffer }, callback: (e: null, b: Buffer) => void) =>
        callback(null, call.request),
    },
  );
  return new Promise((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) =>
      error === null ? resolve(port) : reject(error),
    ),
  );
}

async function forkEcho(): Promise<Running> {
  const child = fork(fileURLToPath(import.meta.url), ['serve'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const [message] = (await once(child, 'message')) as [{ port: number }];
  return { child, port: message.port };
}

/** `sluice serve` (the CLI) with one Envoy domain that never refuses; the gRPC port from its output. */
async function startSluice(): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-envoy-'));
  const config = join(dir, 'sluice.yaml');
  writeFileSync(
    config,
    'version: 1\nrules: []\nenvoy:\n  domains:\n    - domain: edge\n      descriptors:\n' +
      '        - key: remote_address\n          rate_limit: { unit: second, requests_per_unit: 1000000000 }\n',
  );
  return spawnSluice(config, ['--grpc-port', '0'], /\(gRPC\) on 127\.0\.0\.1:(\d+)/);
}

interface Run {
  rps: number;
  p99: number;
}

/** 64 lanes on one channel, each calling again as soon as its call answered, for `seconds`. */
async function measure(contender: Contender, port: number, seconds: number): Promise<Run> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  const method = contender === 'echo' ? ECHO : SHOULD_RATE_LIMIT;
  const body = requestBytes();
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  const call = () =>
    new Promise<void>((resolve, reject) => {
      const started = performance.now();
      client.makeUnaryRequest(method, identity, identity, body, new Metadata(), {}, (error, reply) => {
        if (error !== null) return reject(error);
        // OVER_LIMIT (overall_code 2) would mean the limit was not what the bench measures.
        if (contender === 'should_rate_limit' && reply![1] !== 1) return reject(new Error('not OK'));
        latencies.push(performance.now() - started);
        resolve();
      });
    });
  const lane = async () => {
    while (performance.now() < end) await call();
  };
  const started = performance.now();
  try {
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  } finally {
    client.close();
  }
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / elapsed, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0 };
}

async function main(): Promise<void> {
  console.log(`load average before: ${load()}`);
  const servers: Record<Contender, Running> = {
    echo: await forkEcho(),
    should_rate_limit: await startSluice(),
  };
  const rps: Record<Contender, number[]> = { echo: [], should_rate_limit: [] };
  const p99: number[] = [];
  const ratio: number[] = [];
  try {
    for (const contender of contenders) await measure(contender, servers[contender].port, 1);
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? contenders : [...contenders].reverse();
      const got = {} as Record<Contender, number>;
      for (const contender of order) {
        const run = await measure(contender, servers[contender].port, SECONDS);
        got[contender] = run.rps;
        rps[contender].push(run.rps);
        if (contender === 'should_rate_limit') p99.push(run.p99);
      }
      ratio.push(got.should_rate_limit / got.echo);
      console.log(`round ${round + 1}/${ROUNDS} done`);
    }
  } finally {
    for (const { child } of Object.values(servers)) child.kill();
  }
  for (const contender of contenders)
    console.log(
      `${contender.padEnd(18)} median ${Math.round(median(rps[contender]))} calls/s  (${rps[contender].map(Math.round).join(', ')})`,
    );
  console.log(
    `should_rate_limit / echo median ${median(ratio).toFixed(3)} (target 0.7); should_rate_limit p99 median ${median(p99).toFixed(2)} ms (target 5)`,
  );
  console.log(`load average after: ${load()}`);
  console.log(
    JSON.stringify({
      suite: 'envoy',
      should_rate_limit_rps: Math.round(median(rps.should_rate_limit)),
      echo_rps: Math.round(median(rps.echo)),
      p99_ms: Number(median(p99).toFixed(3)),
    }),
  );
}

if (process.argv[2] === 'serve') {
  process.send!({ port: await serveEcho() });
} else {
  await main();
}
