/**
 * A real HTTP server for the client tests (node:http, port 0, 127.0.0.1 only) that answers from a
 * script and records what it received, plus a fake clock and sleep so that no test waits.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { withRetries, type GiveUpEvent, type RetryOptions, type WaitEvent } from '../../src/client/index.js';

/** One scripted answer; `destroy` drops the connection after reading the whole request. */
export type Reply = { status: number; headers?: Record<string, string>; body?: string } | 'destroy';

/** A request as the server saw it. */
export interface Received {
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface ScriptedServer {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** Answers the n-th request with `replies[n]`, and every request after the script with the last reply. */
export async function scriptedServer(replies: Reply[]): Promise<ScriptedServer> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        method: req.method ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      const reply = replies[Math.min(received.length, replies.length) - 1] ?? { status: 200 };
      if (reply === 'destroy') {
        req.socket.destroy();
        return;
      }
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body ?? `answer ${received.length}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A URL on 127.0.0.1 where nothing listens: a port that was just free. */
export async function refusingUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/`;
}

/** A clock that only the fake sleep moves; `waits` records every wait asked for. */
export function fakeTime(start = Date.UTC(2026, 0, 1, 12, 0, 0)) {
  let now = start;
  const waits: number[] = [];
  return {
    waits,
    now: () => now,
    sleep: async (ms: number) => {
      waits.push(ms);
      now += ms;
    },
  };
}

/** A random source that returns `values` in turn, then the last one forever. */
export function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)] ?? 0;
}

const servers: ScriptedServer[] = [];

/** Closes every server {@link retrying} opened; a test file calls `after(closeServers)`. */
export async function closeServers(): Promise<void> {
  await Promise.all(servers.splice(0).map((s) => s.close()));
}

/**
 * A scripted server and a retrying fetch on a fake clock (random 0.5 unless overridden) that
 * records its events.
 */
export async function retrying(
  replies: Reply[],
  options: RetryOptions = {},
  fetchImpl: typeof fetch = fetch,
) {
  const server = await scriptedServer(replies);
  servers.push(server);
  const time = fakeTime();
  const waits: WaitEvent[] = [];
  const giveUps: GiveUpEvent[] = [];
  const api = withRetries(fetchImpl, {
    now: time.now,
    sleep: time.sleep,
    random: () => 0.5,
    onWait: (e) => waits.push(e),
    onGiveUp: (e) => giveUps.push(e),
    ...options,
  });
  return { server, time, waits, giveUps, api };
}
