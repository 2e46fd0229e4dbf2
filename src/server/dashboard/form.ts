import type { IncomingMessage } from 'node:http';

/** A login form is a token and little else. */
const MAX_FORM_BYTES = 4096;

/**
 * An `application/x-www-form-urlencoded` body of at most 4 KiB; undefined for another type or
 * a larger body (whose rest is left unread: the caller closes the connection after answering).
 */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (
    type !== 'application/x-www-form-urlencoded' ||
    Number(req.headers['content-length'] ?? 0) > MAX_FORM_BYTES
  ) {
    req.resume();
    return undefined;
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FORM_BYTES) {
        req.removeAllListeners('data');
        req.pause();
        resolve(undefined);
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', () => resolve(undefined));
  });
}
