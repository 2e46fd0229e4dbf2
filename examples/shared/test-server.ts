/**
 * Test helper: starts an example's server in-process on a free loopback port and closes it
 * after the test, keep-alive sockets included.
 */
import type { Server } from 'node:http';
import { listen } from './http.js';

export interface Running {
  /** Base URL, e.g. `http://127.0.0.1:54321`. */
  url: string;
  close(): Promise<void>;
}

export async function start(server: Server): Promise<Running> {
  const url = await listen(server, 0);
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A JSON POST (or other method) with headers; the response body is parsed when it is JSON. */
export async function send(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}
