/**
 * sluice/fetch in a Worker under workerd, built from the sources with esbuild as a Worker bundle
 * is: the HTTP conformance suite runs inside the Worker (test/runtimes/workerd/worker.ts) and
 * sends every request over HTTP through a relay here back to the Worker's socket; and
 * docs/fetch.md's Worker example, bundled and served without nodejs_compat (a bundle that needed
 * a node: module would not load), admits twice, refuses the third request and denies its deny list.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { build } from 'esbuild';
import { portApp, type RunningApp } from '../../src/testing/index.js';
import { exportedSources, extractSnippets, repoRoot, rewriteImports } from '../docs/doc-snippets.js';
import { runId } from '../support/services.js';
import { binaryOf, skipWithout } from './binaries.js';

const dir = join(repoRoot, '.tmp', `workerd-${runId}`);
// The suite under workerd takes seconds; a hung Worker must not hang the run.
const RUN_TIMEOUT_MS = 120_000;

/** Bundles `entry` as a Worker module: ESM, the runtime conditions, node: left to workerd. */
async function bundle(entry: string, outfile: string, alias: Record<string, string> = {}): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    external: ['node:*', 'cloudflare:*'],
    alias,
    logLevel: 'silent',
  });
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Answers the Worker's harness: each POST names what to send to the Worker's own socket. */
function relayTo(app: RunningApp): Server {
  return createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const { method, path, headers } = JSON.parse(text) as {
      method: string;
      path: string;
      headers: Record<string, string>;
    };
    try {
      let result: unknown = null;
      if (req.url === '/request') result = await app.request(method, path, headers);
      else if (req.url === '/open-body') result = await app.requestWithOpenBody(path, headers);
      else if (req.url === '/abandon') await app.abandon!(path, headers);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(result));
    } catch (error) {
      res.statusCode = 500;
      res.end(error instanceof Error ? error.message : String(error));
    }
  });
}

function config(ports: { suite: number; docs: number; relay: number }): string {
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "suite", worker = .suite),
    (name = "docs", worker = .docs),
    (name = "loopback", network = (allow = ["local", "private", "public"])),
  ],
  sockets = [
    (name = "suite", address = "127.0.0.1:${ports.suite}", http = (), service = "suite"),
    (name = "docs", address = "127.0.0.1:${ports.docs}", http = (), service = "docs"),
  ],
);
const suite :Workerd.Worker = (
  modules = [(name = "suite.js", esModule = embed "suite.js")],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [(name = "RELAY", text = "http://127.0.0.1:${ports.relay}")],
  globalOutbound = "loopback",
);
const docs :Workerd.Worker = (
  modules = [(name = "docs.js", esModule = embed "docs.js")],
  compatibilityDate = "2025-09-01",
);
`;
}

/** Waits until `url` answers at all, for at most 20 s. */
async function ready(url: string, workerd: ChildProcess, output: () => string): Promise<void> {
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    if (workerd.exitCode !== null) throw new Error(`workerd exited with ${workerd.exitCode}:\n${output()}`);
    try {
      // A client address, so that the Worker example has a key for this probe too.
      await fetch(url, { headers: { 'cf-connecting-ip': '192.0.2.1' }, signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`workerd did not answer within 20 s:\n${output()}`);
}

describe('on workerd', { skip: skipWithout('workerd') }, () => {
  let workerd: ChildProcess | undefined;
  let relay: Server | undefined;
  let log = '';
  const ports = { suite: 0, docs: 0, relay: 0 };

  before(async () => {
    mkdirSync(dir, { recursive: true });
    const shim = join(repoRoot, 'test/runtimes/workerd/node-test.ts');
    await bundle(join(repoRoot, 'test/runtimes/workerd/worker.ts'), join(dir, 'suite.js'), {
      'node:test': shim,
    });
    const [snippet] = extractSnippets(
      'docs/fetch.md',
      readFileSync(join(repoRoot, 'docs/fetch.md'), 'utf8'),
      'worker',
    );
    assert.ok(snippet !== undefined, 'docs/fetch.md has a Worker example');
    writeFileSync(join(dir, 'docs-entry.ts'), rewriteImports(snippet.code, dir, exportedSources()));
    await bundle(join(dir, 'docs-entry.ts'), join(dir, 'docs.js'));

    ports.suite = await freePort();
    ports.docs = await freePort();
    relay = relayTo(portApp(ports.suite, () => {}));
    relay.listen(0, '127.0.0.1');
    await once(relay, 'listening');
    ports.relay = (relay.address() as AddressInfo).port;
    writeFileSync(join(dir, 'config.capnp'), config(ports));
    workerd = spawn(binaryOf('workerd')!, ['serve', 'config.capnp'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    workerd.stdout!.on('data', (chunk) => (log += chunk));
    workerd.stderr!.on('data', (chunk) => (log += chunk));
    // Bounded: whatever happens, workerd does not outlive the test file.
    setTimeout(() => workerd?.kill('SIGKILL'), RUN_TIMEOUT_MS).unref();
    await ready(`http://127.0.0.1:${ports.docs}/`, workerd, () => log);
  });

  after(async () => {
    workerd?.kill('SIGKILL');
    relay?.closeAllConnections();
    relay?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the HTTP conformance suite passes through sluice/fetch in the Worker, over HTTP', async () => {
    const response = await fetch(`http://127.0.0.1:${ports.suite}/__conformance`, {
      signal: AbortSignal.timeout(RUN_TIMEOUT_MS - 10_000),
    });
    assert.equal(response.status, 200, `${await response.clone().text()}\n${log}`);
    const report = (await response.json()) as {
      passed: string[];
      skipped: string[];
      failed: { name: string; error: string }[];
    };
    assert.deepEqual(report.failed, [], `failed under workerd:\n${log}`);
    assert.ok(report.passed.length >= 30, `only ${report.passed.length} conformance tests ran`);
    // The two tests a Worker cannot run (see worker.ts), and no other.
    assert.deepEqual(
      report.skipped.map((name) => name.split(' > ').pop()),
      [
        'countOnly: a client that goes away before the body ends is finished as failed, whatever the status already sent, and leaves no unhandled rejection',
        'a concurrency limit: a client that goes away mid-response releases its lease at once',
      ],
    );
  });

  it("docs/fetch.md's Worker example runs without nodejs_compat: admits twice, refuses the third, denies its list", async () => {
    const from = async (client: string) =>
      (await fetch(`http://127.0.0.1:${ports.docs}/`, { headers: { 'cf-connecting-ip': client } })).status;
    assert.deepEqual(
      [await from('203.0.113.7'), await from('203.0.113.7'), await from('203.0.113.7')],
      [200, 200, 429],
    );
    assert.equal(await from('198.51.100.4'), 403);
    assert.equal(await from('203.0.113.8'), 200, 'another client has its own bucket');
  });
});
