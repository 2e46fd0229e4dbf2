/**
 * Reachability of the real services the store tests talk to. On a developer's machine without
 * Redis or PostgreSQL those suites are skipped with the reason; under CI=true an unreachable
 * service is a failure, never a skip.
 */
import { connect } from 'node:net';
import { test } from 'node:test';

export const redisUrl = process.env.SLUICE_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const postgresUrl = process.env.SLUICE_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A unique suffix for key prefixes and schema names, so concurrent runs never collide. */
export const runId = `${process.pid.toString(36)}${Date.now().toString(36)}`;

function reachable(host: string, port: number, timeoutMs = 1500): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`no answer within ${timeoutMs} ms`);
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.end();
      resolve(undefined);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code ?? error.message);
    });
  });
}

/**
 * Makes a skip visible in the run's closing summary. Node's runner counts a suite declared with
 * `describe(name, { skip })` as a suite, not as a skipped test (its tests are never registered),
 * so a run without Redis would close with "skipped 0" and look complete. One skipped test per
 * skipped service keeps the count honest; the suites still show the reason in their own lines.
 */
export function reportSkipped(reason: string): void {
  test(`skipped: ${reason}`, { skip: reason }, () => {});
}

/**
 * `false` when the service answers; otherwise the skip reason, also reported as one skipped
 * test. Under CI=true it throws instead, so that a missing service fails the run.
 */
export async function skipUnlessReachable(name: string, url: string): Promise<string | false> {
  const { hostname, port } = new URL(url);
  const problem = await reachable(hostname.replace(/^\[|\]$/g, ''), Number(port));
  if (problem === undefined) return false;
  const reason = `${name} at ${hostname}:${port} is unreachable (${problem})`;
  if (process.env.CI === 'true') throw new Error(`${reason}; under CI=true this is a failure, not a skip`);
  reportSkipped(reason);
  return reason;
}

/** A loopback port nothing listens on: one the system just gave out and took back. */
export async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
