import type { Snapshot } from '../dashboard/snapshot-types.js';
import { formatTop, type TopSize } from './format.js';
import { serverSentEvents } from './sse.js';

/** Options of `sluice top`. */
export interface TopOptions {
  /** The server's base URL. */
  url: string;
  /** An admin token of the policy, when it has tokens. */
  token: string | undefined;
  /** The environment variable the token came from, for messages: never its value. */
  tokenVariable?: string;
  /** Stop after this many tables; undefined: until interrupted. */
  iterations: number | undefined;
  /** Ends the run (exit code 0), e.g. on SIGINT. */
  signal?: AbortSignal;
}

export interface TopIo {
  out(text: string): void;
  err(text: string): void;
  /** A terminal: each table is drawn in place of the last; otherwise tables follow one another. */
  tty: boolean;
  /** The terminal's size now (unbounded when piped). */
  size(): TopSize;
  /** Calls `redraw` when the terminal's size changes; returns what stops it. */
  onResize?(redraw: () => void): () => void;
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
  let last: Snapshot | undefined;
  const draw = () => {
    if (last === undefined) return;
    const lines = formatTop(last, io.size());
    // In place: home, each line over the old one (the rest of it cleared), then the rest of the
    // screen cleared; no newline after the last line, so the terminal never scrolls.
    io.out(io.tty ? `\x1b[H${lines.join('\x1b[K\n')}\x1b[K\x1b[J` : `${lines.join('\n')}\n\n`);
  };
  const stopResizing = io.tty ? io.onResize?.(draw) : undefined;
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
      io.err(`sluice top: ${refusal(response.status, options.tokenVariable)}\n`);
      return 2;
    }
    for await (const { event, data } of serverSentEvents(
      response.body as unknown as AsyncIterable<Uint8Array>,
    )) {
      if (event !== 'snapshot') continue;
      last = JSON.parse(data) as Snapshot;
      if (shown++ === 0 && io.tty) io.out('\x1b[2J');
      draw();
      if (options.iterations !== undefined && shown >= options.iterations) return 0;
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
    stopResizing?.();
    if (io.tty && shown > 0) io.out('\n');
    clearTimeout(timer);
    controller.abort();
    options.signal?.removeEventListener('abort', stop);
  }
}

/** The variable `sluice top` reads an admin token from; {@link FALLBACK_TOKEN_VARIABLE} after it. */
export const TOKEN_VARIABLE = 'SLUICE_ADMIN_TOKEN';
/** Read when {@link TOKEN_VARIABLE} is not set: what `sluice top` read before it. */
export const FALLBACK_TOKEN_VARIABLE = 'SLUICE_TOKEN';

function refusal(status: number, variable: string | undefined): string {
  if (status === 401) return `the server wants an admin token: set ${TOKEN_VARIABLE}`;
  if (status === 403 && variable === FALLBACK_TOKEN_VARIABLE)
    return `refused (403): the token of ${FALLBACK_TOKEN_VARIABLE} lacks the admin scope (the example policy gives ${FALLBACK_TOKEN_VARIABLE} the decide scope only): set ${TOKEN_VARIABLE} to a token with the admin scope`;
  if (status === 403)
    return `refused (403): the token of ${variable ?? TOKEN_VARIABLE} lacks the admin scope, or the server has no tokens and answers loopback clients only`;
  if (status === 404) return 'the server at --url has no dashboard (404): is it sluice serve?';
  return `the server answered ${status}`;
}
