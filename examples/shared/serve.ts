/** What every example's main.ts does: listen on 127.0.0.1, port from PORT, print the address. */
import type { Server } from 'node:http';
import { listen } from './http.js';

export async function serve(server: Server, name: string, defaultPort: number): Promise<void> {
  const port = Number(process.env.PORT ?? defaultPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('PORT must be a port number');
  try {
    const url = await listen(server, port);
    console.log(`${name} listening on ${url}`);
  } catch (error) {
    // A port another process holds (`npm start` and an example side by side) is one line, not a stack.
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    console.error(
      `${name}: cannot listen on 127.0.0.1:${port} (EADDRINUSE): the port is in use by another process; stop it, or set PORT to another port`,
    );
    process.exitCode = 1;
  }
}
