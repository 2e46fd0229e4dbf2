import { Command, InvalidArgumentError, Option } from 'commander';
import { isSluiceError } from '../core/errors.js';
import { checkPolicyFile, formatPolicy } from './check.js';
import { testClock } from './envoy/test-clock.js';
import { explainRequest, formatExplanation } from './explain.js';
import { PolicyError } from './policy/errors.js';
import { StartError, serve, type RunningServer } from './serve/start.js';
import { DEFAULT_URLS, FALLBACK_TOKEN_VARIABLE, TOKEN_VARIABLE, runTop } from './top/top.js';

/** Where the CLI writes; a test passes its own. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
}

const processIo: CliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
};

/** Sets the process's exit code; a test passes its own. */
type SetExitCode = (code: number) => void;

/**
 * The `sluice` command: `check <file>`, `explain`, `serve` and `top`. Exit codes: 0 done, 1 the
 * policy or the arguments are wrong or the server could not start, 2 `top` could not read the
 * server.
 */
export function createProgram(
  io: CliIo = processIo,
  setExitCode: SetExitCode = (code: number) => (process.exitCode = code),
): Command {
  const program = new Command('sluice')
    .description('Rate limiting as a service: checks a policy file and serves decisions from it.')
    .configureOutput({
      writeOut: io.out,
      writeErr: io.err,
      outputError: (message, write) => write(withoutValues(message)),
    })
    .exitOverride()
    .showHelpAfterError();
  // In this order in the help.
  addCheck(program, io, setExitCode);
  addExplain(program, io, setExitCode);
  addServe(program, io, setExitCode);
  addTop(program, io, setExitCode);
  return program;
}

/** `sluice check <file>`: the policy normalized, or its errors (exit 1). */
function addCheck(program: Command, io: CliIo, setExitCode: SetExitCode): void {
  program
    .command('check')
    .description(
      'Validate a policy file; print it normalized (defaults filled in), or every error as file:line:column: message',
    )
    .argument('<file>', 'the policy file (YAML)')
    .addOption(
      new Option('--format <format>', 'how to print the policy').choices(['json', 'yaml']).default('json'),
    )
    .action((file: string, options: { format: 'json' | 'yaml' }) => {
      try {
        io.out(formatPolicy(checkPolicyFile(file, io.env, io.err), options.format));
        setExitCode(0);
      } catch (error) {
        reportPolicyError(error, io);
        setExitCode(1);
      }
    });
}

/** `sluice explain <file> <request>`: which rules match a request, and what each would decide. */
function addExplain(program: Command, io: CliIo, setExitCode: SetExitCode): void {
  program
    .command('explain')
    .description(
      'Show which rules of a policy file match a request, with which keys (as stored: pseudonyms) and what each would decide for a first such request (fresh buckets; nothing is connected)',
    )
    .argument('<file>', 'the policy file (YAML)')
    .argument('<request>', "the request's method and path, as 'POST /api/login'", requestArgument)
    .option('-H, --header <header>', "a request header, as 'name: value' (repeat it)", headerArgument)
    .option(
      '--address <address>',
      'the TCP peer of the request (your proxy, or the client itself)',
      '127.0.0.1',
    )
    .addOption(new Option('--format <format>', 'how to print it').choices(['text', 'json']).default('text'))
    .addHelpText(
      'after',
      "\nExample:\n  sluice explain sluice.yaml 'POST /api/login' -H 'x-forwarded-for: 203.0.113.7' -H 'x-nick: ann'",
    )
    .action(
      async (
        file: string,
        request: { method: string; path: string },
        options: { header?: [string, string][]; address: string; format: 'text' | 'json' },
      ) => {
        try {
          const headers = Object.fromEntries(options.header ?? []);
          const explanation = await explainRequest(
            file,
            { ...request, headers, address: options.address },
            io.env,
          );
          io.out(formatExplanation(explanation, options.format));
          setExitCode(0);
        } catch (error) {
          reportPolicyError(error, io);
          setExitCode(1);
        }
      },
    );
}

/** The options of `sluice serve`, as commander reads them. */
interface ServeFlags {
  config: string;
  host: string;
  port: number;
  echoUpstream?: boolean;
  watch: boolean;
  grpcPort?: number;
  envoyConfig?: string;
  allowedHost?: string[];
  adminHost?: string;
  adminPort?: number;
}

