/**
 * takeOrWait on the limiter: its options, the modes and stores that cannot wait, the failure
 * policy, events, and an abort whose refund fails. How reservations queue on every store is in
 * the store conformance suite ("waiting for a slot").
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MemoryStore,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type DecisionEvent,
  type Store,
  type SyncStore,
} from '../../src/index.js';
import { FailingStore } from '../../src/testing/index.js';

const START = Date.UTC(2026, 0, 15, 12);
const coded = (code: string) => (e: unknown) => isSluiceError(e) && e.code === code;

function limiterOn(store: Store, options: { penalty?: boolean } = {}) {
  return createLimiter({
    name: 'api',
    rule: tokenBucket({ limit: 1, period: '1m', ...options }),
    store,
    clock: manualClock(START),
  });
}

describe('limiter.takeOrWait', () => {
  it('checks its options and names them, never a value', async () => {
    const l = limiterOn(new MemoryStore());
    const cases: [unknown, string][] = [
      [undefined, 'SLUICE_ARGUMENT'],
      [{}, 'SLUICE_DURATION'],
      [{ maxWait: 2000 }, 'SLUICE_DURATION'],
      [{ maxWait: '2h' }, 'SLUICE_CONFIG'],
      [{ maxWait: '1s', cost: 0 }, 'SLUICE_ARGUMENT'],
      [{ maxWait: '1s', cost: 1.5 }, 'SLUICE_ARGUMENT'],
      [{ maxWait: '1s', signal: {} }, 'SLUICE_ARGUMENT'],
      [{ maxWait: '1s', timeout: '1s' }, 'SLUICE_CONFIG'],
    ];
    for (const [options, code] of cases)
      await assert.rejects(l.takeOrWait('k', options as never), coded(code), JSON.stringify(options));
    await assert.rejects(l.takeOrWait('', { maxWait: '1s' }), coded('SLUICE_KEY_MISSING'));
    assert.equal((await l.peek('k')).remaining, 1, 'nothing was charged');
  });

  it('a limit in shadow mode, a closed limiter and a store without reserve cannot wait', async () => {
    const rule = tokenBucket({ limit: 1, period: '1m' });
    const shadow = createLimiter({ name: 's', rule, store: new MemoryStore(), mode: 'shadow' });
    await assert.rejects(shadow.takeOrWait('k', { maxWait: '1s' }), coded('SLUICE_CONFIG'));
    const closed = createLimiter({ name: 'c', rule, store: new MemoryStore() });
    closed.close();
    await assert.rejects(closed.takeOrWait('k', { maxWait: '1s' }), coded('SLUICE_CONFIG'));
    const plain = new FailingStore();
    const bind = plain.bind.bind(plain);
    plain.bind = (name, bound) => ({ ...bind(name, bound), reserve: undefined });
    const without = createLimiter({ name: 'w', rule, store: plain });
    await assert.rejects(without.takeOrWait('k', { maxWait: '1s' }), coded('SLUICE_CONFIG'));
  });

  it('a synchronous store written elsewhere that reserves only asynchronously still waits', async () => {
    const memory = new MemoryStore();
    const store: SyncStore = {
      kind: 'sync-elsewhere',
      bind(name, rule) {
        const b = memory.bind(name, rule);
        return {
          name,
          rule,
          take: (...args) => b.take(...args),
          takeSync: (...args) => b.takeSync(...args),
          reset: (key) => b.reset(key),
          resetSync: (key) => b.resetSync(key),
          adjust: (...args) => b.adjust(...args),
          adjustSync: (...args) => b.adjustSync(...args),
          reserve: (...args) => b.reserve(...args),
        };
      },
      unbind: (name) => memory.unbind(name),
      takeAll: (entries, now) => memory.takeAll(entries, now),
      takeAllSync: (entries, now) => memory.takeAllSync(entries, now),
    };
    const l = limiterOn(store);
    await l.take('k');
    const { decision } = await l.takeOrWait('k', { maxWait: '30s' });
    assert.deepEqual([decision.allowed, decision.retryAfterMs], [false, 60_000]);
  });

  it('a refused reservation charges nothing, even under penalty', async () => {
    const l = limiterOn(new MemoryStore(), { penalty: true });
    await l.take('k');
    for (let i = 0; i < 3; i++) {
      const { decision } = await l.takeOrWait('k', { maxWait: '30s' });
      assert.deepEqual([decision.allowed, decision.retryAfterMs], [false, 60_000]);
    }
  });

  it('a store that fails decides by the failure policy, as for a take, without waiting', async () => {
    const store = new FailingStore();
    const open = createLimiter({
      name: 'o',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      failure: 'open',
      logger: { warn: () => {} },
    });
    store.mode = 'reject';
    const waited = await open.takeOrWait('k', { maxWait: '5m' });
    assert.deepEqual(
      [waited.decision.allowed, waited.decision.source, waited.receipt, waited.waitedMs],
      [true, 'fail-open', undefined, 0],
    );
    const closed = createLimiter({
      name: 'c',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      logger: { warn: () => {} },
    });
    await assert.rejects(closed.takeOrWait('k', { maxWait: '5m' }), coded('SLUICE_STORE_UNAVAILABLE'));
  });

  it('an aborted wait whose refund fails still rejects with the abort reason', async () => {
    const store = new FailingStore();
    const l = createLimiter({
      name: 'r',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      clock: manualClock(START),
      logger: { warn: () => {} },
    });
    await l.take('k');
    const controller = new AbortController();
    const waiting = l.takeOrWait('k', { maxWait: '5m', signal: controller.signal });
    await new Promise((resolve) => setImmediate(resolve)); // reserved, now waiting
    store.mode = 'reject';
    const reason = new Error('gone');
    controller.abort(reason);
    await assert.rejects(waiting, (e) => e === reason);
    store.mode = 'ok';
    const probe = await l.takeOrWait('k', { maxWait: '1s' });
    assert.equal(probe.decision.retryAfterMs, 120_000, 'the reservation could not be given back');
  });

  it('reports one event per call: the reservation, as admitted', async () => {
    const l = limiterOn(new MemoryStore());
    const seen: DecisionEvent[] = [];
    l.events.subscribe((event) => seen.push(event));
    const controller = new AbortController();
    await l.takeOrWait('k', { maxWait: '1s' });
    const waiting = l.takeOrWait('k', { maxWait: '5m', signal: controller.signal });
    await l.takeOrWait('k', { maxWait: '1s' });
    controller.abort();
    await assert.rejects(waiting);
    assert.deepEqual(
      seen.map((e) => [e.outcome, e.retryAfterMs]),
      [
        ['admitted', 0],
        ['admitted', 0],
        ['refused', 120_000],
      ],
    );
  });

  it('waits are the core rule’s: every reservation within maxWait is admitted with the exact wait, in order', () => {
    fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 60 }),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 20 }),
        async (limit, seconds, costs) => {
          const burst = 3;
          const l = createLimiter({
            name: 'p',
            rule: tokenBucket({ limit, period: `${seconds}s`, burst }),
            store: new MemoryStore(),
            clock: manualClock(START),
          });
          let queued = 0; // ms of refill queued ahead of now, times limit
          for (const cost of costs) {
            const d = await l.buckets.reserve!('k', cost, START, 3_600_000);
            queued += cost * seconds * 1000;
            const wait = Math.max(0, Math.ceil((queued - burst * seconds * 1000) / limit));
            assert.deepEqual([d.allowed, d.retryAfterMs], [true, wait]);
          }
        },
      ),
      { numRuns: 50 },
    );
  });
});
