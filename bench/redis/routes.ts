/**
 * The routes to Redis for one decision at a time, side by side: how close a lone decision can
 * get to a bare PING, and where the rest goes.
 *
 *   npm run bench:redis-routes      (Redis at SLUICE_REDIS_URL, default redis://127.0.0.1:6379)
 *
 * One call in flight on one hot key, the admitted path (a token bucket that never empties).
 * Routes, each on an ioredis client of its own:
 * - ping:           PING, the round trip and nothing else;
 * - eval_trivial:   EVALSHA of `return 1` with the key and arguments of a decision: entering a
 *                   script, without its work;
 * - script:         EVALSHA of sluice's one-take script with the arguments the store sends (the
 *                   server's clock: TIME, GET, SET PX), without sluice's Node side;
 * - fcall:          the same script body as a Redis Function, called with FCALL;
 * - take:           limiter.take(key) on a RedisStore (the server's clock), everything included;
 * - take_app_clock: the same on the application's clock (`timeSource: 'app'`): no TIME in the
 *                   script.
 * ROUNDS rounds (7); in each, every route runs CELL_MS (700 ms) after a short warm-up, in an
 * order that rotates per round. A figure is the median over rounds of the round's p50 latency,
 * measured around each call in Node. Last line: one JSON object, with each route's p50 divided by
 * PING's.
 */
import { Redis } from 'ioredis';
import { MAX_TOKEN_RATE, createLimiter, tokenBucket, type Limiter } from '../../src/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { singleDecisionScript } from '../../src/stores/redis/scripts.js';

const url = process.env.SLUICE_REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const CELL_MS = Number(process.env.CELL_MS ?? 700);
const WARMUP_MS = 100;
const run = `routes-${process.pid.toString(36)}-${Date.now().toString(36)}`;
const LIBRARY = `sluice_bench_${process.pid}`;

async function connect(): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, enableOfflineQueue: false });
  await client.connect();
  return client;
}

/** A limit that never refuses here: 10^6 tokens per 3.6 s, a burst of 10^9. */
async function limiterOn(client: Redis, timeSource: 'store' | 'app', prefix: string): Promise<Limiter> {
  const store = new RedisStore({ client, prefix, timeout: '1s', timeSource });
  const limiter = createLimiter({
    name: 'bench',
    rule: tokenBucket({ limit: MAX_TOKEN_RATE, period: '3600ms', burst: 1e9 }),
    store,
    timeout: '1s',
  });
  await limiter.take('hot');
  return limiter;
}

/** The arguments the store sends with a lone take's key, seen on the wire. */
async function loneTakeCommand(): Promise<{ args: string[] }> {
  const client = await connect();
  let seen: { args: string[] } | undefined;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
    if (seen === undefined && command.name === 'evalsha') {
      const args = command.args.map((a) => (Buffer.isBuffer(a) ? a.toString() : String(a)));
      // evalsha sha numkeys key ...args
      seen = { args: args.slice(3) };
    }
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  }) as typeof client.sendCommand;
  const limiter = await limiterOn(client, 'store', `${run}:probe:`);
  await limiter.take('hot');
  client.disconnect();
  if (seen === undefined) throw new Error('the store sent no EVALSHA');
  // The deadline (last argument, ms on the server's clock) far ahead: every call runs.
  seen.args[seen.args.length - 1] = String(Date.now() + 3_600_000);
  return seen;
}

async function p50(call: () => Promise<unknown>): Promise<number> {
  const end0 = performance.now() + WARMUP_MS;
  while (performance.now() < end0) await call();
  const latencies: number[] = [];
  const end = performance.now() + CELL_MS;
  while (performance.now() < end) {
    const started = performance.now();
    await call();
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  return latencies[latencies.length >> 1]!;
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[values.length >> 1]!;
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;

async function main(): Promise<void> {
  const { args } = await loneTakeCommand();
  const ping = await connect();
  const trivial = await connect();
  const script = await connect();
  const fcall = await connect();
  const trivialSha = (await trivial.script('LOAD', 'return 1')) as string;
  const scriptSha = (await script.script('LOAD', singleDecisionScript)) as string;
  // The same Lua as a function: KEYS and ARGV become the function's parameters.
  await fcall.call(
    'FUNCTION',
    'LOAD',
    'REPLACE',
    `#!lua name=${LIBRARY}\nredis.register_function('take', function(KEYS, ARGV)\n${singleDecisionScript}\nend)`,
  );
  const take = await limiterOn(await connect(), 'store', `${run}:store:`);
  const takeApp = await limiterOn(await connect(), 'app', `${run}:app:`);
  const hotKey = `${run}:raw:{hot}`;
  const routes: Record<string, () => Promise<unknown>> = {
    ping: () => ping.ping(),
    eval_trivial: () => trivial.evalsha(trivialSha, 1, hotKey, ...args),
    script: () => script.evalsha(scriptSha, 1, hotKey, ...args),
    fcall: () => fcall.call('FCALL', 'take', 1, `${hotKey}:f`, ...args),
    take: () => take.take('hot'),
    take_app_clock: () => takeApp.take('hot'),
  };
  const names = Object.keys(routes);
  const samples = new Map<string, number[]>(names.map((name) => [name, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(i + round) % names.length]!;
        samples.get(name)!.push(await p50(routes[name]!));
      }
    }
  } finally {
    await fcall.call('FUNCTION', 'DELETE', LIBRARY).catch(() => undefined);
    for (const client of [ping, trivial, script, fcall]) client.disconnect();
  }
  const json: Record<string, number | string> = { suite: 'redis-routes' };
  const pingMs = median(samples.get('ping')!);
  for (const name of names) {
    const ms = median(samples.get(name)!);
    json[`${name}_p50_ms`] = round3(ms);
    if (name !== 'ping') json[`ratio_${name}_vs_ping`] = round3(ms / pingMs);
    console.log(
      `${name.padEnd(15)} p50 ${(ms * 1000).toFixed(1).padStart(6)} µs  ${(ms / pingMs).toFixed(3)}× PING`,
    );
  }
  console.log(JSON.stringify(json));
  process.exit(0);
}

await main();
