import type { IncomingMessage } from 'node:http';
import type { HttpResponse } from '../../http/problem.js';
import { isLoopbackHost } from './auth.js';
import { problem } from './http-io.js';

/**
 * Who may reach the server's own routes from a browser. Without tokens, a page the operator
 * opens could point a name it controls at 127.0.0.1 (DNS rebinding) and call the API with its
 * own Host: so every route answers only a Host that is loopback or one the operator named. With
 * or without tokens, a state-changing route (reset, forget, a POST of the dashboard) refuses a
 * request a browser marks as coming from another site or origin: a page must not be able to
 * reset its own login limit through the operator's browser. Application traffic of the gateway
 * is not guarded here: it is the upstream's.
 */
export function siteGuard(
  tokens: boolean,
  hosts: readonly string[],
): (req: IncomingMessage, path: string) => HttpResponse | undefined {
  const named = new Set(hosts.map(hostName));
  // The last Host header answered and whether it may be served: clients send one Host again and
  // again, and parsing it as a URL on every request cost the decision API a share of its speed.
  let lastHost: string | undefined;
  let lastServed = false;
  const served = (host: string | undefined): boolean => {
    if (host !== undefined && host === lastHost) return lastServed;
    const name = host === undefined ? undefined : hostName(host);
    const answer = name !== undefined && (isLoopbackHost(name) || named.has(name));
    lastHost = host;
    lastServed = answer;
    return answer;
  };
  return (req, path) => {
    // The dashboard tells its own clients apart (without tokens, a loopback Host only).
    if (!tokens && !isDashboard(path)) {
      if (!served(req.headers.host))
        return problem(
          421,
          'misdirected_request',
          'Misdirected Request',
          'Without auth tokens the server answers only a loopback Host or one named by hosts (--allowed-host).',
        );
    }
    if (changesState(req, path) && crossSite(req))
      return problem(
        403,
        'cross_site_request',
        'Forbidden',
        'A browser request from another site or origin may not reset, forget or post to the dashboard.',
      );
    return undefined;
  };
}

/** Resets, erasures and every POST of the dashboard (its login and inspector). */
function changesState(req: IncomingMessage, path: string): boolean {
  return (
    path === '/v1/reset' ||
    path === '/v1/forget' ||
    (req.method !== 'GET' && req.method !== 'HEAD' && isDashboard(path))
  );
}

function isDashboard(path: string): boolean {
  return path === '/dashboard' || path.startsWith('/dashboard/');
}

/**
 * True when the browser says the request comes from elsewhere: Sec-Fetch-Site other than
 * `same-origin` or `none` (`same-site`: a sibling subdomain is another site's page too), or,
 * from a browser that sends no Sec-Fetch-Site, an Origin (`null` included)
 * whose host and port are not the Host the request was sent to. A client that is not a browser
 * sends neither.
 */
function crossSite(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  // A browser that sends Sec-Fetch-Site says it all: a page with no referrer (the dashboard's)
  // sends its form posts with Origin `null`, though they come from the same origin.
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  const host = req.headers.host;
  if (host === undefined) return true;
  try {
    return new URL(origin).host !== new URL(`http://${host}`).host;
  } catch {
    return true;
  }
}

/**
 * The name of a Host header (or a configured name): lower case, without its port, brackets or
 * one trailing dot. undefined for text that is no host.
 */
export function hostName(host: string): string | undefined {
  let url: URL;
  try {
    url = new URL(`http://${host.trim()}`);
  } catch {
    return undefined;
  }
  if (
    url.username !== '' ||
    url.password !== '' ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== ''
  )
    return undefined;
  const name = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return name.endsWith('.') ? name.slice(0, -1) : name;
}
