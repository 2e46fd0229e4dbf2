/**
 * A stand-in application to try gateway mode without one (`sluice serve --echo-upstream`): it
 * answers every request with what it received, so that a curl through the gateway shows what the
 * upstream sees (the path, the headers with X-Forwarded-For, the body).
 */
import { createServer, type Server } from 'node:http';

/** How much of a body the echo shows; the rest is counted. */
const SHOWN_BODY_BYTES = 64 * 1024;

export function createEchoServer(): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (size < SHOWN_BODY_BYTES) chunks.push(chunk);
      size += chunk.length;
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks).subarray(0, SHOWN_BODY_BYTES).toString('utf8');
      const text = JSON.stringify({
        echo: 'sluice echo upstream',
        method: req.method,
        url: req.url,
        headers: req.headers,
        bodyBytes: size,
        body,
      });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
}
