import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { abortableSleep } from '../../src/client/index.js';
import { closeServers, retrying, sequence, type Reply } from './support.js';

after(closeServers);

const tooMany = (retryAfter?: string): Reply => ({
  status: 429,
  headers: retryAfter === undefined ? {} : { 'Retry-After': retryAfter },
});
const ok: Reply = { status: 200, body: 'done' };

describe('retry on 429', () => {
  it('waits no less than Retry-After (seconds), plus jitter, then retries', async () => {
    const { server, time, waits, giveUps, api } = await retrying([tooMany('2'), ok]);
    const res = await api(server.url);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'done');
    assert.equal(server.received.length, 2);
    assert.deepEqual(time.waits, [2500]);
    assert.deepEqual(waits, [
      {
        attempt: 1,
        delayMs: 2500,
        reason: 'rate-limited',
        status: 429,
        retryAfterMs: 2000,
        outcome: undefined,
      },
    ]);
    assert.deepEqual(giveUps, []);
  });

  it('never waits less than Retry-After, whatever the random source says', async () => {
    for (const r of [0, 0.25, 0.999999]) {
      const { server, time, api } = await retrying([tooMany('3'), ok], { random: () => r });
      await api(server.url);
      assert.ok(time.waits[0]! >= 3000 && time.waits[0]! < 4000, `random ${r} waited ${time.waits[0]}`);
    }
  });

  it('waits until an HTTP-date Retry-After, by the injected clock', async () => {
    const { server, time, api } = await retrying([tooMany('Thu, 01 Jan 2026 12:00:10 GMT'), ok]);
    await api(server.url);
    assert.deepEqual(time.waits, [10_500]);
  });

  it('a Retry-After date in the past is no lower bound: backoff applies', async () => {
    const { server, time, waits, api } = await retrying([tooMany('Thu, 01 Jan 2026 11:00:00 GMT'), ok]);
    await api(server.url);
    assert.deepEqual(time.waits, [250]);
    assert.equal(waits[0]?.retryAfterMs, undefined);
  });

  it('without Retry-After backs off exponentially with full jitter, capped per wait', async () => {
    const { server, time, api } = await retrying([tooMany()], {
      maxAttempts: 6,
      baseDelay: '1s',
      maxDelay: '3s',
      random: sequence(0.5, 0.5, 0.5, 0.999, 0),
    });
    const res = await api(server.url);
    assert.equal(res.status, 429);
    assert.deepEqual(time.waits, [500, 1000, 1500, 2997, 0]);
  });

  it('garbage, negative and fractional Retry-After never crash or loop', async () => {
    for (const value of ['soon', '-5', '', '1e9', '2, 3']) {
      const { server, time, api } = await retrying([tooMany(value), ok]);
      const res = await api(server.url);
      assert.equal(res.status, 200, value);
      assert.deepEqual(time.waits, [250], `${JSON.stringify(value)} is ignored: backoff`);
    }
    const { server, time, api } = await retrying([tooMany('1.2'), ok]);
    await api(server.url);
    assert.deepEqual(time.waits, [2500], '1.2 s is rounded up to 2 s');
  });

  it('caps a jittered wait at maxDelay, never below Retry-After', async () => {
    const { server, time, api } = await retrying([tooMany('2'), ok], {
      maxDelay: '2200ms',
      random: () => 0.9,
    });
    await api(server.url);
    assert.deepEqual(time.waits, [2200]);
  });

  it('a Retry-After above maxDelay gives up (never retries sooner) and returns the 429', async () => {
    const { server, time, giveUps, api } = await retrying([tooMany('99999999999'), ok], { maxDelay: '30s' });
    const res = await api(server.url);
    assert.equal(res.status, 429);
    assert.equal(server.received.length, 1);
    assert.deepEqual(time.waits, []);
    assert.deepEqual(giveUps, [
      {
        reason: 'retry-after-too-long',
        attempt: 1,
        status: 429,
        retryAfterMs: 99_999_999_999_000,
        outcome: undefined,
      },
    ]);
  });
});