/** `sluice serve`: the decision API (and Envoy's service) until SIGTERM or SIGINT. */
function addServe(program: Command, io: CliIo, setExitCode: SetExitCode): void {
  program
    .command('serve')
    .description(
      'Serve decisions from a policy file over HTTP (see /openapi.json); reload it on SIGHUP or when it changes, stop on SIGTERM',
    )
    .option('--config <file>', 'the policy file', 'sluice.yaml')
    .option('--host <host>', 'the address to listen on; without auth tokens, loopback only', '127.0.0.1')
    .option('--port <port>', 'the port to listen on (0: any free port)', portArgument, 8411)
    .option(
      '--admin-port <port>',
      "the admin listener's port, when the server's own API is apart from the application's paths (default: the policy's server.admin.port, else 8412)",
      portArgument,
    )
    .option(
      '--admin-host <host>',
      "the admin listener's address (default: the policy's server.admin.host, else --host); without auth tokens, loopback only",
    )
    .option(
      '--echo-upstream',
      "also run a built-in echo application at the policy's upstream (an http:// URL on loopback), to try gateway mode",
    )
    .option(
      '--allowed-host <name>',
      "a host name (as clients' Host header names this server) answered without auth tokens besides loopback and the policy's hosts (repeat it)",
      hostArgument,
    )
    .option('--no-watch', 'reload on SIGHUP only, not when the policy file changes')
    .option(
      '--grpc-port <port>',
      "also answer Envoy's rate limit service over gRPC on this port (default: the policy's envoy.grpcPort, else 8081)",
      portArgument,
    )
    .option(
      '--envoy-config <dir>',
      "a directory of envoyproxy/ratelimit configuration files to serve to Envoy (with the policy's envoy.domains)",
    )
    .action((options: ServeFlags) => runServe(options, io, setExitCode));
}

/**
 * Starts the server and stops it on SIGTERM or SIGINT (exit 0); a server that cannot start says
 * why (exit 1).
 */
async function runServe(options: ServeFlags, io: CliIo, setExitCode: SetExitCode): Promise<void> {
  // Listened for from the start: SIGHUP's default would end the process. One that comes
  // while the server starts reloads once it listens.
  let running: RunningServer | undefined;
  let pending = false;
  const reload = () => {
    if (running === undefined) pending = true;
    else void running.reload('signal');
  };
  process.on('SIGHUP', reload);
  try {
    const clock = testClock(io.env);
    running = await serve({ ...options, env: io.env, out: io.out, envoyClock: clock, clock });
    if (pending) reload();
    // Stop listening, let requests in flight finish, then close the store.
    const stopping = running;
    const stop = () => {
      process.off('SIGHUP', reload);
      void stopping.close().then(() => setExitCode(0));
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  } catch (error) {
    process.off('SIGHUP', reload);
    if (error instanceof StartError) io.err(`${error.message}\n`);
    else if (isSluiceError(error)) reportPolicyError(error, io);
    // A driver's error may quote what it was given (a URL with its password): by its code only.
    else io.err(`sluice serve: the server could not start (${errorCode(error)})\n`);
    setExitCode(1);
  }
}

/** `sluice top`: the dashboard's numbers in the terminal, until Ctrl-C or `--iterations`. */
function addTop(program: Command, io: CliIo, setExitCode: SetExitCode): void {
  program
    .command('top')
    .description(
      "The dashboard's live numbers in the terminal: decisions per second by rule and outcome, refusal ratio, store latency, the heaviest refused bucket ids (pseudonymous) and recent refusals; an admin token from SLUICE_ADMIN_TOKEN (else SLUICE_TOKEN); redrawn in place, fitted to the terminal",
    )
    .option(
      '--url <url>',
      "the server's own API, where its dashboard is (default: sluice serve's admin listener http://127.0.0.1:8412 when a sluice server answers there, as in gateway mode, else http://127.0.0.1:8411)",
      urlArgument,
    )
    .option('--iterations <n>', 'stop after this many tables (default: until Ctrl-C)', countArgument)
    .action(async (options: { url?: string; iterations?: number }) => {
      const interrupt = new AbortController();
      const stop = () => interrupt.abort();
      process.once('SIGINT', stop);
      // The admin token's own variable first: the example policy names the decide-only token
      // SLUICE_TOKEN, which the dashboard's feed refuses.
      const tokenVariable = [TOKEN_VARIABLE, FALLBACK_TOKEN_VARIABLE].find(
        (name) => io.env[name] !== undefined,
      );
      const out = process.stdout;
      const tty = out.isTTY === true;
      try {
        setExitCode(
          await runTop(
            {
              urls: options.url === undefined ? DEFAULT_URLS : [options.url],
              named: options.url !== undefined,
              token: tokenVariable === undefined ? undefined : io.env[tokenVariable],
              tokenVariable,
              iterations: options.iterations,
              signal: interrupt.signal,
            },
            {
              out: io.out,
              err: io.err,
              tty,
              // Piped, a line is never cut nor a table shortened.
              size: () =>
                tty
                  ? { columns: out.columns ?? 80, rows: out.rows ?? 24 }
                  : { columns: Infinity, rows: Infinity },
              // Node reads the new size on SIGWINCH and says so by 'resize'.
              onResize: (redraw) => {
                out.on('resize', redraw);
                return () => out.off('resize', redraw);
              },
            },
          ),
        );
      } finally {
        process.off('SIGINT', stop);
      }
    });
}

/** An http:// or https:// URL from the command line. */
export function urlArgument(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('a URL, as http://127.0.0.1:8411');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError('an http:// or https:// URL, as http://127.0.0.1:8411');
  return url.origin;
}

/** A whole number of at least 1 from the command line. */
export function countArgument(value: string): number {
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new InvalidArgumentError('a whole number of at least 1');
  return Number(value);
}

/** Prints a policy error as one `file:line:column: message` line per issue. */
export function reportPolicyError(error: unknown, io: Pick<CliIo, 'err'>): void {
  if (error instanceof PolicyError) io.err(`${error.format()}\n`);
  else if (isSluiceError(error)) io.err(`${error.message}\n`);
  else throw error;
}

/** The code of an error that is not sluice's, never its message; "error" without one. */
function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code : 'error';
}

