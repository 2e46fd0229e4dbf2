/**
 * Runs one snippet module in this process: `node --import tsx test/docs/run-snippet.ts <file>`.
 *
 * A snippet that starts a server must still end. Every `http.Server` is made to listen on a free
 * port of 127.0.0.1 whatever the snippet asked for (so snippets can show real ports and nothing
 * else on the machine is disturbed); once the snippet's top level has finished, each server gets
 * one request, must answer it, and is closed. A snippet that closes its servers itself (after
 * trying them with its own requests) is left to do so: a server it already closed gets no request,
 * and one it is still using is given up to 5 s to be closed by it before it is closed here. The
 * process then exits by itself: a snippet shows a
 * long-lived service, whose Redis or PostgreSQL connections nobody closes. An unhandled rejection
 * or an exception before that ends the process with a non-zero code (node's default), which the
 * test reports as a failure.
 */
import { Server, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: run-snippet.ts <snippet module>');

const servers: Server[] = [];
// The overloads of listen() do not survive a wrapper that forwards any arguments.
const listen = Server.prototype.listen as (this: Server, ...args: unknown[]) => Server;
const closedServers = new WeakSet<Server>();
Server.prototype.listen = function listenOnLoopback(this: Server, ...args: unknown[]) {
  servers.push(this);
  this.once('close', () => closedServers.add(this));
  const callback = args.find((arg) => typeof arg === 'function');
  return listen.call(this, 0, '127.0.0.1', ...(callback === undefined ? [] : [callback]));
} as typeof Server.prototype.listen;

/** Resolves when `server` listens; a server that never does within 5 s fails the snippet. */
async function listening(server: Server): Promise<AddressInfo> {
  for (let waited = 0; !server.listening && !closedServers.has(server) && waited < 5000; waited += 20)
    await delay(20);
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('a server never started listening');
  return address;
}

/** The status of one GET / on a fresh connection. */
function statusOf(address: AddressInfo): Promise<number> {
  return new Promise((resolve, reject) => {
    const get = request({ host: '127.0.0.1', port: address.port, path: '/', agent: false }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
    });
    get.setTimeout(5000, () => get.destroy(new Error('a server did not answer within 5 s')));
    get.once('error', reject);
    get.end();
  });
}

await import(pathToFileURL(file).href);

for (const server of servers) {
  if (closedServers.has(server)) continue;
  const status = await statusOf(await listening(server));
  console.log(`server answered GET / with ${status}`);
}
for (const server of servers) {
  if (closedServers.has(server)) continue;
  // Leave the snippet time to finish its own requests and close the server itself.
  for (let waited = 0; !closedServers.has(server) && waited < 5000; waited += 20) await delay(20);
  if (closedServers.has(server)) continue;
  server.closeAllConnections();
  server.close();
}

// One more turn of the event loop lets a rejection nobody handled surface before the exit.
await delay(50);
process.exit(0);
