import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { metrics } from '@opentelemetry/api';
import {
  DECISION_OUTCOMES,
  DecisionEvents,
  MemoryStore,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
} from '../../src/index.js';
import { createGuard } from '../../src/http/index.js';
import { FailingStore } from '../../src/testing/index.js';
import { ABSENT_ATTRIBUTE, STORE_LATENCY_BOUNDARIES_MS, bindDecisionMetrics } from '../../src/otel/index.js';
import { SLUICE_VERSION } from '../../src/otel/version.js';
import { meterProvider } from './metrics-reader.js';

const packageVersion = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** A histogram's data point counts, by series. */
function histogramCounts(histograms: Map<string, { count: number }>): Map<string, number> {
  return new Map([...histograms].map(([series, histogram]) => [series, histogram.count]));
}

describe('bindDecisionMetrics', () => {
  it('counts decisions by rule, outcome and store, units charged by admitted takes, and store latencies', async () => {
    const { meter, collect } = meterProvider();
    const events = new DecisionEvents();
    bindDecisionMetrics(events, { meter });
    const store = new MemoryStore();
    const clock = manualClock(0);
    const login = createLimiter({
      name: 'login',
      rule: tokenBucket({ limit: 3, period: '1m' }),
      store,
      clock,
      events,
    });
    const search = createLimiter({
      name: 'search',
      rule: tokenBucket({ limit: 10, period: '1m' }),
      store,
      clock,
      events,
    });
    login.takeSync('203.0.113.7'); // admitted, 1 unit
    login.takeSync('203.0.113.7', { cost: 2 }); // admitted, 2 units
    login.takeSync('203.0.113.7'); // refused by the store
    login.takeSync('198.51.100.1', { cost: 5 }); // refused for good: more than the rule ever holds, no store asked
    login.peekSync('203.0.113.7'); // a peek decides nothing: not counted
    search.takeSync('q', { cost: 4 }); // admitted, 4 units

    const collected = await collect();
    assert.deepEqual(
      collected.sums('sluice.decisions'),
      new Map([
        ['outcome=admitted,rule=login,store=memory', 2],
        ['outcome=refused,rule=login,store=memory', 2],
        ['outcome=admitted,rule=search,store=memory', 1],
      ]),
    );
    assert.deepEqual(
      collected.sums('sluice.units'),
      new Map([
        ['rule=login,store=memory', 3],
        ['rule=search,store=memory', 4],
      ]),
    );
    const latency = collected.histograms('sluice.store.latency');
    assert.deepEqual(
      histogramCounts(latency),
      new Map([
        ['rule=login,store=memory', 3],
        ['rule=search,store=memory', 1],
      ]),
    );
    for (const histogram of latency.values()) {
      assert.deepEqual(histogram.buckets.boundaries, [...STORE_LATENCY_BOUNDARIES_MS]);
    }
    const latencyMetric = collected.metric('sluice.store.latency');
    assert.equal(latencyMetric.descriptor.unit, 'ms');
  });

  it('counts store failures by the policy that decided, with their latency, and charges no units for them', async () => {
    const { meter, collect } = meterProvider();
    const events = new DecisionEvents();
    bindDecisionMetrics(events, { meter });
    for (const failure of ['open', 'insurance', 'closed'] as const) {
      const store = new FailingStore();
      const limiter = createLimiter({
        name: `f-${failure}`,
        rule: tokenBucket({ limit: 2, period: '1m' }),
        store,
        failure,
        events,
        timeout: '1s',
        logger: { warn() {} },
      });
      assert.equal((await limiter.take('k')).allowed, true); // the store answers
      store.mode = 'reject';
      if (failure === 'closed') {
        await assert.rejects(limiter.take('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE'));
      } else {
        assert.equal((await limiter.take('k')).allowed, true);
      }
      // Refused for good without asking the store: counted, but it has no store latency.
      assert.equal((await limiter.take('k', { cost: 3 })).allowed, false);
    }

    const collected = await collect();
    assert.deepEqual(
      collected.sums('sluice.decisions'),
      new Map([
        ['outcome=admitted,rule=f-open,store=flaky', 1],
        ['outcome=failed-open,rule=f-open,store=flaky', 1],
        ['outcome=refused,rule=f-open,store=flaky', 1],
        ['outcome=admitted,rule=f-insurance,store=flaky', 1],
        ['outcome=insurance,rule=f-insurance,store=flaky', 1],
        ['outcome=refused,rule=f-insurance,store=flaky', 1],
        ['outcome=admitted,rule=f-closed,store=flaky', 1],
        ['outcome=failed-closed,rule=f-closed,store=flaky', 1],
        ['outcome=refused,rule=f-closed,store=flaky', 1],
      ]),
    );
    assert.deepEqual(
      collected.sums('sluice.units'),
      new Map([
        ['rule=f-open,store=flaky', 1],
        ['rule=f-insurance,store=flaky', 1],
        ['rule=f-closed,store=flaky', 1],
      ]),
    );
    assert.deepEqual(
      histogramCounts(collected.histograms('sluice.store.latency')),
      new Map([
        ['rule=f-open,store=flaky', 2],
        ['rule=f-insurance,store=flaky', 2],
        ['rule=f-closed,store=flaky', 2],
      ]),
    );
  });

  it('counts the guard`s own outcomes with "-" for the rule and store, and no latency', async () => {
    const { meter, collect } = meterProvider();
    const events = new DecisionEvents();
    bindDecisionMetrics(events, { meter });
    for (const outcome of ['allowed-by-list', 'denied', 'skipped', 'denied'] as const) {
      events.emit({
        rule: undefined,
        outcome,
        store: undefined,
        cost: 0,
        remaining: 0,
        retryAfterMs: 0,
        storeLatencyMs: 0,
        keyHash: undefined,
      });
    }
    const collected = await collect();
    assert.equal(ABSENT_ATTRIBUTE, '-');
    assert.deepEqual(
      collected.sums('sluice.decisions'),
      new Map([
        ['outcome=allowed-by-list,rule=-,store=-', 1],
        ['outcome=denied,rule=-,store=-', 2],
        ['outcome=skipped,rule=-,store=-', 1],
      ]),
    );
    assert.deepEqual(collected.names(), ['sluice.decisions']);
  });

  it('counts a guard`s lists and skip next to its limit`s decisions, on one channel', async () => {
    const { meter, collect } = meterProvider();
    const events = new DecisionEvents();
    bindDecisionMetrics(events, { meter });
    const api = createLimiter({
      name: 'api',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store: new MemoryStore(),
      clock: manualClock(0),
      events,
    });
    interface Call {
      client: string;
      path: string;
    }
    const guard = createGuard<Call>({
      limits: api,
      key: (call) => call.client,
      address: (call) => call.client,
      deny: ['203.0.113.0/24'],
      allow: ['10.0.0.0/8'],
      skip: (call) => call.path === '/health',
      events,
    });
    const calls: Call[] = [
      { client: '203.0.113.9', path: '/a' }, // denied
      { client: '203.0.113.10', path: '/a' }, // denied
      { client: '10.1.2.3', path: '/a' }, // allowed by the list
      { client: '198.51.100.1', path: '/health' }, // skipped
      { client: '198.51.100.1', path: '/a' }, // the limit admits
    ];
    for (const call of calls) await guard.check(call, { method: 'GET', path: call.path });

    const collected = await collect();
    assert.deepEqual(
      collected.sums('sluice.decisions'),
      new Map([
        ['outcome=denied,rule=-,store=-', 2],
        ['outcome=allowed-by-list,rule=-,store=-', 1],
        ['outcome=skipped,rule=-,store=-', 1],
        ['outcome=admitted,rule=api,store=memory', 1],
      ]),
    );
    assert.deepEqual(collected.sums('sluice.units'), new Map([['rule=api,store=memory', 1]]));
    assert.deepEqual(
      histogramCounts(collected.histograms('sluice.store.latency')),
      new Map([['rule=api,store=memory', 1]]),
    );
    for (const attributes of collected.allAttributes()) {
      for (const value of Object.values(attributes)) assert.ok(!calls.some((call) => call.client === value));
    }
  });

  it('never puts a key or its pseudonym in an attribute: series are bounded by rules, stores and outcomes', async () => {
    const { meter, collect } = meterProvider();
    const hashes = new Set<string>();
    const events = new DecisionEvents({
      keyHash: (key) => {
        const hash = `pseudonym-of-${key}`;
        hashes.add(hash);
        return hash;
      },
    });
    bindDecisionMetrics(events, { meter });
    const store = new MemoryStore();
    const clock = manualClock(0);
    const wide = createLimiter({
      name: 'wide',
      rule: tokenBucket({ limit: 50, period: '1m' }),
      store,
      clock,
      events,
    });
    const narrow = createLimiter({
      name: 'narrow',
      rule: tokenBucket({ limit: 1, period: '1m' }),
      store,
      clock,
      events,
    });
    const both = createCascade([wide, narrow], { mode: 'all-or-nothing' });
    const keys = Array.from({ length: 40 }, (_, i) => `198.51.100.${i}`);
    for (const key of keys) {
      both.takeSync(key); // wide and narrow admitted
      both.takeSync(key); // narrow refuses, so nothing is charged: only the refusal is reported
    }

    const collected = await collect();
    assert.ok(hashes.size > 0, 'the channel made pseudonyms, so an attribute could have held one');
    const allowedValues = new Set<string>([
      'wide',
      'narrow',
      'memory',
      ABSENT_ATTRIBUTE,
      ...DECISION_OUTCOMES,
    ]);
    const attributeSets = collected.allAttributes();
    for (const attributes of attributeSets) {
      for (const [name, value] of Object.entries(attributes)) {
        assert.ok(['rule', 'outcome', 'store'].includes(name), `unexpected attribute ${name}`);
        assert.ok(
          typeof value === 'string' && allowedValues.has(value),
          `unexpected attribute value in ${name}`,
        );
        assert.ok(!keys.includes(value as string) && !hashes.has(value as string));
      }
    }
    assert.ok(!JSON.stringify(collected.scopes).includes('198.51.100.'));
    assert.deepEqual(
      collected.sums('sluice.decisions'),
      new Map([
        ['outcome=admitted,rule=wide,store=memory', 40],
        ['outcome=admitted,rule=narrow,store=memory', 40],
        ['outcome=refused,rule=narrow,store=memory', 40],
      ]),
    );
  });

  it('stops recording when unbound; unbinding twice is harmless', async () => {
    const { meter, collect } = meterProvider();
    const events = new DecisionEvents();
    const unbind = bindDecisionMetrics(events, { meter });
    const limiter = createLimiter({
      name: 'api',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store: new MemoryStore(),
      clock: manualClock(0),
      events,
    });
    limiter.takeSync('k');
    assert.equal(events.listening, true);
    unbind();
    unbind();
    assert.equal(events.listening, false, 'the limiter builds no event once unbound');
    limiter.takeSync('k');
    limiter.takeSync('k');
    const collected = await collect();
    assert.deepEqual(
      collected.sums('sluice.decisions'),
      new Map([['outcome=admitted,rule=api,store=memory', 1]]),
    );
    assert.deepEqual(collected.sums('sluice.units'), new Map([['rule=api,store=memory', 1]]));
    assert.deepEqual(
      histogramCounts(collected.histograms('sluice.store.latency')),
      new Map([['rule=api,store=memory', 1]]),
    );
  });

  it('names the instruments with the prefix given', async () => {
    const { meter, collect } = meterProvider();
    const events = new DecisionEvents();
    bindDecisionMetrics(events, { meter, prefix: 'shop.limits' });
    const limiter = createLimiter({
      name: 'checkout',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store: new MemoryStore(),
      events,
    });
    limiter.takeSync('k');
    const collected = await collect();
    assert.deepEqual(collected.names(), [
      'shop.limits.decisions',
      'shop.limits.store.latency',
      'shop.limits.units',
    ]);
  });

  describe('without a meter', () => {
    after(() => metrics.disable());

    it('records on the global meter provider, on the meter "sluice" of this version', async () => {
      const { provider, collect } = meterProvider();
      assert.equal(metrics.setGlobalMeterProvider(provider), true);
      const events = new DecisionEvents();
      bindDecisionMetrics(events);
      const limiter = createLimiter({
        name: 'api',
        rule: tokenBucket({ limit: 5, period: '1m' }),
        store: new MemoryStore(),
        events,
      });
      limiter.takeSync('k');
      const collected = await collect();
      assert.deepEqual(
        collected.scopes.map((scope) => [scope.scope.name, scope.scope.version]),
        [['sluice', packageVersion]],
      );
      assert.deepEqual(
        collected.sums('sluice.decisions'),
        new Map([['outcome=admitted,rule=api,store=memory', 1]]),
      );
    });
  });

  it('names the meter with the version in package.json', () => {
    assert.equal(SLUICE_VERSION, packageVersion);
  });

  it('refuses what is not a channel and bad options, with coded errors that never quote a value', () => {
    const { meter } = meterProvider();
    const events = new DecisionEvents();
    const secret = 'tenant-4711-secret';
    const bad: [unknown, unknown, string][] = [
      [null, {}, 'bindDecisionMetrics events must be'],
      [{ subscribe: secret }, {}, 'bindDecisionMetrics events must be'],
      [events, null, 'bindDecisionMetrics options must be an object'],
      [events, secret, 'bindDecisionMetrics options must be an object'],
      [events, { meter, perfix: 'x' }, 'bindDecisionMetrics has no option "perfix"'],
      [events, { meter: { createCounter: secret } }, 'bindDecisionMetrics meter must be'],
      [events, { meter: null }, 'bindDecisionMetrics meter must be'],
      [events, { meter, prefix: '' }, 'bindDecisionMetrics prefix must be'],
      [events, { meter, prefix: `9${secret}` }, 'bindDecisionMetrics prefix must be'],
      [events, { meter, prefix: `${secret} x` }, 'bindDecisionMetrics prefix must be'],
      [events, { meter, prefix: `a${'b'.repeat(241)}` }, 'bindDecisionMetrics prefix must be'],
      [events, { meter, prefix: 42 }, 'bindDecisionMetrics prefix must be'],
    ];
    for (const [channel, options, message] of bad) {
      assert.throws(
        () => bindDecisionMetrics(channel as DecisionEvents, options as object),
        (error: unknown) =>
          isSluiceError(error, 'SLUICE_CONFIG') &&
          error.message.startsWith(message) &&
          !error.message.includes(secret),
      );
    }
    assert.equal(events.listening, false, 'a refused binding subscribes nothing');
    const longest = `a${'b'.repeat(240)}`;
    bindDecisionMetrics(events, { meter, prefix: longest })();
  });
});
