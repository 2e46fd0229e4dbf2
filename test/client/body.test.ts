import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { replayableBody } from '../../src/client/body.js';
import { withRetries } from '../../src/client/index.js';
import { closeServers, retrying, type Reply } from './support.js';

after(closeServers);

const tooMany: Reply = { status: 429, headers: { 'Retry-After': '1' } };
const created: Reply = { status: 201 };

function streamOf(...parts: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(encoder.encode(part));
      controller.close();
    },
  });
}

const keyed = (key: string, extra: Record<string, string> = {}) => ({ 'Idempotency-Key': key, ...extra });

/** A keyed POST of a stream; `duplex: 'half'` is what fetch requires of a stream body. */
const streamPost = (key: string, ...parts: string[]) =>
  ({ method: 'POST', headers: keyed(key), body: streamOf(...parts), duplex: 'half' }) as RequestInit;

describe('same key, same body', () => {
  it('a retry carries the same Idempotency-Key and the same string body', async () => {
    const { server, api } = await retrying([tooMany, tooMany, created]);
    const res = await api(server.url, {
      method: 'POST',
      headers: keyed('order-42', { 'content-type': 'application/json' }),
      body: '{"course":"c003"}',
    });
    assert.equal(res.status, 201);
    assert.deepEqual(
      server.received.map((r) => [r.method, r.headers['idempotency-key'], r.headers['content-type'], r.body]),
      Array(3).fill(['POST', 'order-42', 'application/json', '{"course":"c003"}']),
    );
  });

  it('buffers a stream body so that every attempt sends all of it', async () => {
    const { server, api } = await retrying([tooMany, created]);
    const res = await api(server.url, streamPost('k', 'part one, ', 'part two'));
    assert.equal(res.status, 201);
    assert.deepEqual(
      server.received.map((r) => r.body),
      ['part one, part two', 'part one, part two'],
    );
  });

  it('buffers a Node stream (an async iterable) body too', async () => {
    const { server, api } = await retrying([tooMany, created]);
    const init = { method: 'PUT', body: Readable.from(['a', 'b', 'c']), duplex: 'half' };
    assert.equal((await api(server.url, init as unknown as RequestInit)).status, 201);
    assert.deepEqual(
      server.received.map((r) => r.body),
      ['abc', 'abc'],
    );
  });

  it('replays the body and key of a Request object', async () => {
    const { server, api } = await retrying([tooMany, created]);
    const request = new Request(server.url, {
      method: 'POST',
      headers: keyed('req-1'),
      body: 'from a Request',
    });
    assert.equal((await api(request)).status, 201);
    assert.deepEqual(
      server.received.map((r) => [r.headers['idempotency-key'], r.body]),
      [
        ['req-1', 'from a Request'],
        ['req-1', 'from a Request'],
      ],
    );
  });

  it('a stream longer than maxBodyBytes is sent once, whole, and its retry refused with a reason', async () => {
    const { server, giveUps, api } = await retrying([tooMany, created], { maxBodyBytes: 8 });
    const res = await api(server.url, streamPost('big', '0123456789', 'abcdef'));
    assert.equal(res.status, 429);
    assert.deepEqual(
      server.received.map((r) => r.body),
      ['0123456789abcdef'],
    );
    assert.deepEqual(giveUps, [
      { reason: 'body-too-large', attempt: 1, status: 429, retryAfterMs: 1000, outcome: undefined },
    ]);
  });

  it('a caller changing its buffer or headers during a wait changes nothing', async () => {
    const bytes = new TextEncoder().encode('original');
    const headers = new Headers(keyed('stable'));
    const { server, api } = await retrying([tooMany, created], {
      onWait: () => {
        bytes.set(new TextEncoder().encode('MUTATED!'));
        headers.set('Idempotency-Key', 'changed');
      },
    });
    await api(server.url, { method: 'POST', headers, body: bytes });
    assert.deepEqual(
      server.received.map((r) => [r.headers['idempotency-key'], r.body]),
      [
        ['stable', 'original'],
        ['stable', 'original'],
      ],
    );
  });

  it('leaves a request that is never retried untouched (no buffering)', async () => {
    const stream = streamOf('x');
    const init = { method: 'POST', body: stream, duplex: 'half' } as RequestInit;
    const seen: unknown[] = [];
    const api = withRetries(async (_input, i) => {
      seen.push(i);
      return new Response(null, { status: 201 });
    });
    await api('http://127.0.0.1:9/', init);
    assert.equal(seen[0], init);
    assert.equal(stream.locked, false);
  });
});

describe('replayableBody', () => {
  it('snapshots in-memory bodies and copies FormData', async () => {
    const form = new FormData();
    form.append('name', 'Alice');
    const plan = await replayableBody('http://x/', { method: 'POST', body: form }, 10);
    assert.equal(plan.kind, 'replayable');
    assert.ok(plan.kind === 'replayable' && plan.body instanceof FormData && plan.body !== form);
    form.set('name', 'Mallory');
    assert.equal(plan.kind === 'replayable' && (plan.body as FormData).get('name'), 'Alice');

    const params = new URLSearchParams({ q: '1' });
    const copied = await replayableBody('http://x/', { method: 'PUT', body: params }, 10);
    params.set('q', '2');
    assert.equal(copied.kind === 'replayable' && String(copied.body), 'q=1');
  });

  it('reports no body for a GET and a stream exactly at the limit as replayable', async () => {
    assert.deepEqual(await replayableBody('http://x/', undefined, 10), { kind: 'none' });
    const plan = await replayableBody('http://x/', { method: 'PUT', body: streamOf('12345', '678') }, 8);
    assert.equal(plan.kind, 'replayable');
  });

  it('refuses a stream of non-bytes with a clear error', async () => {
    const stream = new ReadableStream({
      start(c) {
        c.enqueue({ not: 'bytes' });
        c.close();
      },
    });
    await assert.rejects(replayableBody('http://x/', { method: 'PUT', body: stream }, 8), /must yield bytes/);
  });
});
