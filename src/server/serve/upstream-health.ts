/**
 * Whether each upstream of the gateway accepts connections, for /readyz: a TCP connection to its
 * host and port, made at most once per interval whatever the number of callers (as the store's
 * check is, see readiness.ts), and its failure said in words. Never its URL: a route is named by
 * its name, and the reason by what went wrong.
 */
import { connect } from 'node:net';
import { cachedReadiness } from './readiness.js';
import type { UpstreamRoute } from './upstream-routes.js';

/** How long an upstream has to accept a connection before it is said not to. */
const CONNECT_DEADLINE_MS = 1000;

/** One route's readiness as /readyz shows it. */
export interface UpstreamHealth {
  readonly route: string;
  readonly status: 'ok' | 'unavailable';
  /** Why it is unavailable, in words. */
  readonly reason?: string;
}

/** The readiness of routes, one cached probe per upstream address for the server's whole life. */
export class UpstreamHealthChecks {
  private readonly probes = new Map<string, { ready: () => Promise<boolean>; reason: () => string }>();

  /** Each route's health, in the order given. */
  check(routes: readonly UpstreamRoute[]): Promise<UpstreamHealth[]> {
    return Promise.all(
      routes.map(async ({ name, target }) => {
        const probe = this.probeOf(target);
        return (await probe.ready())
          ? { route: name, status: 'ok' as const }
          : { route: name, status: 'unavailable' as const, reason: probe.reason() };
      }),
    );
  }

  private probeOf(target: URL) {
    const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
    const address = `${host} ${port}`;
    let probe = this.probes.get(address);
    if (probe === undefined) {
      let reason = 'the upstream did not accept a connection in time';
      const ready = cachedReadiness(
        () =>
          connectable(host, port).then((failure) => {
            reason = failure ?? '';
            return failure === undefined;
          }),
        { deadlineMs: CONNECT_DEADLINE_MS + 100 },
      );
      probe = { ready, reason: () => reason };
      this.probes.set(address, probe);
    }
    return probe;
  }
}

/** undefined when `host:port` accepts a TCP connection within the deadline, else why not. */
function connectable(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(CONNECT_DEADLINE_MS, () => {
      socket.destroy();
      resolve('the upstream did not accept a connection in time');
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(failureText(error.code)));
  });
}

/** A connection's failure in words, by its code (the message would name the address). */
function failureText(code: string | undefined): string {
  switch (code) {
    case 'ECONNREFUSED':
      return 'the upstream refuses connections';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return "the upstream's host name is not found";
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return "the upstream's network cannot be reached";
    case 'ECONNRESET':
      return 'the upstream reset the connection';
    default:
      return `the upstream cannot be connected to (${code ?? 'error'})`;
  }
}
