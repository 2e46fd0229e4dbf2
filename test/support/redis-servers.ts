/**
 * Private Redis servers for the Redis store tests: a standalone server or a 3-master Cluster,
 * started from `redis-server` on free loopback ports in a temporary directory, and always torn
 * down (processes killed, directories removed), even when a test fails or the process exits.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { reportSkipped } from './services.js';

const live = new Set<ChildProcess>();
const dirs = new Set<string>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** `false` when `redis-server` and `redis-cli` can be run here, otherwise why not. */
export function redisBinariesMissing(): string | false {
  for (const bin of ['redis-server', 'redis-cli']) {
    const probe = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    if (probe.error !== undefined || probe.status !== 0) {
      const reason = `${bin} is not installed`;
      if (process.env.CI === 'true')
        throw new Error(`${reason}; under CI=true this is a failure, not a skip`);
      reportSkipped(reason);
      return reason;
    }
  }
  return false;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free loopback port whose Cluster bus port (port + 10000) is free too. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 35_000);
    if ((await portFree(port)) && (await portFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair found');
}

/** Sends one inline command and resolves with the first reply line, or undefined on failure. */
export function rawCommand(port: number, command: string, timeoutMs = 500): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let data = '';
    const done = (value: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk) => {
      data += chunk.toString('utf8');
      if (data.includes('\r\n')) done(data);
    });
    socket.once('error', () => done(undefined));
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A private redis-server. */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  readonly pid: number | undefined;
  /** Kills the process (SIGKILL): Redis is gone, its data and scripts too. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /** Kills it and removes its directory. */
  stop(): Promise<void>;
}

/** Starts a private standalone redis-server (or a Cluster node with `cluster: true`). */
export async function startRedis(options: { port?: number; cluster?: boolean } = {}): Promise<PrivateRedis> {
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  dirs.add(dir);
  let child: ChildProcess | undefined;

  const start = async () => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    args.push('--dir', dir, '--enable-debug-command', 'yes');
    if (options.cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf');
    const proc = spawn('redis-server', args, { stdio: 'ignore' });
    live.add(proc);
    proc.once('exit', () => live.delete(proc));
    child = proc;
    await waitFor(
      async () => (await rawCommand(port, 'PING'))?.startsWith('+PONG') === true,
      `redis on ${port}`,
    );
  };
  const kill = async () => {
    const proc = child;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child?.pid;
    },
    kill,
    restart: start,
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
      dirs.delete(dir);
    },
  };
}

/** A private Redis Cluster of masters only. */
export interface PrivateCluster {
  readonly nodes: { host: string; port: number }[];
  readonly servers: PrivateRedis[];
  stop(): Promise<void>;
}

/** Starts `masters` cluster nodes and joins them with `redis-cli --cluster create`. */
export async function startCluster(masters = 3): Promise<PrivateCluster> {
  const servers: PrivateRedis[] = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    for (let i = 0; i < masters; i++) servers.push(await startRedis({ cluster: true }));
    const create = spawnSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...servers.map((s) => `127.0.0.1:${s.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (create.status !== 0)
      throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    for (const server of servers) {
      await waitFor(async () => {
        const info = await rawCommand(server.port, 'CLUSTER INFO');
        return info?.includes('cluster_state:ok') === true;
      }, `cluster state ok on ${server.port}`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: servers.map((s) => ({ host: '127.0.0.1', port: s.port })), servers, stop };
}
