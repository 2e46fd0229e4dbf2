import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorResponse, type HttpResponse } from '../../http/problem.js';
import { MAX_BODY_BYTES, MAX_DRAINED_BYTES } from './limits.js';

const PROBLEM = 'application/problem+json';

/**
 * A problem response (RFC 9457) in the shape of the library's own (`type`, `title`, `status`,
 * `detail`, `code`), for the API's errors the library has no status for (404, 405, 413, 415).
 * No request value is ever part of it.
 */
export function problem(
  status: number,
  code: string,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {},
): HttpResponse {
  return {
    status,
    headers: { 'Content-Type': PROBLEM, 'Cache-Control': 'no-store' },
    body: JSON.stringify({ type: 'about:blank', title, status, detail, code, ...extra }),
  };
}

/** An error no handler expected: the library's 500 (or its status), without the message. */
export function unexpected(error: unknown): HttpResponse {
  return errorResponse(error);
}

export function json(status: number, value: unknown): HttpResponse {
  return {
    status,
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' },
    body: JSON.stringify(value),
  };
}

export function send(res: ServerResponse, response: HttpResponse): void {
  res.writeHead(response.status, { ...response.headers, 'Content-Length': Buffer.byteLength(response.body) });
  res.end(response.body);
}

/** A body that could not be read: too large, or not JSON. */
export class BodyError {
  /**
   * @param close whether the connection must close after the answer (the rest of the body was
   *   not read)
   */
  constructor(
    readonly response: HttpResponse,
    readonly close = true,
  ) {}
}

/**
 * Reads a JSON body of at most {@link MAX_BODY_BYTES}: a larger one (by its Content-Length, or
 * as it arrives) is a 413 without reading the rest, anything but `application/json` a 415, text
 * that is not JSON a 400.
 */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    throw new BodyError(
      problem(415, 'unsupported_media_type', 'Unsupported Media Type', 'Send application/json.'),
    );
  const declared = Number(req.headers['content-length'] ?? 0);
  // Too large to be worth reading to its end: answered at once (see MAX_DRAINED_BYTES).
  if (declared > MAX_DRAINED_BYTES) throw new BodyError(tooLarge());
  const text = await readBody(req);
  try {
    return JSON.parse(text);
  } catch {
    throw new BodyError(problem(400, 'invalid_request', 'Bad Request', 'The body is not JSON.'));
  }
}

/**
 * The JSON body of `req` ({@link readJson}), or undefined once the refusal of a body that is not
 * (413, 415, 400) was sent. The rest of a refused body is not read: the connection closes after.
 */
export async function readJsonOrRefuse(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<{ body: unknown } | undefined> {
  try {
    return { body: await readJson(req) };
  } catch (error) {
    if (!(error instanceof BodyError)) throw error;
    if (error.close) res.setHeader('Connection', 'close');
    send(res, error.response);
    return undefined;
  }
}

/**
 * The body as text, refused (413) once it grows past the limit: the rest is read and dropped up
 * to {@link MAX_DRAINED_BYTES}, and the refusal comes once the client has sent it all, so that
 * the client reads it (see MAX_DRAINED_BYTES); beyond that, at once. Stream events rather than an
 * async iterator: the iterator costs about as much per request as the decision itself.
 */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk);
      chunks.length = 0;
      if (size <= MAX_DRAINED_BYTES) return;
      req.off('data', onData);
      req.pause();
      reject(new BodyError(tooLarge()));
    };
    req.on('data', onData);
    req.once('end', () => {
      if (size > MAX_BODY_BYTES) return reject(new BodyError(tooLarge(), false));
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      // Bytes that are not UTF-8 would be read as U+FFFD: two keys differing only there would
      // become one key, and share a bucket.
      if (!isUtf8(body))
        return reject(
          new BodyError(problem(400, 'invalid_request', 'Bad Request', 'The body is not UTF-8.'), false),
        );
      resolve(body.toString('utf8'));
    });
    req.once('error', reject);
    // A client that left mid-body: nothing will come, and nobody waits for the answer.
    req.once('close', () => {
      if (!req.complete)
        reject(new BodyError(problem(400, 'invalid_request', 'Bad Request', 'The body was cut short.')));
    });
  });
}

function tooLarge(): HttpResponse {
  return problem(
    413,
    'payload_too_large',
    'Content Too Large',
    `A body may hold at most ${MAX_BODY_BYTES} bytes.`,
  );
}
