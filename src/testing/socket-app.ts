/**
 * A {@link RunningApp} over a real socket on 127.0.0.1 (port 0), for adapters that run on a
 * `node:http` server or on another runtime's server: requests go through `fetch`, the open-body request (a body that never
 * finishes) through a raw socket, as a slow or hostile client would send it.
 */
import { once } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { HttpReply, RunningApp } from './http-conformance/harness.js';

/**
 * Makes `server` listen on a free port of 127.0.0.1 and returns the app the HTTP conformance
 * suite drives; `close` ends its connections and closes it.
 *
 * @example
 * httpConformance({ name: 'koa', header: nodeHeader, start: async (spec) => socketApp(createServer(build(spec).callback())) });
 */
export async function socketApp(server: Server): Promise<RunningApp> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return portApp(port, async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
}

/**
 * The app the HTTP conformance suite drives, for a server of any kind already listening on
 * 127.0.0.1:`port` (`Bun.serve`, `Deno.serve`): requests through `fetch`, the open-body and
 * abandoned requests through raw sockets. `close` stops the server.
 *
 * @example
 * const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handler });
 * return portApp(server.port, () => server.stop(true));
 */
export function portApp(port: number, close: () => Promise<void> | void): RunningApp {
  const base = `http://127.0.0.1:${port}`;
  return {
    async request(method, path, headers = {}) {
      // A bound on a response that never comes (a server that failed to answer), not a timing assertion.
      const init: RequestInit = { method, headers, signal: AbortSignal.timeout(10_000) };
      if (method === 'POST') init.body = '{"name":"thing"}';
      const response = await fetch(base + path, init);
      const out: Record<string, string> = {};
      response.headers.forEach((value, name) => (out[name] = value));
      return { status: response.status, headers: out, body: await response.text() };
    },
    requestWithOpenBody(path, headers) {
      return openBodyRequest(port, path, headers);
    },
    abandon(path, headers) {
      return abandonRequest(port, path, headers);
    },
    leaving(path, headers) {
      return Promise.resolve(leavingRequest(port, path, headers));
    },
    async close() {
      await close();
    },
  };
}

/**
 * Writes the head of a POST that announces 1 MB and part of its body, and resolves with the
 * response that arrives while the rest is still missing.
 */
function openBodyRequest(port: number, path: string, headers: Record<string, string>): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const reply = parseResponse(received);
      if (reply !== undefined) {
        socket.destroy();
        resolve(reply);
      }
    });
    socket.on('close', () => reject(new Error('the connection closed before a response arrived')));
    const lines = [
      `POST ${path} HTTP/1.1`,
      'Host: 127.0.0.1',
      'Content-Type: text/plain',
      'Content-Length: 1048576',
    ];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\npart of a body that never ends`);
  });
}

/**
 * Sends `POST path` to 127.0.0.1:`port` on a raw socket, waits for the response head and the
 * first bytes of its body, and closes the connection: a client that goes away mid-response.
 * Resolves once the socket is closed; rejects when the server closes first or answers nothing
 * within 10 s.
 *
 * @example
 * await abandonRequest(port, '/api/outcome', { 'x-outcome': 'stall' });
 */
export function abandonRequest(port: number, path: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let leaving = false;
    socket.setTimeout(10_000, () => socket.destroy(new Error('no response within 10 s')));
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (leaving || end === -1 || received.length === end + 4) return;
      leaving = true;
      socket.destroy();
    });
    socket.on('close', () =>
      leaving ? resolve() : reject(new Error('the server closed the connection before any body')),
    );
    const lines = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Length: 0'];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
}

/**
 * Sends a whole `POST path` (no body) on a real socket and returns at once; `leave()` closes the
 * connection, as a client that stops waiting would, and resolves once it is closed.
 */
export function leavingRequest(
  port: number,
  path: string,
  headers: Record<string, string>,
): { leave(): Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  const lines = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Length: 0'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  return {
    leave() {
      const closed = once(socket, 'close').then(() => undefined);
      socket.destroy();
      return closed;
    },
  };
}

/** A complete HTTP/1.1 response with a Content-Length body, or undefined while incomplete. */
function parseResponse(data: Buffer): HttpReply | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine, ...fields] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const field of fields) {
    const colon = field.indexOf(':');
    headers[field.slice(0, colon).trim().toLowerCase()] = field.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = data.subarray(end + 4);
  if (body.length < length) return undefined;
  return {
    status: Number(statusLine!.split(' ')[1]),
    headers,
    body: body.subarray(0, length).toString('utf8'),
  };
}

/**
 * Reads a request header from a `node:http` request (and so from Express's, or from Koa's
 * `ctx.req`); repeated headers are joined with a comma.
 *
 * @default undefined for a header the request does not carry
 * @example
 * nodeHeader(req, 'x-client') // 'c' for a request sent with `X-Client: c`
 */
export function nodeHeader(request: unknown, name: string): string | undefined {
  const value = (request as IncomingMessage).headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
