/**
 * A concurrency rule in gateway mode: `sluice serve` (the real CLI, a child process) in front of
 * an upstream on loopback that holds its slow responses until the test lets them go. At most
 * `max` requests of a key are in flight, and the next gets the rule's 429 without reaching the
 * upstream; a slot is released when the response ends, when the upstream fails and when the
 * client leaves, a WebSocket's when its tunnel closes. A reload keeps an unchanged rule's count,
 * and a request in flight across reloads releases its slot to the limit that gave it. The
 * decision API decides none of it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request, type ClientRequest, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { openWebSocket, startUpstream, type Upstream } from './gateway-support.js';
import { logOf, replacePolicy, waitForLog } from './ops-support.js';
import { startSluice, type RunningSluice } from './serve-support.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A request through the gateway as `client`; `sent` is the request, to leave before the answer. */
function send(base: string, path: string, client: string): { answer: Promise<Answer>; sent: ClientRequest } {
  const sent = request(`${base}${path}`, { headers: { 'x-client': client }, agent: false, timeout: 10_000 });
  const answer = new Promise<Answer>((resolve, reject) => {
    sent.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    sent.on('timeout', () => sent.destroy(new Error('no answer within 10 s')));
    sent.on('error', reject);
  });
  sent.end();
  return { answer, sent };
}

/** Asks `get` again (every 20 ms, at most 10 s) until `done` holds for its answer; returns that answer. */
async function until<T>(what: string, get: () => Promise<T> | T, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await get();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * An upstream that answers `/fast` at once, cuts the connection of `/error`, and holds `/slow`
 * until {@link SlowUpstream.release}.
 */
interface SlowUpstream extends Upstream {
  /** Resolves once it has received `count` `/slow` requests of `client` (at most 10 s). */
  reached(client: string, count: number): Promise<number>;
  /** The `/fast` requests of `client` it received so far. */
  fast(client: string): number;
  /** Answers `count` (default: every) held `/slow` request of `client`. */
  release(client: string, count?: number): void;
}

async function slowUpstream(): Promise<SlowUpstream> {
  const held: { client: string; res: ServerResponse; answered: boolean }[] = [];
  const upstream = await startUpstream((req, res) => {
    const client = String(req.headers['x-client']);
    if (req.url === '/slow') held.push({ client, res, answered: false });
    else if (req.url === '/error') req.socket.destroy();
    else res.end('fast');
  });
  return {
    ...upstream,
    reached: (client, count) =>
      until(
        `${count} requests of ${client} in flight`,
        () => held.filter((h) => h.client === client).length,
        (n) => n === count,
      ),
    fast: (client) =>
      upstream.seen.filter((r) => r.url === '/fast' && r.headers['x-client'] === client).length,
    release: (client, count = Infinity) => {
      const waiting = held.filter((h) => h.client === client && !h.answered).slice(0, count);
      for (const entry of waiting) {
        entry.answered = true;
        // A request whose client left was cut by the gateway: nothing is left to answer.
        if (!entry.res.destroyed) entry.res.end('slow');
      }
    },
  };
}

const rule = (max: number) =>
  `  - { name: in-flight, key: [header:x-client], algorithm: concurrency, max: ${max} }\n`;

describe('sluice serve: a concurrency rule in gateway mode', () => {
  let upstream: SlowUpstream;
  let sluice: RunningSluice;
  before(async () => {
    upstream = await slowUpstream();
    sluice = await startSluice(`version: 1\nupstream: \${UPSTREAM}\nrules:\n${rule(2)}`, [], {
      UPSTREAM: upstream.url,
    });
  });
  after(async () => {
    assert.equal(await sluice.stop(), 0);
    await upstream.close();
  });

  const fastUntilAdmitted = (client: string) =>
    until(
      'a slot freed',
      () => send(sluice.url, '/fast', client).answer,
      (answer) => answer.status !== 429,
    );

  it('admits max requests of a key in flight, refuses the next, and frees a slot when a response ends', async () => {
    const first = send(sluice.url, '/slow', 'client-one');
    const second = send(sluice.url, '/slow', 'client-one');
    await upstream.reached('client-one', 2);
    const refused = await send(sluice.url, '/fast', 'client-one').answer;
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.body).code, 'rate_limited');
    assert.ok(refused.headers['retry-after'] !== undefined);
    // Another key has slots of its own.
    assert.equal((await send(sluice.url, '/fast', 'client-two').answer).status, 200);
    upstream.release('client-one', 1);
    assert.equal((await Promise.race([first.answer, second.answer])).status, 200);
    assert.equal((await fastUntilAdmitted('client-one')).status, 200);
    upstream.release('client-one');
    assert.deepEqual(
      (await Promise.all([first.answer, second.answer])).map((a) => a.status),
      [200, 200],
    );
    // The refused requests never reached the upstream: only the one admitted did.
    assert.equal(upstream.fast('client-one'), 1);
  });

  it('frees the slot of a request the upstream failed (502)', async () => {
    const staying = send(sluice.url, '/slow', 'client-three');
    await upstream.reached('client-three', 1);
    assert.equal((await send(sluice.url, '/error', 'client-three').answer).status, 502);
    // One slot is held, the failed request's is free again: a second request fits.
    assert.equal((await fastUntilAdmitted('client-three')).status, 200);
    upstream.release('client-three');
    assert.equal((await staying.answer).status, 200);
  });

  it('frees the slot of a client that left, once', async () => {
    const staying = send(sluice.url, '/slow', 'client-four');
    const leaving = send(sluice.url, '/slow', 'client-four');
    leaving.answer.catch(() => {});
    await upstream.reached('client-four', 2);
    leaving.sent.destroy();
    assert.equal((await fastUntilAdmitted('client-four')).status, 200);
    // The slot given back is one slot: with two in flight again, the next is refused.
    const again = send(sluice.url, '/slow', 'client-four');
    await upstream.reached('client-four', 3);
    assert.equal((await send(sluice.url, '/fast', 'client-four').answer).status, 429);
    upstream.release('client-four');
    assert.deepEqual(
      (await Promise.all([staying.answer, again.answer])).map((a) => a.status),
      [200, 200],
    );
  });

  it('holds a slot for as long as a WebSocket tunnel is open', async () => {
    const open = () => openWebSocket(`${sluice.url}/socket`, { 'x-client': 'client-seven' });
    const first = await open();
    const second = await open();
    assert.ok(first.upgraded && second.upgraded);
    const third = await open();
    assert.equal(third.upgraded ? 101 : third.status, 429);
    first.socket.destroy();
    assert.equal((await fastUntilAdmitted('client-seven')).status, 200);
    second.socket.destroy();
  });

  it('is not decided by the decision API: a request item does not match it, a rule item is refused', async () => {
    const keyed = await sluice.post('/v1/decisions', { items: [{ rule: 'in-flight', key: 'client-five' }] });
    assert.equal(keyed.status, 400);
    assert.deepEqual(keyed.body.errors, [
      { path: '/items/0/rule', message: 'names a concurrency rule, which only the gateway decides for now' },
    ]);
    const matched = await sluice.post('/v1/decisions', {
      items: [
        {
          request: {
            method: 'GET',
            path: '/slow',
            address: '203.0.113.9',
            headers: { 'x-client': 'client-five' },
          },
        },
      ],
    });
    assert.equal(matched.status, 200);
    assert.deepEqual(matched.body.results[0].rules, []);
  });
});

