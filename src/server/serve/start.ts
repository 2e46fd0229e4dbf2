import type { AddressInfo } from 'node:net';
import type { Clock } from '../../core/clock.js';
import { startEnvoy, type RunningEnvoy } from '../envoy/index.js';
import { servedEnvoy } from '../envoy/served.js';
import { Dashboard } from '../dashboard/dashboard.js';
import { loadPolicyText, readPolicyFile, type LoadedPolicy } from '../policy/load.js';
import type { Policy } from '../policy/model.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pathText } from '../policy/errors.js';
import { reservedPathOverlaps } from '../policy/reserved-paths.js';
import { isLoopbackHost } from './auth.js';
import { createEchoServer } from './echo.js';
import { createGateway, type Gateway } from './gateway.js';
import { LivePolicy, type ReloadTrigger } from './live-policy.js';
import { createServerLog, type ServerLog, throttledReport } from './log.js';
import { ServerMetrics } from './metrics.js';
import { createDecisionServer, type DecisionServerOptions, type Listener } from './server.js';
import {
  listenerPlan,
  readTls,
  sameListeners,
  tlsFailure,
  tokensRequired,
  type ListenerPlan,
} from './listeners.js';
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
  /** The admin listener's host, when it has one. @default the policy's server.admin.host, else host */
  adminHost?: string;
  /** The admin listener's port, when it has one. @default the policy's server.admin.port, else 8412 */
  adminPort?: number;
}

/** A running server: its address, and how to stop it (in-flight requests finish first). */
export interface RunningServer {
  /** The main listener's. */
  readonly url: string;
  /** Where the server's own paths are: the admin listener's URL, else the main one's. */
  readonly adminUrl: string;
  readonly server: Listener;
  /** The admin listener, when the server's own paths are apart. */
  readonly admin: Listener | undefined;
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
  const { text, loaded, plan } = readPolicy(options);
  const { policy } = loaded;
  const tls = readTls(plan);
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
        tokensRequired: tokensRequired(plan, options.host),
        refuse: (next) =>
          sameListeners(plan, listenerPlan(next.policy, options))
            ? undefined
            : next.issue(
                ['server'],
                'cannot move a listener while the server runs (server.admin, server.tls, or an upstream added or removed, which moves the admin listener by default): restart it',
              ),
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
  const gateway = createGateway({ onUpstreamError: upstreamReporter(log), observer: metrics.gateway });
  const own: DecisionServerOptions = {
    gateway,
    dashboard,
    extra:
      envoy === undefined
        ? {}
        : {
            '/json': (req: IncomingMessage, res: ServerResponse) =>
              envoy.json(req, res, live.current().authorize(req, 'decide')),
          },
  };
  let server: Listener;
  try {
    server = createDecisionServer(live, {
      ...own,
      role: plan.admin === undefined ? 'all' : 'gateway',
      ...(tls === undefined ? {} : { tls }),
    });
  } catch (error) {
    await parts.stopAll();
    throw tlsFailure(error);
  }
  const admin = plan.admin === undefined ? undefined : createDecisionServer(live, { ...own, role: 'admin' });
  // The pool of upstream connections stops after the listeners, which stop together.
  parts.add(() => gateway.close());
  const listening: Listener[] = [];
  parts.add(() => Promise.all(listening.map((listener) => closeListener(listener, gateway))));
  await parts.attempt(
    () => listen(server, options.port, options.host),
    (error) => listenFailure(error, options.host, options.port),
  );
  listening.push(server);
  if (admin !== undefined) {
    await parts.attempt(() => listen(admin, plan.admin!.port, plan.admin!.host), adminFailure);
    listening.push(admin);
  }
  if (options.watch === true) live.watchFile();
  dashboard.start(live, metrics, log);
  const urls = {
    url: urlOf(server, options.host),
    adminUrl: urlOf(admin ?? server, plan.admin?.host ?? options.host),
  };
  announce(options, policy, opened, urls, echo !== undefined, envoy, log);
  let closing: Promise<void> | undefined;
  return {
    ...urls,
    server,
    admin,
    envoy,
    reload: (trigger) => live.reload(trigger),
    close: () => (closing ??= stop(dashboard, gateway, parts, log)),
  };
}

