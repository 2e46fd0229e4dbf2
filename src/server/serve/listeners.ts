/**
 * Where `sluice serve` listens: the main listener (`--host`, `--port`, HTTPS with `server.tls`)
 * and, when the server's own paths are apart, the admin listener (`server.admin`, overridden by
 * `--admin-host` and `--admin-port`). Decided once at start: a reload that would move a listener
 * is refused, as one that names another store is.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isLoopbackHost } from './auth.js';
import type { Policy } from '../policy/model.js';
import { StartError } from './start-error.js';

/** The listeners the server opens besides the main one, and how. */
export interface ListenerPlan {
  /** The admin listener; undefined when the server's own paths are on the main listener. */
  readonly admin: { readonly host: string; readonly port: number } | undefined;
  /** The main listener's certificate and key files, resolved against the policy file's folder. */
  readonly tls: { readonly cert: string; readonly key: string } | undefined;
}

/** What the command line says of the listeners. */
export interface ListenerFlags {
  /** The policy file: TLS files are relative to its folder. */
  config: string;
  /** The main listener's host. */
  host: string;
  /** The admin listener's host, over the policy's. */
  adminHost?: string;
  /** The admin listener's port, over the policy's. */
  adminPort?: number;
}

/** The listeners of a policy on this command line. */
export function listenerPlan(policy: Policy, flags: ListenerFlags): ListenerPlan {
  const { admin, tls } = policy.server;
  const folder = dirname(flags.config);
  return {
    admin:
      admin === 'main'
        ? undefined
        : { host: flags.adminHost ?? admin.host ?? flags.host, port: flags.adminPort ?? admin.port },
    tls: tls === undefined ? undefined : { cert: resolve(folder, tls.cert), key: resolve(folder, tls.key) },
  };
}

/** True when both plans open the same listeners in the same way. */
export function sameListeners(a: ListenerPlan, b: ListenerPlan): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The host the server's own API listens on (the admin listener's, else the main one's): without
 * auth tokens it must be loopback, since the API would answer everyone. The main listener of a
 * gateway whose API is apart carries only the application's traffic, which tokens never guard.
 */
export function apiHost(plan: ListenerPlan, host: string): string {
  return plan.admin?.host ?? host;
}

/** True when a policy without tokens may not be served on these listeners. */
export function tokensRequired(plan: ListenerPlan, host: string): boolean {
  return !isLoopbackHost(apiHost(plan, host));
}

/**
 * The TLS files, read; a StartError naming the option and the error's code when one cannot be
 * read (never its content: it is a private key).
 */
export function readTls(plan: ListenerPlan): { cert: Buffer; key: Buffer } | undefined {
  if (plan.tls === undefined) return undefined;
  const read = (which: 'cert' | 'key'): Buffer => {
    try {
      return readFileSync(plan.tls![which]);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      throw new StartError(`sluice serve: server.tls.${which} cannot be read (${code})`);
    }
  };
  return { cert: read('cert'), key: read('key') };
}

/** A StartError for a certificate and key the TLS listener could not take. */
export function tlsFailure(error: unknown): StartError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'error';
  return new StartError(
    `sluice serve: server.tls must name a PEM certificate and its own private key; they could not be used (${code})`,
  );
}
