import type { AddressInfo } from 'node:net';
import type { Clock } from '../../core/clock.js';
import { startEnvoy, type RunningEnvoy } from '../envoy/index.js';
import { servedEnvoy } from '../envoy/served.js';
import type { Server } from 'node:http';
import { Dashboard } from '../dashboard/dashboard.js';
import { loadPolicyText, readPolicyFile, type LoadedPolicy } from '../policy/load.js';
import type { Policy } from '../policy/model.js';
import { isLoopbackHost } from './auth.js';
import { createEchoServer } from './echo.js';
import { createGateway, type Gateway } from './gateway.js';
import { LivePolicy, type ReloadTrigger } from './live-policy.js';
import { createServerLog, type ServerLog, throttledReport } from './log.js';
import { ServerMetrics } from './metrics.js';
import { createDecisionServer } from './server.js';
import { StartError } from './start-error.js';
import { StartedParts } from './started-parts.js';
import { openStore, type OpenedStore } from './store.js';

export { StartError };

/** Options of `sluice serve`. */
export interface ServeOptions {
  config: string;
  host: string;
  port: number;
  env?: Readonly<Record<string, string | undefined>>;
  /** Also run the built-in echo application at the policy's upstream (a loopback http:// URL). */
  echoUpstream?: boolean;
  /** Where the start-up lines go. */
  out(text: string): void;
  /** The JSON log. @default one on standard output */
  log?: ServerLog;
  /** Reload when the policy file changes. @default false */
  watch?: boolean;
  /** The gRPC port of Envoy's rate limit service. @default the policy's envoy.grpcPort, else 8081 */
  grpcPort?: number;
  /** A directory of envoyproxy/ratelimit configuration files, served beside the policy's own. */
  envoyConfig?: string;
  /** The clock of Envoy's rate limit service (a test's). @default Date.now */
  envoyClock?: Clock;
  /** The clock of the policy's limiters (a test's). @default Date.now */
  clock?: Clock;
  /**
   * Host names (as in a Host header, without port) the server answers without tokens besides
   * loopback and the policy's `hosts`. @default []
   */
  allowedHost?: readonly string[];
}

/** A running server: its address, and how to stop it (in-flight requests finish first). */
export interface RunningServer {
  readonly url: string;
  readonly server: Server;
  /** Envoy's rate limit service, when it runs. */
  readonly envoy: RunningEnvoy | undefined;
  /** Reads the policy file again and serves it if it is valid; true when it was applied. */
  reload(trigger: ReloadTrigger): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * `sluice serve`: loads and builds the policy, opens its store, listens, and prints where and
 * how to try it. Throws a PolicyError for a policy that cannot be used, a StartError when the
 * server may not listen where asked: without tokens, only on loopback.
 */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const log = options.log ?? createServerLog();
  const { text, loaded } = readPolicy(options);
  const { policy } = loaded;
  const parts = new StartedParts();
  const echo = options.echoUpstream === true ? await startEcho(policy.upstream) : undefined;
  if (echo !== undefined) parts.add(() => echo.close());
  const opened = await parts.attempt(() => openStore(policy.store));
  parts.add(() => opened.close());
  const dashboard = new Dashboard();
  const metrics = new ServerMetrics(dashboard.tap);
  const live = await parts.attempt(() =>
    LivePolicy.start(
      {
        config: options.config,
        env: options.env,
        opened,
        log,
        metrics,
        tokensRequired: !isLoopbackHost(options.host),
        envoyConfig: options.envoyConfig,
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        allowedHosts: options.allowedHost ?? [],
      },
      loaded,
      text,
    ),
  );
  parts.add(() => live.close());
  // Before the address is printed: a client that waits for it may send its first load at once.
  await opened.warm?.(live.current().compiled);
  const envoy = await parts.attempt(
    () => startEnvoyIfAsked(options, policy, opened, live, log, metrics),
    grpcFailure,
  );
  if (envoy !== undefined) parts.add(() => envoy.close());
  const gateway = createGateway({ onUpstreamError: upstreamReporter(log) });
  const server = createDecisionServer(
    live,
    gateway,
    dashboard,
    envoy === undefined
      ? {}
      : { '/json': (req, res) => envoy.json(req, res, live.current().authorize(req, 'decide')) },
  );
  await parts.attempt(
    () => listen(server, options.port, options.host),
    (error) => listenFailure(error, options.host, options.port),
  );
  parts.add(() => gateway.close());
  if (options.watch === true) live.watchFile();
  dashboard.start(live, metrics);
  const url = announce(options, policy, opened, server, echo !== undefined, envoy, log);
  let closing: Promise<void> | undefined;
  return {
    url,
    server,
    envoy,
    reload: (trigger) => live.reload(trigger),
    close: () => (closing ??= stop(server, dashboard, gateway, parts, log)),
  };
}

