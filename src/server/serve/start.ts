import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { compilePolicy } from '../policy/compile.js';
import { loadPolicyFile } from '../policy/load.js';
import { authorizer, isLoopbackHost } from './auth.js';
import { createDecisionServer, type ServedPolicy } from './server.js';
import { StartError } from './start-error.js';
import { openStore } from './store.js';

export { StartError };

/** Options of `sluice serve`. */
export interface ServeOptions {
  config: string;
  host: string;
  port: number;
  env?: Readonly<Record<string, string | undefined>>;
  /** Where the start-up lines go. */
  out(text: string): void;
}

/** A running server: its address, and how to stop it (in-flight requests finish first). */
export interface RunningServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * `sluice serve`: loads and builds the policy, opens its store, listens, and prints where and
 * how to try it. Throws a PolicyError for a policy that cannot be used, a StartError when the
 * server may not listen where asked: without tokens, only on loopback.
 */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const loaded = loadPolicyFile(options.config, options.env);
  const { policy } = loaded;
  if (policy.tokens.length === 0 && !isLoopbackHost(options.host)) {
    throw new StartError(
      `sluice serve: the policy has no auth tokens, so the server listens on loopback only (127.0.0.1, ::1, localhost), not on ${options.host}; add auth.tokens to the policy to listen there`,
    );
  }
  const opened = await openStore(policy.store);
  let compiled;
  try {
    compiled = compilePolicy(loaded, { store: opened.store });
  } catch (error) {
    await opened.close();
    throw error;
  }
  const served: ServedPolicy = {
    compiled,
    authorize: authorizer(policy.tokens),
    storeType: opened.type,
    ready: opened.ready,
  };
  const server = createDecisionServer({ current: () => served });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host}:${port}`;
  options.out(startupText(url, options.config, compiled.rules.length, opened.type, policy.tokens.length > 0));
  let closing: Promise<void> | undefined;
  return {
    url,
    server,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        compiled.close();
        await opened.close();
      })()),
  };
}

function startupText(url: string, config: string, rules: number, store: string, tokens: boolean): string {
  const auth = tokens ? ` -H "authorization: Bearer $SLUICE_TOKEN"` : '';
  const example = JSON.stringify({
    items: [{ request: { method: 'POST', path: '/api/login', address: '203.0.113.7' } }],
  });
  return (
    `sluice: serving ${config} (${rules} ${rules === 1 ? 'rule' : 'rules'}, ${store} store) on ${url}\n` +
    (tokens
      ? ''
      : 'sluice: the policy has no auth tokens: listening on loopback only, without authentication\n') +
    `Try a decision:\n  curl -s ${url}/v1/decisions -H 'content-type: application/json'${auth} -d '${example}'\n`
  );
}