describe('bounds', () => {
  it('stops after maxAttempts and returns the last 429 with its body', async () => {
    const { server, time, giveUps, api } = await retrying(
      [{ status: 429, headers: { 'Retry-After': '1' }, body: 'slow down' }],
      {
        maxAttempts: 3,
      },
    );
    const res = await api(server.url);
    assert.equal(res.status, 429);
    assert.equal(await res.text(), 'slow down');
    assert.equal(server.received.length, 3);
    assert.equal(time.waits.length, 2);
    assert.deepEqual(giveUps, [
      { reason: 'max-attempts', attempt: 3, status: 429, retryAfterMs: 1000, outcome: undefined },
    ]);
  });

  it('maxAttempts 1 never retries', async () => {
    const { server, giveUps, api } = await retrying([tooMany('1'), ok], { maxAttempts: 1 });
    assert.equal((await api(server.url)).status, 429);
    assert.equal(server.received.length, 1);
    assert.equal(giveUps[0]?.reason, 'max-attempts');
  });

  it('does not start a wait that would end after the deadline', async () => {
    const { server, time, giveUps, api } = await retrying([tooMany('3')], {
      deadline: '7s',
      maxAttempts: 10,
    });
    const res = await api(server.url);
    assert.equal(res.status, 429);
    // 3.5 s, then 3.5 s (ends at 7 s, allowed), then a third would end at 10.5 s.
    assert.deepEqual(time.waits, [3500, 3500]);
    assert.equal(server.received.length, 3);
    assert.equal(giveUps[0]?.reason, 'deadline');
  });

  it('an AbortSignal cancels a wait at once (real sleep, long Retry-After)', async () => {
    const controller = new AbortController();
    // The default sleep, a real 25 s timer, aborted once it runs: only the abort can end it in time.
    const { server, giveUps, api } = await retrying([tooMany('25'), ok], {
      sleep: (ms, signal) => {
        const waiting = abortableSleep(ms, signal);
        controller.abort(new Error('user left the page'));
        return waiting;
      },
    });
    await assert.rejects(api(server.url, { signal: controller.signal }), { message: 'user left the page' });
    assert.equal(server.received.length, 1);
    assert.equal(giveUps[0]?.reason, 'aborted');
  });

  it('an abort ends the wait even if an injected sleep ignores the signal', async () => {
    const { server, api } = await retrying([tooMany('5'), ok], {
      sleep: () => new Promise<void>(() => {}),
      onWait: () => controller.abort(),
    });
    const controller = new AbortController();
    await assert.rejects(api(server.url, { signal: controller.signal }), { name: 'AbortError' });
    assert.equal(server.received.length, 1);
  });

  it('an already aborted signal sends nothing', async () => {
    const { server, api } = await retrying([ok]);
    await assert.rejects(api(server.url, { signal: AbortSignal.abort() }), { name: 'AbortError' });
    assert.equal(server.received.length, 0);
  });
});

describe('503 and other statuses', () => {
  it('retries a 503 under its own reason, honouring its Retry-After', async () => {
    const { server, time, waits, api } = await retrying([
      { status: 503, headers: { 'Retry-After': '4' } },
      ok,
    ]);
    assert.equal((await api(server.url)).status, 200);
    assert.deepEqual(time.waits, [4500]);
    assert.equal(waits[0]?.reason, 'unavailable');
    assert.equal(waits[0]?.status, 503);
  });

  it('backs off on a 503 without Retry-After', async () => {
    const { server, time, api } = await retrying([{ status: 503 }, { status: 503 }, ok]);
    assert.equal((await api(server.url)).status, 200);
    assert.deepEqual(time.waits, [250, 500]);
  });

  it('retryUnavailable false returns a 503 at once, with no event', async () => {
    const { server, waits, giveUps, api } = await retrying(
      [{ status: 503, headers: { 'Retry-After': '1' } }, ok],
      {
        retryUnavailable: false,
      },
    );
    assert.equal((await api(server.url)).status, 503);
    assert.equal(server.received.length, 1);
    assert.deepEqual([waits, giveUps], [[], []]);
  });

  it('never retries a 4xx other than 429, nor another 5xx', async () => {
    for (const status of [400, 401, 403, 404, 408, 409, 413, 422, 425, 500, 502, 504]) {
      const { server, waits, api } = await retrying([{ status, headers: { 'Retry-After': '1' } }, ok]);
      assert.equal((await api(server.url)).status, status);
      assert.equal(server.received.length, 1, `status ${status}`);
      assert.deepEqual(waits, []);
    }
  });
});

describe('methods', () => {
  it('retries idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE) without a key', async () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'get']) {
      const { server, api } = await retrying([tooMany('1'), ok]);
      const res = await api(server.url, { method, body: method === 'PUT' ? 'x' : undefined });
      assert.equal(res.status, 200, method);
      assert.equal(server.received.length, 2, method);
    }
  });

  it('never retries POST or PATCH without an Idempotency-Key, and says why', async () => {
    for (const method of ['POST', 'PATCH']) {
      const { server, giveUps, api } = await retrying([tooMany('1'), ok]);
      const res = await api(server.url, { method, body: 'x', headers: { 'Idempotency-Key': '  ' } });
      assert.equal(res.status, 429, method);
      assert.equal(server.received.length, 1, method);
      assert.deepEqual(giveUps, [
        { reason: 'not-idempotent', attempt: 1, status: 429, retryAfterMs: 1000, outcome: undefined },
      ]);
    }
  });

  it('retries POST and PATCH that carry an Idempotency-Key', async () => {
    for (const method of ['POST', 'PATCH']) {
      const { server, api } = await retrying([tooMany('1'), { status: 201 }]);
      const res = await api(server.url, { method, body: 'x', headers: { 'Idempotency-Key': 'k-1' } });
      assert.equal(res.status, 201, method);
      assert.equal(server.received.length, 2, method);
    }
  });

  it('honours a custom idempotency key header', async () => {
    const { server, api } = await retrying([tooMany('1'), { status: 201 }], {
      idempotencyKeyHeader: 'X-Request-Id',
    });
    const res = await api(server.url, { method: 'POST', body: 'x', headers: { 'x-request-id': 'r-9' } });
    assert.equal(res.status, 201);
    assert.deepEqual(
      server.received.map((r) => r.headers['x-request-id']),
      ['r-9', 'r-9'],
    );
  });
});
