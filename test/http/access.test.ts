/**
 * A route limit's allow and deny lists and its skip predicate: decided before the key, in the
 * order deny, allow, skip, then methods/exclude/preflight; reported as guard events; checked at
 * setup without quoting what the lists hold.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createGuard, type GuardOutcome, type RateLimitOptions } from '../../src/http/guard.js';
import {
  DecisionEvents,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type DecisionEvent,
} from '../../src/index.js';
import { FailingStore } from '../../src/testing/index.js';

interface Req {
  ip?: string;
}

const facts = { method: 'POST', path: '/api/things' };

/** A guard over a store that counts its calls, with a key function that counts its own. */
function setup(options: Partial<RateLimitOptions<Req>> = {}) {
  const clock = manualClock(0);
  const store = new FailingStore();
  const limits = createLimiter({ name: 'api', rule: tokenBucket({ limit: 10, period: '1m' }), store, clock });
  const seen = { keys: 0, errors: [] as unknown[] };
  const guard = createGuard<Req>({
    limits,
    key: () => {
      seen.keys++;
      return 'client';
    },
    address: (req) => req.ip,
    onError: (error) => seen.errors.push(error),
    ...options,
  });
  return { guard, store, seen, clock };
}

function statusOf(outcome: GuardOutcome): number {
  return outcome.action === 'respond' ? outcome.response.status : 200;
}

describe('deny', () => {
  it('answers 403 problem+json with code denied and the guard Cache-Control, before the key and the store', async () => {
    const { guard, store, seen } = setup({ deny: ['203.0.113.0/24'], cacheControl: 'private, no-store' });
    const outcome = await guard.check({ ip: '203.0.113.9' }, facts);
    assert.deepEqual(outcome, {
      action: 'respond',
      response: {
        status: 403,
        headers: { 'Content-Type': 'application/problem+json', 'Cache-Control': 'private, no-store' },
        body: JSON.stringify({
          type: 'about:blank',
          title: 'Forbidden',
          status: 403,
          detail: 'Requests from this client are not accepted.',
          code: 'denied',
        }),
      },
      decisions: [],
      receipts: [],
    });
    assert.equal(seen.keys, 0);
    assert.equal(store.calls, 0);
    assert.equal(statusOf(await guard.check({ ip: '203.0.114.1' }, facts)), 200, 'another client passes');
    assert.equal(store.calls, 1);
  });

  it('applies to every method and route that reaches the limit', async () => {
    const { guard } = setup({ deny: ['::1'], methods: ['POST'], exclude: ['GET /health'] });
    for (const [method, path] of [
      ['GET', '/api/things'],
      ['GET', '/health'],
      ['OPTIONS', '/api/things'],
    ]) {
      assert.equal(statusOf(await guard.check({ ip: '::1' }, { method: method!, path: path! })), 403);
    }
  });
});

describe('allow', () => {
  it('lets a listed client through untouched: no key, no store call, no headers', async () => {
    const { guard, store, seen } = setup({ allow: ['10.0.0.0/8', '2001:db8::/32'] });
    for (const ip of ['10.1.2.3', '2001:db8:1::7', '::ffff:10.9.9.9']) {
      assert.deepEqual(await guard.check({ ip }, facts), {
        action: 'continue',
        headers: {},
        decisions: [],
        receipts: [],
      });
    }
    assert.equal(seen.keys, 0);
    assert.equal(store.calls, 0);
    const other = await guard.check({ ip: '192.0.2.1' }, facts);
    assert.equal(other.action, 'continue');
    assert.equal(other.decisions.length, 1, 'a client off the list is charged');
    assert.equal(store.calls, 1);
  });

  it('an IPv4-mapped range matches the plain IPv4 client, and the other way round', async () => {
    const { guard, seen } = setup({ allow: ['::ffff:192.0.2.0/120', '198.51.100.0/24'] });
    await guard.check({ ip: '192.0.2.200' }, facts);
    await guard.check({ ip: '::ffff:198.51.100.4' }, facts);
    assert.equal(seen.keys, 0);
  });

  it('an address that is missing or not an IP address is on no list', async () => {
    const { guard, seen } = setup({ allow: ['0.0.0.0/0', '::/0'], deny: [] });
    for (const ip of [undefined, '', 'unknown', '10.0.0.1:8080', '[::1]', '010.0.0.1'])
      assert.equal(statusOf(await guard.check({ ip }, facts)), 200);
    assert.equal(seen.keys, 6, 'every one of them went on to the key');
  });
});

