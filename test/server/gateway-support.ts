/**
 * A real upstream for gateway tests (node:http on a free loopback port) that records what it
 * received, and the least of WebSocket (RFC 6455) both ends need: the handshake and one
 * unfragmented text frame each way, masked from the client as the protocol requires.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  createServer,
  request,
  type ClientRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC11B65';

export interface Upstream {
  url: string;
  /** Every request it received (upgrades too), in order. */
  readonly seen: IncomingMessage[];
  /** TCP connections opened to it so far. */
  connections(): number;
  close(): Promise<void>;
}

/**
 * Starts an upstream: `handler` answers plain requests (after they are recorded); a WebSocket
 * upgrade is accepted and each text frame sent back as `echo: <text>`.
 */
export async function startUpstream(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<Upstream> {
  const seen: IncomingMessage[] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    seen.push(req);
    handler(req, res);
  });
  server.on('connection', () => connections++);
  // Upgraded sockets are no longer the server's: it neither waits for them nor closes them.
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    seen.push(req);
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    // As WebSocket servers do: the peer's end ends the connection.
    socket.once('end', () => socket.end());
    const accept = createHash('sha1')
      .update(`${String(req.headers['sec-websocket-key'])}${WS_GUID}`)
      .digest();
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${accept.toString('base64')}\r\n\r\n`,
    );
    readFrames(socket, (text) => socket.write(frame(`echo: ${text}`, false)));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of upgraded) socket.destroy();
      }),
  };
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** What a WebSocket handshake got: the 101 and its socket, or the HTTP response that refused it. */
export type Handshake =
  | { upgraded: true; socket: Socket; headers: IncomingMessage['headers'] }
  | { upgraded: false; status: number; headers: IncomingMessage['headers']; body: string };

/** Opens a WebSocket to `url` (ws over http); bounded at 10 s. */
export function openWebSocket(url: string, headers: Record<string, string> = {}): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        ...headers,
      },
      timeout: 10_000,
    });
    req.on('upgrade', (res: IncomingMessage, socket: Socket) =>
      resolve({ upgraded: true, socket, headers: res.headers }),
    );
    req.on('response', (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ upgraded: false, status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('no handshake within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

/** Sends one text message on a client socket and resolves with the first message back. */
export function exchange(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    readFrames(socket, resolve);
    socket.once('error', reject);
    socket.write(frame(text, true));
  });
}

/** Encodes one final text frame (payload under 64 KiB), masked when a client sends it. */
function frame(text: string, masked: boolean): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const length = payload.length < 126 ? [payload.length] : [126, payload.length >> 8, payload.length & 255];
  const head = Buffer.from([0x81, (masked ? 0x80 : 0) | length[0]!, ...length.slice(1)]);
  if (!masked) return Buffer.concat([head, payload]);
  const mask = randomBytes(4);
  return Buffer.concat([head, mask, payload.map((byte, i) => byte ^ mask[i % 4]!)]);
}

/** Calls `onText` with each whole text frame read from `socket` (masked or not); skips others. */
function readFrames(socket: Duplex, onText: (text: string) => void): void {
  let buffered = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      if (buffered.length < 2) return;
      const text = (buffered[0]! & 0x0f) === 1;
      const masked = (buffered[1]! & 0x80) !== 0;
      let length = buffered[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffered.length < 4) return;
        length = buffered.readUInt16BE(2);
        offset = 4;
      }
      const start = offset + (masked ? 4 : 0);
      if (buffered.length < start + length) return;
      const payload = Buffer.from(buffered.subarray(start, start + length));
      if (masked)
        for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ buffered[offset + (i % 4)]!;
      buffered = buffered.subarray(start + length);
      // Control frames (close, ping) carry no message.
      if (text) onText(payload.toString('utf8'));
    }
  });
}

/** A response read off a raw socket: status, headers (names in lower case) and body. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends one request exactly as written (target and header values byte for byte, which node's
 * client and fetch would respell or refuse) and reads the whole response; bounded at 10 s.
 */
export function rawRequest(
  url: string,
  method: string,
  target: string,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const lines = [`${method} ${target} HTTP/1.1`];
  if (!Object.keys(headers).some((name) => name.toLowerCase() === 'host'))
    lines.push(`Host: ${hostname}:${port}`);
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push('Content-Length: 0', 'Connection: close', '', '');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const [status, ...fields] = text.slice(0, split).split('\r\n');
      const found = /^HTTP\/1\.1 (\d{3})/.exec(status ?? '');
      if (found === null) return reject(new Error('no HTTP response'));
      const parsed: Record<string, string> = {};
      for (const field of fields) {
        const colon = field.indexOf(':');
        parsed[field.slice(0, colon).toLowerCase()] = field.slice(colon + 1).trim();
      }
      resolve({ status: Number(found[1]), headers: parsed, body: text.slice(split + 4) });
    });
    // Not half-closed: a server may drop a request whose client ended its side; it closes after answering.
    socket.write(Buffer.from(lines.join('\r\n'), 'latin1'));
  });
}

/** Sends a client request (with `body`) and reads its whole response as text; bounded at 10 s. */
export function answerOf(req: ClientRequest, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    req.setTimeout(10_000);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end(body);
  });
}