/**
 * The policy file, read and loaded; a StartError when the server may not listen where asked
 * (without tokens, only on loopback).
 */
function readPolicy(options: ServeOptions): { text: string; loaded: LoadedPolicy } {
  const text = readPolicyFile(options.config);
  const loaded = loadPolicyText(text, {
    file: options.config,
    env: options.env,
    envoyConfig: options.envoyConfig,
  });
  if (loaded.policy.tokens.length === 0 && !isLoopbackHost(options.host)) {
    throw new StartError(
      `sluice serve: the policy has no auth tokens, so the server listens on loopback only (127.0.0.1, ::1, localhost), not on ${options.host}; add auth.tokens to the policy to listen there`,
    );
  }
  return { text, loaded };
}

/** Envoy's rate limit service, when the policy, --envoy-config or --grpc-port asks for it. */
async function startEnvoyIfAsked(
  options: ServeOptions,
  policy: Policy,
  opened: OpenedStore,
  live: LivePolicy,
  log: ServerLog,
  metrics: ServerMetrics,
): Promise<RunningEnvoy | undefined> {
  const wantsEnvoy =
    policy.envoy !== undefined || options.envoyConfig !== undefined || options.grpcPort !== undefined;
  if (!wantsEnvoy) return undefined;
  return startEnvoy({
    host: options.host,
    port: options.grpcPort ?? policy.envoy?.grpcPort ?? 8081,
    store: opened.store,
    registry: metrics.registry,
    failed: (error) => live.failed(error),
    log,
    clock: options.envoyClock ?? Date.now,
    served: () => servedEnvoy(live.current()),
    ready: opened.ready,
  });
}

function grpcFailure(error: unknown): StartError {
  return new StartError(
    `sluice serve: Envoy's rate limit service cannot listen on its gRPC port (${grpcCode(error)})`,
  );
}

/** Prints where and how to try the server (one write) and logs the start; returns its URL. */
function announce(
  options: ServeOptions,
  policy: Policy,
  opened: OpenedStore,
  server: Server,
  echo: boolean,
  envoy: RunningEnvoy | undefined,
  log: ServerLog,
): string {
  const { port } = server.address() as AddressInfo;
  const store = opened.type;
  const plainKeysShared = store !== 'memory' && policy.clients.secrets.length === 0;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host}:${port}`;
  // One write: a reader that waits for the address gets every line at once.
  options.out(
    startupText(url, options.config, policy, store) +
      (plainKeysShared ? plainKeysWarning(store) : '') +
      (opened.unavailable === undefined ? '' : unavailableWarning(store, opened.unavailable)) +
      (policy.upstream === undefined ? '' : gatewayText(url, policy.upstream, echo)) +
      (envoy === undefined ? '' : envoyText(options.host, envoy.port)),
  );
  log.info(
    { event: 'start', url, rules: policy.rules.length, store, auth: policy.tokens.length > 0 },
    'sluice serve listening',
  );
  if (opened.unavailable !== undefined)
    log.warn({ event: 'store-unavailable', store }, 'the store did not answer at start');
  if (plainKeysShared)
    log.warn(
      { event: 'plain-keys', store },
      plainKeysWarning(store)
        .trim()
        .replace(/^sluice: /, ''),
    );
  return url;
}

/** Stops the server: no new connections, requests in flight finish, then every part stops. */
async function stop(
  server: Server,
  dashboard: Dashboard,
  gateway: Gateway,
  parts: StartedParts,
  log: ServerLog,
): Promise<void> {
  log.info({ event: 'stopping' }, 'stopping: no new connections; requests in flight finish');
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    dashboard.close();
    // A WebSocket tunnel may last for hours: it is cut, not waited for.
    gateway.closeTunnels();
  });
  await parts.stopAll();
  log.info({ event: 'stopped' }, 'stopped');
}

/**
 * Said at start when keys reach a shared store as text: there they outlive the process and are
 * seen by anyone who can list the store's keys (in memory they never leave the process).
 */
const plainKeysWarning = (store: string): string =>
  `sluice: warning: the policy has no clients.pseudonymSecret, so keys go to the ${store} store as plain text (client addresses, header values); set a secret to store HMACs of them\n`;

function startupText(url: string, config: string, policy: Policy, store: string): string {
  const rules = policy.rules.length;
  const tokens = policy.tokens.length > 0;
  const auth = tokens ? ` -H "authorization: Bearer $SLUICE_TOKEN"` : '';
  const example = JSON.stringify({ items: [{ request: exampleRequest(policy) }] });
  return (
    `sluice: serving ${config} (${rules} ${rules === 1 ? 'rule' : 'rules'}, ${store} store) on ${url}\n` +
    (tokens
      ? ''
      : 'sluice: the policy has no auth tokens: listening on loopback only, without authentication\n') +
    `Try a decision:\n  curl -s ${url}/v1/decisions -H 'content-type: application/json'${auth} -d '${example}'\n` +
    `Live dashboard: ${url}/dashboard${tokens ? ' (sign in with an admin token)' : ''}\n`
  );
}

/**
 * A request the policy's first rule with a plain path decides (its first method and path, the
 * headers its match and key read), so that the start-up's curl line shows a rule at work.
 */
function exampleRequest(policy: Policy): Record<string, unknown> {
  const plain = (path: string) => !/[*{]/.test(path);
  const rule =
    policy.rules.find((r) => r.match.paths?.some(plain) === true) ??
    policy.rules.find((r) => r.match.paths === undefined);
  const match = rule?.match ?? {};
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(match.headers ?? {}))
    headers[name] = value === '*' ? 'example' : value;
  for (const part of rule?.key ?? []) if (part.startsWith('header:')) headers[part.slice(7)] = 'example';
  return {
    method: match.methods?.[0] ?? 'GET',
    path: match.paths?.find(plain) ?? '/',
    address: '203.0.113.7',
    ...(Object.keys(headers).length === 0 ? {} : { headers }),
  };
}

/** Said at start when the store did not answer, with why: the server runs meanwhile. */
const unavailableWarning = (store: string, why: string): string =>
  `sluice: warning: the ${store} store did not answer at start; each rule's failure policy answers until it does, and /readyz says unavailable. ${why}\n`;