describe('order: deny, allow, skip, then methods, exclude and preflight, then the key', () => {
  it('deny wins over allow for an address on both lists', async () => {
    const { guard } = setup({ allow: ['10.0.0.0/8'], deny: ['10.6.6.6'] });
    assert.equal(statusOf(await guard.check({ ip: '10.6.6.6' }, facts)), 403);
    assert.equal((await guard.check({ ip: '10.6.6.7' }, facts)).decisions.length, 0);
  });

  it('skip is asked only for clients on neither list, and before the key', async () => {
    const asked: (string | undefined)[] = [];
    const { guard, seen } = setup({
      allow: ['10.0.0.0/8'],
      deny: ['192.0.2.0/24'],
      skip: (req) => {
        asked.push(req.ip);
        return req.ip === '198.51.100.1';
      },
    });
    for (const ip of ['10.0.0.1', '192.0.2.1', '198.51.100.1', '198.51.100.2'])
      await guard.check({ ip }, facts);
    assert.deepEqual(asked, ['198.51.100.1', '198.51.100.2']);
    assert.equal(seen.keys, 1, 'only the request that was neither listed nor skipped');
  });

  it('skip comes before methods: it is asked for a request the methods leave alone', async () => {
    let asked = 0;
    const { guard } = setup({ methods: ['POST'], skip: () => (asked++, false) });
    await guard.check({}, { method: 'GET', path: '/' });
    assert.equal(asked, 1);
  });
});

describe('skip', () => {
  it('true (sync or async) lets the request through untouched; false, or anything but true, limits it', async () => {
    for (const answer of [true, Promise.resolve(true)]) {
      const { guard, store, seen } = setup({ skip: () => answer as boolean });
      assert.deepEqual(await guard.check({}, facts), {
        action: 'continue',
        headers: {},
        decisions: [],
        receipts: [],
      });
      assert.equal(seen.keys + store.calls, 0);
    }
    for (const answer of [false, Promise.resolve(false), 'yes', 1]) {
      const { guard, store } = setup({ skip: () => answer as boolean });
      assert.equal((await guard.check({}, facts)).decisions.length, 1);
      assert.equal(store.calls, 1);
    }
  });

  it('a skip that throws or rejects is no skip, and is reported through onError at most once a minute', async () => {
    const failure = new Error('skip broke');
    for (const fail of [
      () => {
        throw failure;
      },
      () => Promise.reject(failure),
    ]) {
      const { guard, store, seen, clock } = setup({ skip: fail });
      for (let i = 0; i < 3; i++) assert.equal((await guard.check({}, facts)).decisions.length, 1);
      assert.equal(store.calls, 3, 'every request was limited');
      assert.deepEqual(seen.errors, [failure], 'reported once for three failures');
      clock.advance(60_000);
      await guard.check({}, facts);
      assert.equal(seen.errors.length, 2);
    }
  });
});

describe('address', () => {
  it('one that throws, or returns an object (a promise), is a 500 reported to onError', async () => {
    const bug = new Error('no socket');
    for (const address of [
      () => {
        throw bug;
      },
      () => Promise.resolve('10.0.0.1') as unknown as string,
    ]) {
      const { guard, seen, store } = setup({ deny: ['10.0.0.0/8'], address });
      assert.equal(statusOf(await guard.check({}, facts)), 500);
      assert.equal(seen.errors.length, 1);
      assert.equal(store.calls + seen.keys, 0);
    }
  });

  it('is not asked when there is no list', async () => {
    let asked = 0;
    const { guard } = setup({ address: () => (asked++, '10.0.0.1'), skip: () => false });
    await guard.check({}, facts);
    assert.equal(asked, 0);
  });
});

