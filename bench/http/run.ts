/**
 * HTTP overhead of a rate limit: requests/s of a hello-world route with a limit that never fires,
 * divided by requests/s of the same server without one, for sluice on node:http, Fastify and
 * Express, and for the peers express-rate-limit and @fastify/rate-limit, measured in the same run.
 *
 *   npm run bench:http
 *
 * Method: each server runs in its own child process on 127.0.0.1 port 0 (this process only drives
 * autocannon, so client and server do not share an event loop). Every server is warmed up once,
 * then ROUNDS (12) rounds measure each framework's bare / sluice / peer servers back to back for
 * SECONDS (1) each, the order rotating every round (A/B/A/B), and a ratio is computed per round
 * from the runs next to each other. Reported: the median of those per-round ratios (A/A noise on
 * a shared 2-core machine is 10% and more; the pairing and the median absorb it). Environment:
 * BENCH_HTTP_ROUNDS, BENCH_HTTP_SECONDS. All limits use a memory store and a per-IP key
 * (`req.socket.remoteAddress` for sluice, the peers' default `req.ip`) and are set so high that
 * no request is refused: the admitted path is what every request pays. Every limited server sends
 * rate-limit headers (sluice: RateLimit-Policy/RateLimit; the peers: their defaults).
 *
 * The floor (node:http and Fastify): the bare server setting the headers an admitted request of
 * this benchmark gets from sluice (RateLimit-Policy and RateLimit: autocannon sends no Origin, so
 * no Access-Control-Expose-Headers) with fixed values of the same length, the framework's
 * ordinary way, and deciding nothing. Its ratio is what sending those headers costs any limit;
 * the rest of a limit's ratio is its decision.
 *
 * Requests from a page on another origin (node:http): the bare and the sluice server measured
 * once more per round with an `Origin` header, which makes sluice add Access-Control-Expose-Headers
 * to every admitted response (`node_cors_ratio`).
 * Last line: one JSON object.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { helloRps } from '../support.js';

// Many short runs rather than a few long ones: load from other processes on a shared machine
// drifts over seconds, and only runs next to each other see the same drift.
const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 12);
const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 1);
const CONNECTIONS = 20;
// Pipelining keeps the one-core client ahead of the server, so the server is what is measured.
const PIPELINING = 10;
const HUGE = 1_000_000_000;

type Framework = 'node' | 'fastify' | 'express';
type Variant = 'bare' | 'sluice' | 'peer' | 'floor';
const frameworks: Record<Framework, readonly Variant[]> = {
  node: ['bare', 'sluice', 'floor'],
  fastify: ['bare', 'sluice', 'peer', 'floor'],
  express: ['bare', 'sluice', 'peer'],
};

const HELLO = '{"hello":"world"}';
/** What sluice sends on an admitted request of this benchmark, as fixed values: the floor's headers. */
const FLOOR_HEADERS = {
  'RateLimit-Policy': '"bench";q=1000000;w=1',
  RateLimit: '"bench";r=999999;t=1',
} as const;

