/**
 * The few node:http helpers the examples share: read a JSON body, send JSON or a problem, listen.
 * They are deliberately plain; a real service would use its framework's versions.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An answer a handler gives by throwing: status, a stable `code` clients switch on, a title. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
  ) {
    super(title);
  }
}

/** Bodies are small forms; a cap keeps a client from making us buffer megabytes. */
const MAX_BODY_BYTES = 16 * 1024;

/**
 * Reads and parses a JSON object body. Only handlers call this, after every limit that needs
 * no body has already decided: reading the body is the work those limits exist to refuse.
 */
export async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'body_too_large', 'Request body too large');
    chunks.push(chunk);
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'invalid_json', 'Request body is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new HttpError(400, 'invalid_form', 'Request body must be a JSON object');
  return value as Record<string, unknown>;
}

/** Sends a JSON body (or none for 204). Headers set earlier, e.g. rate-limit headers, stay. */
export function sendJson(response: ServerResponse, status: number, body?: unknown): void {
  response.statusCode = status;
  if (body === undefined) {
    response.end();
    return;
  }
  response.setHeader('Content-Type', 'application/json');
  response.end(JSON.stringify(body));
}

/** Sends an RFC 9457 problem with the same shape sluice uses, so clients parse one format. */
export function sendProblem(response: ServerResponse, error: HttpError): void {
  response.statusCode = error.status;
  response.setHeader('Content-Type', 'application/problem+json');
  response.end(
    JSON.stringify({ type: 'about:blank', title: error.title, status: error.status, code: error.code }),
  );
}

/** The value of one cookie, or undefined. */
export function cookie(request: IncomingMessage, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The token of `Authorization: Bearer <token>`, or undefined. */
export function bearer(request: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}

/**
 * Listens on 127.0.0.1 only: a limit keyed by the client address holds only while the proxy is
 * the one way in (the chat service's deployment, examples/chat/README.md). Port 0 picks a free
 * port (tests). Resolves to the base URL.
 */
export function listen(server: Server, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}