/** The URL of a listener that listens. */
function urlOf(listener: Listener, host: string): string {
  const { port } = listener.address() as AddressInfo;
  const scheme = 'setSecureContext' in listener ? 'https' : 'http';
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function adminFailure(error: unknown): StartError {
  const code = (error as NodeJS.ErrnoException).code ?? 'error';
  return new StartError(
    `sluice serve: the admin listener (server.admin, --admin-port) cannot listen (${code})`,
  );
}

/**
 * Stops a listener: no new connections, requests in flight finish; a WebSocket tunnel may last
 * for hours, so it is cut, not waited for.
 */
function closeListener(listener: Listener, gateway: Gateway): Promise<void> {
  return new Promise<void>((resolve) => {
    listener.close(() => resolve());
    listener.closeIdleConnections();
    gateway.closeTunnels();
  });
}

/**
 * The policy file, read and loaded; a StartError when the server may not listen where asked
 * (without tokens, only on loopback).
 */
function readPolicy(options: ServeOptions): { text: string; loaded: LoadedPolicy; plan: ListenerPlan } {
  const text = readPolicyFile(options.config);
  const loaded = loadPolicyText(text, {
    file: options.config,
    env: options.env,
    envoyConfig: options.envoyConfig,
  });
  const plan = listenerPlan(loaded.policy, options);
  if (loaded.policy.tokens.length === 0 && tokensRequired(plan, options.host)) {
    const [which, host] =
      plan.admin === undefined ? ['server', options.host] : ['admin listener', plan.admin.host];
    throw new StartError(
      `sluice serve: the policy has no auth tokens, so the ${which} listens on loopback only (127.0.0.1, ::1, localhost), not on ${host}; add auth.tokens to the policy to listen there`,
    );
  }
  return { text, loaded, plan };
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
  { url, adminUrl }: { url: string; adminUrl: string },
  echo: boolean,
  envoy: RunningEnvoy | undefined,
  log: ServerLog,
): void {
  const store = opened.type;
  const plainKeysShared = store !== 'memory' && policy.clients.secrets.length === 0;
  const tokens = policy.tokens.length > 0;
  // One write: a reader that waits for the address gets every line at once.
  options.out(
    startupText(url, adminUrl, options.config, policy, store) +
      (plainKeysShared ? plainKeysWarning(store) : '') +
      (opened.unavailable === undefined ? '' : unavailableWarning(store, opened.unavailable)) +
      gatewayText(url, policy, echo) +
      reservedPathWarnings(policy) +
      (envoy === undefined ? '' : envoyText(options.host, envoy.port)),
  );
  log.info(
    {
      event: 'start',
      url,
      ...(adminUrl === url ? {} : { admin: adminUrl }),
      rules: policy.rules.length,
      store,
      auth: tokens,
    },
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
}

/**
 * Stops the server: no new connections, requests in flight finish (the listeners are the last
 * parts started, so the first stopped), then every other part stops.
 */
async function stop(
  dashboard: Dashboard,
  gateway: Gateway,
  parts: StartedParts,
  log: ServerLog,
): Promise<void> {
  log.info({ event: 'stopping' }, 'stopping: no new connections; requests in flight finish');
  dashboard.close();
  gateway.closeTunnels();
  await parts.stopAll();
  log.info({ event: 'stopped' }, 'stopped');
}

/**
 * Said at start when keys reach a shared store as text: there they outlive the process and are
 * seen by anyone who can list the store's keys (in memory they never leave the process).
 */
const plainKeysWarning = (store: string): string =>
  `sluice: warning: the policy has no clients.pseudonymSecret, so keys go to the ${store} store as plain text (client addresses, header values); set a secret to store HMACs of them\n`;

function startupText(url: string, adminUrl: string, config: string, policy: Policy, store: string): string {
  const rules = policy.rules.length;
  const tokens = policy.tokens.length > 0;
  const auth = tokens ? ` -H "authorization: Bearer $SLUICE_TOKEN"` : '';
  const example = JSON.stringify({ items: [{ request: exampleRequest(policy) }] });
  return (
    `sluice: serving ${config} (${rules} ${rules === 1 ? 'rule' : 'rules'}, ${store} store) on ${url}\n` +
    (adminUrl === url
      ? ''
      : `sluice: the server's own API, health, metrics and dashboard (/v1/*, /healthz, /readyz, /metrics, /openapi.json, /dashboard) are at ${adminUrl}\n`) +
    (tokens
      ? ''
      : `sluice: the policy has no auth tokens: ${adminUrl === url ? 'listening' : 'the admin listener is'} on loopback only, without authentication\n`) +
    `Try a decision:\n  curl -s ${adminUrl}/v1/decisions -H 'content-type: application/json'${auth} -d '${example}'\n` +
    `Live dashboard: ${adminUrl}/dashboard${tokens ? ' (sign in with an admin token)' : ''}\n`
  );
}

/**
 * A request the policy's first rule with a plain path decides (its first method and path, the
 * headers its match and key read), so that the start-up's curl line shows a rule at work. A
 * concurrency rule is the gateway's alone: the decision API does not decide it.
 */
function exampleRequest(policy: Policy): Record<string, unknown> {
  const plain = (path: string) => !/[*{]/.test(path);
  const decided = policy.rules.filter((r) => r.concurrency === undefined);
  const rule =
    decided.find((r) => r.match.paths?.some(plain) === true) ??
    decided.find((r) => r.match.paths === undefined);
  const match = rule?.match ?? {};
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(match.headers ?? {})) {
    // A header the rule wants absent is left out; any value stands for a wildcard.
    if (typeof value === 'string') headers[name] = value === '*' ? 'example' : value;
  }
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

function listen(server: Listener, port: number, host: string): Promise<void> {
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
      "sluice serve: --echo-upstream runs the echo application at the policy's upstream, which must then be an http:// URL on loopback with a port, such as http://127.0.0.1:8410",
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

function gatewayText(url: string, policy: Policy, echo: boolean): string {
  const { upstream, upstreams } = policy;
  if (upstreams.length === 0) return '';
  const to =
    upstream === undefined
      ? `${upstreams.length} ${upstreams.length === 1 ? 'route' : 'routes'} (${upstreams.map((u) => u.name).join(', ')})`
      : `${upstream}${echo ? ' (the built-in echo application)' : ''}`;
  const which = policy.server.admin === 'main' ? 'every other path' : 'every path';
  return (
    `sluice: gateway to ${to}: ${which} is limited by the rules and forwarded\n` +
    `Try the gateway:\n  curl -si ${url}/\n`
  );
}

/** The warnings of `sluice check` on the paths the server keeps for itself, one line each. */
function reservedPathWarnings(policy: Policy): string {
  return reservedPathOverlaps(policy)
    .map((overlap) => `sluice: warning: ${pathText(overlap.path)} ${overlap.what}\n`)
    .join('');
}
