/**
 * Text the server refuses before any rule sees it: a string with a lone surrogate anywhere in a
 * batch (a key, a request's path, a header's value) is a 400, because the stores encode keys as
 * UTF-8, where every lone surrogate becomes the same replacement character, and HMAC pseudonyms
 * are computed over that encoding too: two keys that differ only there would share a bucket.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SECRET } from './policy-support.js';
import { fromAddress, startSluice, type RunningSluice } from './serve-support.js';

const policy = `version: 1
clients: { pseudonymSecret: "${SECRET}" }
rules:
  - { name: api, algorithm: token-bucket, limit: 1, period: 1h }
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    key: [header:x-nick]
    algorithm: token-bucket
    limit: 1
    period: 1h
`;

describe('sluice serve: lone surrogates', () => {
  let sluice: RunningSluice;
  before(async () => {
    sluice = await startSluice(policy);
  });
  after(async () => {
    await sluice.stop();
  });

  it('a key holding a lone surrogate is refused with 400, wherever it is in the batch', async () => {
    for (const [body, path] of [
      [{ items: [{ rule: 'api', key: 'ann\ud800' }] }, '/items/0/key'],
      [
        {
          items: [
            { rule: 'api', key: 'ok' },
            { rule: 'api', key: '\udc00bob' },
          ],
        },
        '/items/1/key',
      ],
      [
        { items: [fromAddress('203.0.113.9', 'POST', '/api/login', { 'x-nick': 'eve\udfff' })] },
        '/items/0/request/headers/x-nick',
      ],
      [{ items: [fromAddress('203.0.113.9', 'POST', '/api/\ud83d')] }, '/items/0/request/path'],
    ] as const) {
      for (const route of ['/v1/decisions', '/v1/peek', '/v1/reset']) {
        const reply = await sluice.post(route, JSON.stringify(body));
        assert.equal(reply.status, 400, route);
        assert.equal(reply.body.code, 'invalid_request');
        assert.deepEqual(reply.body.errors, [
          { path, message: 'holds a lone surrogate (not well-formed UTF-16)' },
        ]);
      }
    }
  });

  it('forget refuses such a key too', async () => {
    const reply = await sluice.post('/v1/forget', JSON.stringify({ items: [{ key: '\ud800ann' }] }));
    assert.deepEqual(
      [reply.status, reply.body.errors],
      [400, [{ path: '/items/0/key', message: 'holds a lone surrogate (not well-formed UTF-16)' }]],
    );
  });

  it('keys that differ only in a lone surrogate never share a bucket', async () => {
    const first = await sluice.post(
      '/v1/decisions',
      JSON.stringify({ items: [{ rule: 'api', key: 'k\ud800' }] }),
    );
    const second = await sluice.post(
      '/v1/decisions',
      JSON.stringify({ items: [{ rule: 'api', key: 'k\udc00' }] }),
    );
    assert.deepEqual([first.status, second.status], [400, 400]);
    const nick = (n: string) => ({
      items: [fromAddress('203.0.113.9', 'POST', '/api/login', { 'x-nick': n })],
    });
    assert.deepEqual(
      [
        (await sluice.post('/v1/decisions', JSON.stringify(nick('m\ud800')))).status,
        (await sluice.post('/v1/decisions', JSON.stringify(nick('m\udbff')))).status,
      ],
      [400, 400],
    );
  });

  it('a well-formed pair is a key like any other', async () => {
    const reply = await sluice.post('/v1/decisions', { items: [{ rule: 'api', key: 'smile\ud83d\ude00' }] });
    assert.deepEqual([reply.status, reply.body.results[0].status], [200, 200]);
  });

  it('a body that is not UTF-8 is refused with 400: its bytes would all read as U+FFFD', async () => {
    const raw = (bytes: number[]) =>
      fetch(`${sluice.url}/v1/decisions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat([
          Buffer.from('{"items":[{"rule":"api","key":"raw'),
          Buffer.from(bytes),
          Buffer.from('"}]}'),
        ]),
      }).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as { code?: string; detail?: string },
      }));
    for (const bytes of [[0xff], [0xed, 0xa0, 0x80], [0xc3]]) {
      const reply = await raw(bytes);
      assert.deepEqual(
        [reply.status, reply.body.code, reply.body.detail],
        [400, 'invalid_request', 'The body is not UTF-8.'],
      );
    }
  });
});
