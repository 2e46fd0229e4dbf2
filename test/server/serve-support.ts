/**
 * `sluice serve` as a child process on a free loopback port (`--port 0`, the address read from
 * its first line), with bounded waits, and a small client for its API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { bin, policyFile, root } from './cli-support.js';
import { leaks, requestValues } from './log-scan.js';

export interface RunningSluice {
  /** The main listener's URL (the gateway's, when the policy has an upstream). */
  url: string;
  /** Where the server's own API is: the admin listener's URL, else the main one's. */
  admin: string;
  /** The policy file it serves. */
  config: string;
  child: ChildProcess;
  /** Everything the server printed so far. */
  output(): string;
  /**
   * Stops it with SIGTERM and waits for its exit (at most 10 s, then SIGKILL); then fails when a
   * line of its log carries a request value it was sent (see {@link RunningSluice.sensitive}).
   */
  stop(): Promise<number | null>;
  /**
   * Values the log must never carry: those of the bodies sent with `post` are added by
   * themselves; a test that talks to the server by other means adds its own here.
   */
  sensitive(...values: string[]): void;
  /** A POST to the server's own API (on {@link RunningSluice.admin}). */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
  /** A GET of the server's own API (on {@link RunningSluice.admin}). */
  get(path: string): Promise<Reply>;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON of any shape
}

/** Starts `sluice serve` with this policy text; resolves once it listens (at most 20 s). */
export function startSluice(
  policy: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<RunningSluice> {
  return startSluiceAt(policyFile(policy), args, env);
}

/**
 * Starts `sluice serve` on the policy file at `config`; an admin listener of its own takes any
 * free port unless `args` name one (8412 would be shared by every test at once).
 */
export async function startSluiceAt(
  config: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<RunningSluice> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      bin,
      'serve',
      '--config',
      config,
      '--port',
      '0',
      ...(args.includes('--admin-port') ? [] : ['--admin-port', '0']),
      ...args,
    ],
    {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sluice serve did not start:\n${output}`)), 20_000);
    const look = () => {
      const found = /on (https?:\/\/\S+)/.exec(output);
      if (found !== null) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    };
    child.stdout!.on('data', look);
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`sluice serve exited:\n${output}`));
    });
  });
  const admin = /are at (https?:\/\/\S+)/.exec(output)?.[1] ?? url;
  const used = new Set<string>();
  const call = async (path: string, init: RequestInit): Promise<Reply> => {
    const response = await fetch(`${admin}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: text === '' ? undefined : JSON.parse(text),
    };
  };
  return {
    url,
    admin,
    config,
    child,
    output: () => output,
    stop: async () => {
      const code = await stopChild(child);
      // The server logs its own listening address, which tests also use as a client's.
      const found = leaks(output, used, [new URL(url).hostname]);
      if (found.length > 0) throw new Error(`the server's log carries request values:\n${found.join('\n')}`);
      return code;
    },
    sensitive: (...values) => values.forEach((v) => used.add(v)),
    post: (path, body, headers = {}) => {
      for (const value of requestValues(typeof body === 'string' ? safeJson(body) : body)) used.add(value);
      return call(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    get: (path) => call(path, { method: 'GET' }),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Stops a child with SIGTERM, then SIGKILL after 10 s; resolves with its exit code. */
export async function stopChild(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const [code] = (await exited) as [number | null];
  clearTimeout(timer);
  return code;
}

/** A request item from a client address. */
export const fromAddress = (
  address: string,
  method = 'POST',
  path = '/api/login',
  headers: Record<string, string> = {},
) => ({
  request: { method, path, address, headers },
});
