/**
 * Serves a Fetch handler on 127.0.0.1 (a free port) with the server of the runtime the test
 * runs on, handing it the peer address the way that server does: `Bun.serve` (its `server`),
 * `Deno.serve` (its `info`), and under node @hono/node-server (the socket's address).
 */
import type { Server } from 'node:http';
import type { PeerInfo } from '../../src/adapters/fetch/index.js';
import { portApp, socketApp, type RunningApp } from '../../src/testing/index.js';

type Handler = (request: Request, info?: PeerInfo) => Promise<Response>;

interface BunServer {
  port: number;
  stop(closeActive?: boolean): Promise<void> | void;
}
interface DenoServer {
  addr: { port: number };
  shutdown(): Promise<void>;
}
const runtime = globalThis as unknown as {
  Bun?: { serve(options: object): BunServer };
  Deno?: { serve(options: object, handler: Handler): DenoServer };
};

/** The name of the runtime running this test: `bun`, `deno` or `node`. */
export const runtimeName = runtime.Bun !== undefined ? 'bun' : runtime.Deno !== undefined ? 'deno' : 'node';

export async function serveFetch(handler: Handler): Promise<RunningApp> {
  if (runtime.Bun !== undefined) {
    const server = runtime.Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handler });
    return portApp(server.port, () => server.stop(true));
  }
  if (runtime.Deno !== undefined) {
    const server = runtime.Deno.serve({ port: 0, hostname: '127.0.0.1', onListen() {} }, handler);
    return portApp(server.addr.port, () => server.shutdown());
  }
  const { createAdaptorServer } = await import('@hono/node-server');
  const server = createAdaptorServer({
    fetch: (request: Request, env: { incoming: { socket: { remoteAddress?: string } } }) =>
      handler(request, { address: env.incoming.socket.remoteAddress }),
  }) as Server;
  return socketApp(server);
}
