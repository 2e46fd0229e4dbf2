/**
 * `guard.decide`: the decision `check` makes, returned as it is when nothing was waited for (a
 * memory store, a key function and a skip that answer at once), and as a promise otherwise; the
 * adapters that use it to spare a request a promise; and what the node adapters read of a request.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { createGuard, type GuardOutcome, type RateLimitOptions } from '../../src/http/guard.js';
import { MemoryStore, createLimiter, manualClock, tokenBucket } from '../../src/index.js';
import { nodeRequestFacts } from '../../src/adapters/node/response.js';
import { rateLimit as fastifyRateLimit } from '../../src/adapters/fastify/index.js';

interface Req {
  id: number;
  address: string;
  skip?: boolean;
}

function guardOf(extra: Partial<RateLimitOptions<Req>> = {}) {
  const limits = createLimiter({
    name: 'decide',
    rule: tokenBucket({ limit: 2, period: '1h' }),
    store: new MemoryStore(),
    clock: manualClock(0),
  });
  return createGuard<Req>({
    limits,
    key: (req) => `user:${req.id}`,
    address: (req) => req.address,
    deny: ['203.0.113.0/24'],
    allow: ['10.0.0.0/8'],
    skip: (req) => req.skip === true,
    exclude: ['GET /health'],
    ...extra,
  });
}

const isThenable = (value: unknown) => typeof (value as Promise<unknown>)?.then === 'function';

/** What a request sees of an outcome: the action, the status and headers, the decisions' verdicts. */
function seen(outcome: GuardOutcome) {
  return {
    action: outcome.action,
    status: outcome.action === 'respond' ? outcome.response.status : undefined,
    headers: outcome.action === 'respond' ? outcome.response.headers : outcome.headers,
    allowed: outcome.decisions.map((d) => [d.name, d.allowed, d.remaining]),
  };
}

describe('guard.decide', () => {
  const requests: [Req, { method: string; path: string }][] = [
    [
      { id: 1, address: '192.0.2.1' },
      { method: 'POST', path: '/api' },
    ],
    [
      { id: 1, address: '192.0.2.1' },
      { method: 'POST', path: '/api' },
    ],
    [
      { id: 1, address: '192.0.2.1' },
      { method: 'POST', path: '/api' },
    ], // the third is refused
    [
      { id: 2, address: '203.0.113.9' },
      { method: 'POST', path: '/api' },
    ], // denied
    [
      { id: 3, address: '10.1.2.3' },
      { method: 'POST', path: '/api' },
    ], // allowed by the list
    [
      { id: 4, address: '192.0.2.4', skip: true },
      { method: 'POST', path: '/api' },
    ],
    [
      { id: 5, address: '192.0.2.5' },
      { method: 'GET', path: '/health' },
    ], // excluded
  ];

  it('returns every outcome of a memory store without a promise, the same as check resolves to', async () => {
    const sync = guardOf();
    const promised = guardOf();
    for (const [request, facts] of requests) {
      const outcome = sync.decide(request, facts);
      assert.equal(isThenable(outcome), false);
      const checked = promised.check({ ...request }, facts);
      assert.equal(isThenable(checked), true);
      assert.deepEqual(seen(outcome as GuardOutcome), seen(await checked));
    }
  });

  it('returns a promise when the key or the skip answers with one, with the same outcomes', async () => {
    // Which requests wait: the lists decide before the skip, and the key is asked only for a
    // request the skip, the methods and the excluded routes leave to the limit.
    const variants: [Partial<RateLimitOptions<Req>>, boolean[]][] = [
      [{ key: async (req: Req) => `user:${req.id}` }, [true, true, true, false, false, false, false]],
      [{ skip: async (req: Req) => req.skip === true }, [true, true, true, false, false, true, true]],
    ];
    for (const [extra, waits] of variants) {
      const waiting = guardOf(extra);
      const sync = guardOf();
      for (const [i, [request, facts]] of requests.entries()) {
        const outcome = waiting.decide(request, facts);
        assert.equal(isThenable(outcome), waits[i], `request ${i}`);
        assert.deepEqual(seen(await outcome), seen(sync.decide({ ...request }, facts) as GuardOutcome));
      }
    }
  });
});

describe('node request facts', () => {
  function requestOf(method: string, headers: Record<string, string>) {
    const request = new IncomingMessage(new Socket());
    request.method = method;
    request.url = '/x?y=1';
    Object.assign(request.headers, headers);
    return request;
  }

  it('tell a preflight and a request from a page on another origin (an Origin header)', () => {
    assert.deepEqual(nodeRequestFacts(requestOf('GET', {})), {
      method: 'GET',
      path: '/x',
      preflight: false,
      hasOrigin: false,
    });
    assert.deepEqual(
      nodeRequestFacts(
        requestOf('OPTIONS', { 'access-control-request-method': 'POST', origin: 'https://a.example' }),
      ),
      {
        method: 'OPTIONS',
        path: '/x',
        preflight: true,
        hasOrigin: true,
      },
    );
  });
});

describe('the Fastify hook', () => {
  const limits = () =>
    createLimiter({
      name: 'hook',
      rule: tokenBucket({ limit: 1, period: '1h' }),
      store: new MemoryStore(),
      clock: manualClock(0),
    });

  it('calls done at once when it decided at once, and leaves it alone for a request it answered', async () => {
    const hook = fastifyRateLimit({ limits: limits(), key: () => 'k' });
    const calls: { returned: unknown; doneBeforeReturn: boolean }[] = [];
    const app = Fastify();
    app.get(
      '/',
      {
        onRequest: (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
          let called = false;
          const returned = hook(request, reply, () => {
            called = true;
            done();
          });
          calls.push({ returned, doneBeforeReturn: called });
        },
      },
      async () => 'ok',
    );
    const first = await app.inject('/');
    const second = await app.inject('/');
    assert.equal(first.statusCode, 200);
    assert.equal(second.statusCode, 429);
    assert.deepEqual(calls, [
      { returned: undefined, doneBeforeReturn: true },
      { returned: undefined, doneBeforeReturn: false },
    ]);
  });

  it('called without done, or deciding on a key that waits, returns a promise and calls no done', async () => {
    // A hook called directly (no done), and one given done whose key answers with a promise.
    const cases: [() => string | Promise<string>, boolean][] = [
      [() => 'k', false],
      [async () => 'k', true],
    ];
    for (const [key, withDone] of cases) {
      const hook = fastifyRateLimit({ limits: limits(), key });
      const app = Fastify();
      let doneCalls = 0;
      app.get(
        '/',
        {
          onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
            const returned = withDone ? hook(request, reply, () => void doneCalls++) : hook(request, reply);
            assert.equal(isThenable(returned), true);
            await returned;
          },
        },
        async () => 'ok',
      );
      assert.equal((await app.inject('/')).statusCode, 200);
      assert.equal((await app.inject('/')).statusCode, 429);
      assert.equal(doneCalls, 0);
    }
  });
});