/** A host name from the command line, added to those given so far. */
export function hostArgument(value: string, given: string[] = []): string[] {
  if (!/^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\.?$/.test(value))
    throw new InvalidArgumentError('a host name, as sluice.internal (no port, no scheme)');
  return [...given, value];
}

/** A TCP port from the command line. */
export function portArgument(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw new InvalidArgumentError('a port is a whole number from 0 to 65535');
  return port;
}

/** `METHOD /path` from the command line. */
export function requestArgument(value: string): { method: string; path: string } {
  const parts = /^\s*([A-Za-z]+)\s+(\/\S*)\s*$/.exec(value);
  if (parts === null)
    throw new InvalidArgumentError("a request is a method and a path, as 'POST /api/login'");
  return { method: parts[1]!.toUpperCase(), path: parts[2]! };
}

/** `name: value`, added to the headers given so far. */
export function headerArgument(value: string, given: [string, string][] = []): [string, string][] {
  const colon = value.indexOf(':');
  if (colon < 1 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(value.slice(0, colon)))
    throw new InvalidArgumentError("a header is a name, a colon and a value, as 'x-nick: ann'");
  return [...given, [value.slice(0, colon).toLowerCase(), value.slice(colon + 1).trim()]];
}

/** Runs the CLI with `argv` (as `process.argv`); commander's own exits become exit codes. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  let code = 0;
  const program = createProgram(io, (c) => (code = c));
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    const exit = error as { exitCode?: number; code?: string };
    if (typeof exit.exitCode === 'number')
      return exit.code === 'commander.helpDisplayed' || exit.code === 'commander.version' ? 0 : exit.exitCode;
    throw error;
  }
  return code;
}

/**
 * A command-line error without the value it was about: commander quotes a value it refused, and
 * `explain` takes request values (a header such as a nick or an address, a request's path) that
 * must never be repeated into a terminal or a log. The option or argument is named, with why.
 */
export function withoutValues(message: string): string {
  return message
    .replace(/^(error: option '[^']*') (argument|value) '[\s\S]*' (is invalid|from env)/, '$1 $2 $3')
    .replace(
      /^error: command-argument value '[\s\S]*' is invalid for argument/,
      'error: the value is invalid for argument',
    );
}
