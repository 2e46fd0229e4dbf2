import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TokenModel } from '../policy/model.js';
import { isLoopbackHost } from '../serve/auth.js';
import type { ServedPolicy } from '../serve/server.js';

/** The cookie a browser holds once an admin token was typed into the login form. */
export const SESSION_COOKIE = 'sluice_dashboard';

/** Who may see the dashboard: `ok`, `login` (a browser without a session), or refused. */
export type Access = 'ok' | 'login' | 'forbidden';

/**
 * The dashboard is the admin scope's. A request holds it by an admin bearer token (`sluice top`,
 * scripts) or by the session cookie the login form sets: an HMAC, under a key drawn when the
 * server starts, of the SHA-256 of the token typed. The browser so never keeps the token, and a
 * session ends when its token leaves the policy (it is checked against the tokens served on every
 * request) or when the server restarts.
 *
 * Without tokens the server listens on loopback only; the dashboard then also wants a loopback
 * peer and a loopback Host header, so that a web page the operator visits cannot reach it through
 * a name that resolves to 127.0.0.1 (DNS rebinding).
 */
export class DashboardAccess {
  private readonly key = randomBytes(32);

  check(req: IncomingMessage, served: ServedPolicy): Access {
    const tokens = served.compiled.policy.tokens;
    if (tokens.length === 0) return loopbackOnly(req) ? 'ok' : 'forbidden';
    if (req.headers.authorization !== undefined)
      return served.authorize(req, 'admin') === undefined ? 'ok' : 'forbidden';
    const session = cookieOf(req, SESSION_COOKIE);
    if (session === undefined) return 'login';
    return this.valid(session, tokens) ? 'ok' : 'login';
  }

  /** The session cookie's value for a token typed into the form; undefined unless it is an admin token. */
  sessionFor(token: string, tokens: readonly TokenModel[]): string | undefined {
    const offered = digest(token);
    const admin = adminDigests(tokens).some((d) => timingSafeEqual(d, offered));
    if (!admin) return undefined;
    const id = offered.toString('hex');
    return `${id}.${this.mac(id)}`;
  }

  private valid(session: string, tokens: readonly TokenModel[]): boolean {
    const [id, mac] = session.split('.');
    if (id === undefined || mac === undefined || !/^[0-9a-f]{64}$/.test(id)) return false;
    const expected = Buffer.from(this.mac(id));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
    const offered = Buffer.from(id, 'hex');
    return adminDigests(tokens).some((d) => timingSafeEqual(d, offered));
  }

  private mac(id: string): string {
    return createHmac('sha256', this.key).update(id).digest('hex');
  }
}

function adminDigests(tokens: readonly TokenModel[]): Buffer[] {
  return tokens.filter((t) => t.scopes.includes('admin')).map((t) => digest(t.token));
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

function loopbackOnly(req: IncomingMessage): boolean {
  const peer = req.socket.remoteAddress?.replace(/^::ffff:/, '');
  const host = (req.headers.host ?? '').replace(/:\d+$/, '');
  return peer !== undefined && isLoopbackHost(peer) && isLoopbackHost(host);
}

/** A cookie's value from the Cookie header, or undefined. */
export function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
