/**
 * A Worker that runs the HTTP conformance suite through sluice/fetch under workerd
 * (test/runtimes/workerd.test.ts bundles it with esbuild). GET /__conformance runs the suite;
 * every other request goes to the app the current test built. The suite's requests travel over
 * HTTP: the harness asks a relay in the node test process, which sends them to this Worker's own
 * socket (raw sockets included, for a body that never ends and a client that goes away).
 */
import { httpConformance, type HttpReply, type RunningApp } from '../../../src/testing/index.js';
import { fetchApp, fetchHeader } from '../../adapters/fetch-app.js';
import { leaveOut, run } from './node-test.js';

// The suite listens for unhandled rejections through process.on, which workerd's process lacks:
// the Worker's own unhandledrejection event carries the same news.
const processLike = globalThis.process as unknown as {
  on?: unknown;
  off?: unknown;
};
if (typeof processLike.on !== 'function') {
  const listeners = new Map<unknown, (event: { reason: unknown }) => void>();
  const scope = globalThis as unknown as {
    addEventListener(name: string, listener: (event: { reason: unknown }) => void): void;
    removeEventListener(name: string, listener: (event: { reason: unknown }) => void): void;
  };
  processLike.on = (name: string, listener: (reason: unknown) => void) => {
    if (name !== 'unhandledRejection') return;
    const forward = (event: { reason: unknown }) => listener(event.reason);
    listeners.set(listener, forward);
    scope.addEventListener('unhandledrejection', forward);
  };
  processLike.off = (name: string, listener: (reason: unknown) => void) => {
    const forward = listeners.get(listener);
    if (name !== 'unhandledRejection' || forward === undefined) return;
    listeners.delete(listener);
    scope.removeEventListener('unhandledrejection', forward);
  };
}

interface Env {
  RELAY: string;
}

type Handler = ReturnType<typeof fetchApp>;
let current: Handler | undefined;
let relay = '';

async function relayed<T>(action: string, body: unknown): Promise<T> {
  const response = await fetch(`${relay}/${action}`, { method: 'POST', body: JSON.stringify(body) });
  if (response.status !== 200)
    throw new Error(`relay ${action}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

// The suite waits in its own request for the abandoned one to be finished, but workerd cancels a
// request that waits on nothing of its own as hung (its response would never come), so this
// one test cannot run in a Worker; the same code path runs on node, Bun and Deno.
const LEFT_OUT =
  'countOnly: a client that goes away before the body ends is finished as failed, whatever the status already sent, and leaves no unhandled rejection';
leaveOut(LEFT_OUT);
// The same wait, for a concurrency limit's lease released when the client goes away.
const LEFT_OUT_LEASE = 'a concurrency limit: a client that goes away mid-response releases its lease at once';
leaveOut(LEFT_OUT_LEASE);

httpConformance({
  name: 'fetch on workerd',
  header: fetchHeader,
  async start(spec) {
    const app = fetchApp(spec);
    current = app;
    const running: RunningApp = {
      request: (method, path, headers = {}) => relayed<HttpReply>('request', { method, path, headers }),
      requestWithOpenBody: (path, headers) => relayed<HttpReply>('open-body', { path, headers }),
      abandon: async (path, headers) => void (await relayed<unknown>('abandon', { path, headers })),
      async close() {
        if (current === app) current = undefined;
      },
    };
    return running;
  },
  findsClientAddress: true,
  countOnly: true,
});

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    relay = env.RELAY;
    if (new URL(request.url).pathname === '/__conformance') return Response.json(await run());
    if (current === undefined) return new Response('no app', { status: 404 });
    // workerd names no peer; every connection in this test comes from the relay on loopback.
    return current(request, { address: '127.0.0.1' });
  },
};
