/**
 * One server of the runtimes benchmark, run by Bun or Deno (not node): a hello-world Fetch
 * handler, bare or behind sluice/fetch with a per-IP limit on the memory store that never fires.
 * Prints `port <n>` once it listens. Usage: bun server.ts bare|sluice
 */
import { MAX_TOKEN_RATE, MemoryStore, createLimiter, ipKey, tokenBucket } from '../../src/index.js';
import { clientAddressOf, rateLimit } from '../../src/adapters/fetch/index.js';

type Handler = (request: Request, info?: unknown) => Response | Promise<Response>;
const runtime = globalThis as unknown as {
  Bun?: { serve(options: object): { port: number } };
  Deno?: { serve(options: object, handler: Handler): unknown };
};

const HELLO = '{"hello":"world"}';
const hello: Handler = () => new Response(HELLO, { headers: { 'content-type': 'application/json' } });

let handler = hello;
if (process.argv[2] === 'sluice') {
  // The highest rate a token bucket takes (10^6 per second): far above what one process serves.
  const limits = createLimiter({
    name: 'bench',
    rule: tokenBucket({ limit: MAX_TOKEN_RATE, period: '1s' }),
    store: new MemoryStore(),
  });
  handler = rateLimit({ limits, key: (request) => ipKey(clientAddressOf(request)) }).wrap(hello);
}

if (runtime.Bun !== undefined) {
  const server = runtime.Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handler });
  console.log(`port ${server.port}`);
} else {
  runtime.Deno!.serve(
    { port: 0, hostname: '127.0.0.1', onListen: ({ port }: { port: number }) => console.log(`port ${port}`) },
    handler,
  );
}