/** A port that cannot be listened on, said in one line (EADDRINUSE: another process has it). */
function listenFailure(error: unknown, host: string, port: number): StartError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'error';
  const why =
    code === 'EADDRINUSE'
      ? 'the port is in use by another process (a sluice server already running?); stop it, or choose another port with --port'
      : code === 'EACCES'
        ? 'permission denied; choose a port above 1023 with --port'
        : code === 'EADDRNOTAVAIL'
          ? "the address is not one of this machine's; choose another with --host"
          : 'see the code';
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new StartError(`sluice serve: cannot listen on ${address} (${code}): ${why}`);
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The echo application on the upstream's own address, which must be this machine's. */
async function startEcho(upstream: string | undefined): Promise<{ close(): Promise<void> }> {
  const target = upstream === undefined ? undefined : new URL(upstream);
  const host = target?.hostname.replace(/^\[(.*)\]$/, '$1');
  if (target === undefined || target.protocol !== 'http:' || !isLoopbackHost(host!) || target.port === '')
    throw new StartError(
      "sluice serve: --echo-upstream runs the echo application at the policy's upstream, which must then be an http:// URL on loopback with a port, such as http://127.0.0.1:8412",
    );
  const echo = createEchoServer();
  try {
    await listen(echo, Number(target.port), host!);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new StartError(`sluice serve: the echo upstream cannot listen at the policy's upstream (${code})`);
  }
  return {
    close: () =>
      new Promise<void>((resolve) => {
        echo.close(() => resolve());
        echo.closeAllConnections();
      }),
  };
}

/** How often at most a failing upstream is logged: a down upstream under load fails every request. */
const UPSTREAM_REPORT_MS = 60_000;

/**
 * Upstream failures on the log, the first at once, then at most one line a minute with how many
 * failed since; by error code only (the message names the upstream's address, not needed here).
 */
function upstreamReporter(log: ServerLog): (error: unknown) => void {
  return throttledReport(UPSTREAM_REPORT_MS, (error, failures) => {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    log.warn(
      { event: 'upstream-failure', error: typeof code === 'string' ? code : 'unknown', failures },
      'the upstream did not answer: 502 to the client',
    );
  });
}

function envoyText(host: string, port: number): string {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return `sluice: Envoy's rate limit service (gRPC) on ${address}\n`;
}

/** The code of a failure to listen, which grpc-js puts in its message. */
function grpcCode(error: unknown): string {
  const text = error instanceof Error ? error.message : '';
  return /EADDRINUSE|EACCES|EADDRNOTAVAIL/.exec(text)?.[0] ?? 'error';
}

function gatewayText(url: string, upstream: string, echo: boolean): string {
  return (
    `sluice: gateway to ${upstream}${echo ? ' (the built-in echo application)' : ''}: every other path is limited by the rules and forwarded\n` +
    `Try the gateway:\n  curl -si ${url}/\n`
  );
}