describe('sluice serve: a concurrency rule across reloads', () => {
  it('keeps an unchanged rule’s count, and releases a slot to the limit that gave it', async () => {
    const upstream = await slowUpstream();
    const other =
      '  - { name: other, match: { paths: [/other] }, algorithm: token-bucket, limit: 5, period: 1m }\n';
    const policy = (max: number, extra = '') =>
      `version: 1\nupstream: \${UPSTREAM}\nrules:\n${rule(max)}${extra}`;
    const sluice = await startSluice(policy(1), [], { UPSTREAM: upstream.url });
    try {
      const staying = send(sluice.url, '/slow', 'client-six');
      await upstream.reached('client-six', 1);
      assert.equal((await send(sluice.url, '/fast', 'client-six').answer).status, 429);

      // A rule added: this one is kept, and the slot in flight is still counted.
      replacePolicy(sluice.config, policy(1, other));
      const [kept] = await waitForLog(sluice, 'reload');
      assert.equal(kept!.keptLimits, 1);
      assert.equal((await send(sluice.url, '/fast', 'client-six').answer).status, 429);

      // Its max changed: built anew (a memory store counts afresh), the old one left open until
      // the request that holds its slot has ended.
      replacePolicy(sluice.config, policy(2, other));
      const reloads = await waitForLog(sluice, 'reload', 2);
      assert.equal(reloads[1]!.keptLimits, 1);
      assert.equal((await send(sluice.url, '/fast', 'client-six').answer).status, 200);
      upstream.release('client-six');
      assert.equal((await staying.answer).status, 200);
      assert.equal((await send(sluice.url, '/fast', 'client-six').answer).status, 200);
    } finally {
      assert.equal(await sluice.stop(), 0);
      await upstream.close();
    }
    // The slot went back to the limit that gave it, still open: no release failed.
    assert.deepEqual(
      logOf(sluice).filter((entry) => entry.event === 'decision-error'),
      [],
    );
  });
});