describe('guard events', () => {
  const event = (outcome: string): DecisionEvent => ({
    rule: undefined,
    outcome: outcome as DecisionEvent['outcome'],
    store: undefined,
    cost: 0,
    remaining: 0,
    retryAfterMs: 0,
    storeLatencyMs: 0,
    keyHash: undefined,
  });

  it('denied, allowed-by-list and skipped are reported with no rule, store or key; the limit reports its own', async () => {
    const events = new DecisionEvents({ keyHash: (key) => `h:${key.length}` });
    const heard: DecisionEvent[] = [];
    events.subscribe((e) => heard.push(e));
    const { guard } = setup({
      deny: ['192.0.2.1'],
      allow: ['10.0.0.0/8'],
      skip: (req) => req.ip === '198.51.100.1',
      events,
    });
    for (const ip of ['192.0.2.1', '10.0.0.1', '198.51.100.1', '198.51.100.2'])
      await guard.check({ ip }, facts);
    assert.deepEqual(heard, [event('denied'), event('allowed-by-list'), event('skipped')]);
  });

  it('a throwing listener changes no outcome', async () => {
    const events = new DecisionEvents({ onListenerError: () => {} });
    events.subscribe(() => {
      throw new Error('listener');
    });
    const { guard } = setup({ deny: ['192.0.2.1'], events });
    assert.equal(statusOf(await guard.check({ ip: '192.0.2.1' }, facts)), 403);
  });
});

describe('setup errors: SLUICE_CONFIG naming the option and the position, never the entry', () => {
  const limits = createLimiter({
    name: 'cfg',
    rule: tokenBucket({ limit: 1, period: '1m' }),
    store: new FailingStore(),
  });
  const address = () => undefined;
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['allow that is not an array', { allow: '10.0.0.0/8', address }, /^rateLimit allow must be an array/],
    ['deny that is not an array', { deny: { 0: '10.0.0.1' }, address }, /^rateLimit deny must be an array/],
    ['an entry that is not text', { allow: ['10.0.0.1', 7], address }, /^rateLimit allow\[1\] must be/],
    ['an entry that is no address', { deny: ['secret-host.internal'], address }, /^rateLimit deny\[0\] must/],
    ['a prefix that is too long', { deny: ['::/0', '10.1.2.3/33'], address }, /^rateLimit deny\[1\] must/],
    ['host bits set', { allow: ['10.1.2.3/8'], address }, /^rateLimit allow\[0\] must .*network address/],
    ['a prefix that is no number', { allow: ['10.0.0.0/x8'], address }, /^rateLimit allow\[0\] must/],
    ['a list without address', { deny: ['10.0.0.1'] }, /^rateLimit address must be a function/],
    ['address that is not a function', { address: '10.0.0.1' }, /^rateLimit address must be a function/],
    ['proxies without an adapter', { proxies: {}, address }, /^rateLimit proxies must be left out/],
    ['skip that is not a function', { skip: true }, /^rateLimit skip must be a function/],
    ['events that are not a channel', { events: {} }, /^rateLimit events must be a DecisionEvents/],
    ['an unknown option', { alow: ['10.0.0.1'] }, /no option "alow"/],
  ];
  for (const [name, extra, message] of cases) {
    it(name, () => {
      assert.throws(
        () => createGuard<Req>({ limits, key: () => 'k', ...extra } as RateLimitOptions<Req>),
        (e: unknown) => {
          assert.ok(isSluiceError(e, 'SLUICE_CONFIG'));
          assert.match(e.message, message);
          assert.doesNotMatch(e.message, /secret-host|10\.1\.2\.3|x8|received/);
          return true;
        },
      );
    });
  }
});
