/** What every example's main.ts does: listen on 127.0.0.1, port from PORT, print the address. */
import type { Server } from 'node:http';
import { listen } from './http.js';

export async function serve(server: Server, name: string, defaultPort: number): Promise<void> {
  const port = Number(process.env.PORT ?? defaultPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('PORT must be a port number');
  const url = await listen(server, port);
  console.log(`${name} listening on ${url}`);
}