/** Builds one server in this (child) process, listening on 127.0.0.1 port 0; returns the port. */
async function serve(framework: Framework, variant: Variant): Promise<number> {
  const { MemoryStore, createLimiter, tokenBucket, MAX_TOKEN_RATE } = await import('../../src/index.js');
  // The highest rate a token bucket takes (10^6 per second): far above what one process serves here.
  const limits = () =>
    createLimiter({
      name: 'bench',
      rule: tokenBucket({ limit: MAX_TOKEN_RATE, period: '1s' }),
      store: new MemoryStore(),
    });
  const key = (req: { socket: { remoteAddress?: string | undefined } }) => req.socket.remoteAddress;
  const floorHeaders = Object.entries(FLOOR_HEADERS);

  if (framework === 'node') {
    const { rateLimit } = await import('../../src/adapters/node/index.js');
    const limit = variant === 'sluice' ? rateLimit({ limits: limits(), key }) : undefined;
    const server = createServer(async (req, res) => {
      if (limit !== undefined && !(await limit(req, res))) return;
      if (variant === 'floor') for (const [name, value] of floorHeaders) res.setHeader(name, value);
      res.setHeader('Content-Type', 'application/json');
      res.end(HELLO);
    });
    return listen(server);
  }
  if (framework === 'fastify') {
    const { default: Fastify } = await import('fastify');
    const app = Fastify();
    if (variant === 'sluice') {
      const { rateLimitPlugin } = await import('../../src/adapters/fastify/index.js');
      await app.register(rateLimitPlugin, { limits: limits(), key });
    } else if (variant === 'peer') {
      const { default: fastifyRateLimit } = await import('@fastify/rate-limit');
      await app.register(fastifyRateLimit, { max: HUGE, timeWindow: 60_000 });
    } else if (variant === 'floor') {
      app.addHook('onRequest', (_request, reply, done) => {
        for (const [name, value] of floorHeaders) reply.header(name, value);
        done();
      });
    }
    app.get('/', async () => ({ hello: 'world' }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    return (app.server.address() as { port: number }).port;
  }
  const { default: express } = await import('express');
  const app = express();
  if (variant === 'sluice') {
    const { rateLimit } = await import('../../src/adapters/express/index.js');
    app.use(rateLimit({ limits: limits(), key }));
  } else if (variant === 'peer') {
    const { rateLimit } = await import('express-rate-limit');
    app.use(rateLimit({ windowMs: 60_000, limit: HUGE, standardHeaders: 'draft-8', legacyHeaders: false }));
  }
  app.get('/', (_req, res) => void res.json({ hello: 'world' }));
  return listen(createServer(app));
}

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

interface Running {
  name: string;
  child: ChildProcess;
  port: number;
}

async function start(framework: Framework, variant: Variant): Promise<Running> {
  const child = fork(fileURLToPath(import.meta.url), ['serve', framework, variant], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const [message] = (await once(child, 'message')) as [{ port: number }];
  return { name: `${framework}_${variant}`, child, port: message.port };
}

/** What a browser adds to a request from a page on another origin, for the CORS pair. */
const FROM_ANOTHER_ORIGIN = { origin: 'https://app.example' };

function measure(port: number, seconds: number, headers?: Record<string, string>): Promise<number> {
  return helloRps(port, seconds, CONNECTIONS, PIPELINING, headers);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function main(): Promise<void> {
  const servers = new Map<string, Running>();
  for (const [framework, variants] of Object.entries(frameworks) as [Framework, readonly Variant[]][]) {
    for (const variant of variants) {
      const running = await start(framework, variant);
      servers.set(running.name, running);
      await measure(running.port, 1); // warm-up: JIT and connection set-up
    }
  }
  const rps = new Map<string, number[]>();
  const ratios = new Map<string, number[]>();
  const push = (map: Map<string, number[]>, name: string, value: number) =>
    map.set(name, [...(map.get(name) ?? []), value]);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [framework, variants] of Object.entries(frameworks) as [Framework, readonly Variant[]][]) {
        // Rotate the order each round, so that no variant always runs first or last.
        const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
        const got: Partial<Record<Variant, number>> = {};
        for (const variant of order) {
          const value = await measure(servers.get(`${framework}_${variant}`)!.port, SECONDS);
          got[variant] = value;
          push(rps, `${framework}_${variant}`, value);
        }
        push(ratios, `${framework}_ratio`, got.sluice! / got.bare!);
        if (got.peer !== undefined) push(ratios, `${framework}_peer_ratio`, got.peer / got.bare!);
        if (got.floor !== undefined) push(ratios, `${framework}_floor_ratio`, got.floor / got.bare!);
      }
      // The CORS pair, in an order that alternates per round.
      const pair: Variant[] = round % 2 === 0 ? ['bare', 'sluice'] : ['sluice', 'bare'];
      const cors: Partial<Record<Variant, number>> = {};
      for (const variant of pair) {
        cors[variant] = await measure(servers.get(`node_${variant}`)!.port, SECONDS, FROM_ANOTHER_ORIGIN);
      }
      push(ratios, 'node_cors_ratio', cors.sluice! / cors.bare!);
      console.log(`round ${round + 1}/${ROUNDS} done`);
    }
  } finally {
    for (const { child } of servers.values()) child.kill();
  }
  for (const [name, values] of rps) {
    console.log(
      `${name.padEnd(16)} median ${Math.round(median(values))} req/s  (${values.map(Math.round).join(', ')})`,
    );
  }
  const ratio = (name: string) => Number(median(ratios.get(name)!).toFixed(3));
  console.log(
    JSON.stringify({
      suite: 'http',
      node_ratio: ratio('node_ratio'),
      fastify_ratio: ratio('fastify_ratio'),
      express_ratio: ratio('express_ratio'),
      fastify_peer_ratio: ratio('fastify_peer_ratio'),
      express_peer_ratio: ratio('express_peer_ratio'),
      node_floor_ratio: ratio('node_floor_ratio'),
      node_cors_ratio: ratio('node_cors_ratio'),
      fastify_floor_ratio: ratio('fastify_floor_ratio'),
    }),
  );
}

if (process.argv[2] === 'serve') {
  const port = await serve(process.argv[3] as Framework, process.argv[4] as Variant);
  process.send!({ port });
} else {
  await main();
}
