import type { Snapshot } from '../dashboard/snapshot-types.js';
import { formatTop, type TopSize } from './format.js';
import { serverSentEvents } from './sse.js';

/** Options of `sluice top`. */
export interface TopOptions {
  /**
   * Where to look for the server, in order: the first that answers as sluice does is read. One
   * URL when the operator named it (`--url`); else {@link DEFAULT_URLS}.
   */
  urls: readonly string[];
  /** True when the operator named the URL: messages then name `--url` rather than the address. */
  named?: boolean;
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
 * Where `sluice serve` puts its dashboard when no option moves it: on the admin listener's port
 * in gateway mode (an upstream in the policy), else beside the decision API on the main port.
 * The admin port is asked first, so that looking never sends a request through a gateway to the
 * application (where it would be charged and forwarded); nothing listens there otherwise.
 */
export const DEFAULT_URLS: readonly string[] = ['http://127.0.0.1:8412', 'http://127.0.0.1:8411'];

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
  const where = options.named === true ? '--url' : (options.urls.at(-1) ?? '--url');
  try {
    const response = await openFeed(options, controller.signal);
    clearTimeout(timer);
    if (response.status !== 200 || !isEventStream(response)) {
      await response.body?.cancel();
      io.err(`sluice top: ${refusal(response.status, options.tokenVariable, where)}\n`);
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
        ? `sluice top: the server at ${where} did not answer within ${CONNECT_MS / 1000} s\n`
        : `sluice top: cannot read the server at ${where} (${typeof code === 'string' ? code : 'no connection'})\n`,
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

/**
 * The dashboard's feed at the first of `options.urls` where sluice answers: the feed itself, or
 * sluice refusing the token (a problem body). Anything else there (no listener, another
 * program, an application behind a gateway) sends it on to the next; the last one's answer or
 * error is the result.
 */
async function openFeed(options: TopOptions, signal: AbortSignal): Promise<Response> {
  const headers = {
    accept: 'text/event-stream',
    ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
  };
  const last = options.urls.length - 1;
  for (let i = 0; i < last; i++) {
    let response: Response;
    try {
      response = await fetch(new URL('/dashboard/events', options.urls[i]), { headers, signal });
    } catch (error) {
      if (signal.aborted) throw error;
      continue;
    }
    if (isSluiceAnswer(response)) return response;
    await response.body?.cancel();
  }
  return fetch(new URL('/dashboard/events', options.urls[last]), { headers, signal });
}

function isEventStream(response: Response): boolean {
  return response.headers.get('content-type')?.startsWith('text/event-stream') === true;
}

/** The feed, or sluice's own refusal of the request (401, 403, 429 with a problem body). */
function isSluiceAnswer(response: Response): boolean {
  if (response.status === 200) return isEventStream(response);
  return (
    [401, 403, 429].includes(response.status) &&
    response.headers.get('content-type')?.startsWith('application/problem+json') === true
  );
}

/** Said when the answer is not the feed, and where sluice's dashboard is in gateway mode. */
const GATEWAY_HINT =
  'in gateway mode the dashboard is on the admin listener (server.admin, port 8412 by default): give its address with --url';

function refusal(status: number, variable: string | undefined, where: string): string {
  if (status === 401) return `the server wants an admin token: set ${TOKEN_VARIABLE}`;
  if (status === 403 && variable === FALLBACK_TOKEN_VARIABLE)
    return `refused (403): the token of ${FALLBACK_TOKEN_VARIABLE} lacks the admin scope (the example policy gives ${FALLBACK_TOKEN_VARIABLE} the decide scope only): set ${TOKEN_VARIABLE} to a token with the admin scope`;
  if (status === 403)
    return `refused (403): the token of ${variable ?? TOKEN_VARIABLE} lacks the admin scope, or the server has no tokens and answers loopback clients only`;
  if (status === 404)
    return `the server at ${where} has no dashboard (404): is it sluice serve? ${GATEWAY_HINT}`;
  if (status === 200)
    return `the server at ${where} answered, but not with the dashboard's feed: ${GATEWAY_HINT}`;
  return `the server answered ${status}`;
}
