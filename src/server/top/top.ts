import type { Snapshot } from '../dashboard/snapshot-types.js';
import { formatTop } from './format.js';
import { serverSentEvents } from './sse.js';

/** Options of `sluice top`. */
export interface TopOptions {
  /** The server's base URL. */
  url: string;
  /** An admin token of the policy, when it has tokens. */
  token: string | undefined;
  /** Stop after this many tables; undefined: until interrupted. */
  iterations: number | undefined;
  /** Ends the run (exit code 0), e.g. on SIGINT. */
  signal?: AbortSignal;
}

export interface TopIo {
  out(text: string): void;
  err(text: string): void;
  /** A terminal: each table replaces the last; otherwise tables follow one another. */
  tty: boolean;
  columns: number;
}

/** How long the server may take to answer before `sluice top` gives up. */
const CONNECT_MS = 10_000;

/**
 * `sluice top`: reads the dashboard's feed (/dashboard/events) and prints its numbers as a table
 * at every snapshot. Exit codes: 0 done (or interrupted), 2 the server could not be read.
 * Messages name the option at fault, never its value.
 */
export async function runTop(options: TopOptions, io: TopIo): Promise<number> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  options.signal?.addEventListener('abort', stop, { once: true });
  const timer = setTimeout(stop, CONNECT_MS);
  let shown = 0;
  try {
    const response = await fetch(new URL('/dashboard/events', options.url), {
      headers: {
        accept: 'text/event-stream',
        ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      },
      signal: controller.signal,
    });
    clearTimeout(timer);
    if (response.status !== 200) {
      await response.body?.cancel();
      io.err(`sluice top: ${refusal(response.status)}\n`);
      return 2;
    }
    for await (const { event, data } of serverSentEvents(
      response.body as unknown as AsyncIterable<Uint8Array>,
    )) {
      if (event !== 'snapshot') continue;
      const table = formatTop(JSON.parse(data) as Snapshot, io.columns);
      io.out(io.tty ? `\x1b[H\x1b[2J${table}` : `${table}\n`);
      if (options.iterations !== undefined && ++shown >= options.iterations) return 0;
    }
    io.err('sluice top: the server ended the stream\n');
    return 2;
  } catch (error) {
    if (options.signal?.aborted === true) return 0;
    const code = (error as { cause?: { code?: unknown } }).cause?.code;
    io.err(
      controller.signal.aborted
        ? `sluice top: the server at --url did not answer within ${CONNECT_MS / 1000} s\n`
        : `sluice top: cannot read the server at --url (${typeof code === 'string' ? code : 'no connection'})\n`,
    );
    return 2;
  } finally {
    clearTimeout(timer);
    controller.abort();
    options.signal?.removeEventListener('abort', stop);
  }
}

function refusal(status: number): string {
  if (status === 401) return 'the server wants an admin token: set SLUICE_TOKEN';
  if (status === 403)
    return 'refused (403): the token lacks the admin scope, or the server has no tokens and answers loopback clients only';
  if (status === 404) return 'the server at --url has no dashboard (404): is it sluice serve?';
  return `the server answered ${status}`;
}
