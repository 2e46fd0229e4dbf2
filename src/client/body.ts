/**
 * How a request's body is sent on every attempt:
 * - `none`: no body of its own (or a Request's body that is not ours to read);
 * - `replayable`: `body` is sent again, identical, on every attempt;
 * - `too-large`: a stream longer than the limit. `body` replays what was read and streams the
 *   rest, so the first attempt still sends everything; a retry is refused (`body-too-large`).
 */
export type BodyPlan =
  | { kind: 'none' }
  | { kind: 'replayable'; body: BodyInit }
  | { kind: 'too-large'; body: ReadableStream<Uint8Array> };

/** Bytes that fetch accepts as a body (not backed by a SharedArrayBuffer). */
type Bytes = Uint8Array<ArrayBuffer>;

/** A pull source over a stream or an async iterable, whichever the caller gave. */
type Pull = () => Promise<{ done?: boolean; value?: unknown }>;

/**
 * Makes a body that can be sent more than once, with the same bytes: a retry must
 * repeat the request the server may already have seen, not a shorter or changed one.
 *
 * Bodies already in memory are copied, not read: a string or Blob as is (immutable), an
 * ArrayBuffer, typed array or URLSearchParams as a snapshot, so a caller who reuses its buffer
 * during a wait cannot change what a retry sends. FormData is copied entry by entry; its
 * multipart boundary is chosen per request, so the bytes differ but the content does not.
 * A stream (a ReadableStream, a Request's body, or an async iterable) is read once into memory,
 * up to `maxBytes`.
 *
 * @example const plan = await replayableBody(url, { method: 'PUT', body: stream }, 1_048_576)
 */
export async function replayableBody(
  input: RequestInfo | URL,
  init: RequestInit | undefined,
  maxBytes: number,
): Promise<BodyPlan> {
  const body: unknown = init?.body ?? undefined;
  if (body === undefined || body === null) {
    if (isRequest(input) && input.body !== null) return buffer(readerPull(input.body), maxBytes);
    return { kind: 'none' };
  }
  if (body instanceof ReadableStream) return buffer(readerPull(body), maxBytes);
  if (typeof body === 'string' || body instanceof Blob) return { kind: 'replayable', body };
  if (body instanceof ArrayBuffer) return { kind: 'replayable', body: body.slice(0) };
  if (ArrayBuffer.isView(body)) return { kind: 'replayable', body: copyView(body) };
  if (body instanceof URLSearchParams) return { kind: 'replayable', body: new URLSearchParams(body) };
  if (body instanceof FormData) return { kind: 'replayable', body: copyFormData(body) };
  if (isAsyncIterable(body)) {
    const iterator = body[Symbol.asyncIterator]();
    return buffer(() => iterator.next(), maxBytes);
  }
  // Anything else fetch stringifies itself, the same way on every attempt.
  return { kind: 'replayable', body: body as BodyInit };
}

/** True for a fetch Request (duck-typed, so a Request from another realm or polyfill counts). */
export function isRequest(input: unknown): input is Request {
  return (
    typeof input === 'object' &&
    input !== null &&
    !(input instanceof URL) &&
    typeof (input as Request).method === 'string' &&
    typeof (input as Request).url === 'string' &&
    (input as Request).headers instanceof Headers
  );
}

async function buffer(pull: Pull, maxBytes: number): Promise<BodyPlan> {
  const chunks: Bytes[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await pull();
    if (done) return { kind: 'replayable', body: concat(chunks, size) };
    const chunk = toBytes(value);
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size > maxBytes) return { kind: 'too-large', body: resume(chunks, pull) };
  }
}

// Replays the chunks already read, then streams the rest: the one attempt still sends it all.
function resume(chunks: Bytes[], pull: Pull): ReadableStream<Bytes> {
  return new ReadableStream<Bytes>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
    },
    async pull(controller) {
      const { done, value } = await pull();
      if (done) controller.close();
      else controller.enqueue(toBytes(value));
    },
  });
}

function readerPull(stream: ReadableStream<Uint8Array>): Pull {
  const reader = stream.getReader();
  return () => reader.read();
}

// fetch accepts only byte chunks in a stream; Node streams also yield strings, which fetch
// would refuse later, so they are encoded here as UTF-8 like a string body.
function toBytes(value: unknown): Bytes {
  if (ArrayBuffer.isView(value))
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength) as Bytes;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof value === 'string') return new TextEncoder().encode(value);
  throw new TypeError('a request body stream must yield bytes (Uint8Array)');
}

function concat(chunks: Bytes[], size: number): Bytes {
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

function copyView(view: ArrayBufferView): Bytes {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice() as Bytes;
}

function copyFormData(form: FormData): FormData {
  const copy = new FormData();
  form.forEach((value, name) => copy.append(name, value));
  return copy;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}
