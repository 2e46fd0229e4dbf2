/**
 * Snapshots from the server's own counters: rates between ticks, totals, the refusal ratio, the
 * heaviest refused id, and store latency quantiles from the histogram's buckets.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Dashboard } from '../../../src/server/dashboard/dashboard.js';
import { SnapshotMaker, limitText } from '../../../src/server/dashboard/snapshot.js';
import { compilePolicy } from '../../../src/server/policy/compile.js';
import { loadPolicyText } from '../../../src/server/policy/load.js';
import { ServerMetrics } from '../../../src/server/serve/metrics.js';
import type { ServedPolicy } from '../../../src/server/serve/server.js';
import type { LimitModel } from '../../../src/server/policy/model.js';
import { MemoryStore } from '../../../src/stores/memory/store.js';
import { loginPolicy } from '../policy-support.js';

function setUp() {
  const dashboard = new Dashboard();
  const metrics = new ServerMetrics(dashboard.tap);
  const compiled = compilePolicy(loadPolicyText(loginPolicy()), {
    store: new MemoryStore(),
    clock: () => 0,
    events: (rule) => metrics.channel(rule),
  });
  const served: ServedPolicy = {
    compiled,
    authorize: () => undefined,
    storeType: 'memory',
    ready: async () => true,
  };
  const maker = new SnapshotMaker({
    registry: metrics.registry,
    offenders: dashboard.offenders,
    current: () => served,
    lastReload: () => metrics.lastReloadResult,
  });
  return { metrics, compiled, maker, dashboard };
}

describe('dashboard snapshots', () => {
  it('a limit in a few words, whatever its kind says its limit is counted per', () => {
    const text = (limit: object) => limitText({ name: 'l', ...limit } as LimitModel);
    assert.equal(text({ algorithm: 'token-bucket', limit: 10, period: '10m' }), '10 per 10m, token-bucket');
    assert.equal(
      text({ algorithm: 'token-bucket', limit: 1, period: '1s', burst: 10 }),
      '1 per 1s, burst 10, token-bucket',
    );
    assert.equal(text({ algorithm: 'fixed-window', limit: 5, window: '1h' }), '5 per 1h, fixed-window');
    assert.equal(text({ algorithm: 'sliding-window', limit: 5, window: '30s' }), '5 per 30s, sliding-window');
    assert.equal(
      text({ algorithm: 'calendar-quota', limit: 30, per: 'month' }),
      '30 per month, calendar-quota',
    );
    assert.equal(text({ algorithm: 'calendar-quota', limit: 30 }), '30 per day, calendar-quota');
  });

  it('rates from the tick before, totals since the start, the refusal ratio and the top offender', async () => {
    const { compiled, maker, dashboard } = setUp();
    const first = await maker.make(1000);
    assert.deepEqual(first.snapshot.perSecond, {}, 'no rate without a tick before');
    const login = compiled.rule('login')!.limiters[0]!;
    for (let i = 0; i < 11; i++) await login.take('k:one');
    await login.take('k:two');
    const { snapshot, point } = await maker.make(3000);
    const rule = snapshot.rules[0]!;
    assert.deepEqual(rule.total, { admitted: 11, refused: 1 });
    assert.deepEqual(rule.perSecond, { admitted: 5.5, refused: 0.5 });
    assert.deepEqual(point.rules.login, { admitted: 5.5, refused: 0.5 });
    assert.equal(rule.refusalRatio, 1 / 12);
    // The policy's model writes the default burst out.
    assert.equal(rule.limits[0]!.text, '10 per 10m, burst 10, token-bucket');
    assert.equal(rule.limits[0]!.refused.length, 1);
    assert.equal(rule.limits[0]!.refused[0]!.id, dashboard.ids('k:one'));
    assert.deepEqual(
      snapshot.recent.map((r) => [r.rule, r.outcome, r.id]),
      [['login', 'refused', dashboard.ids('k:one')]],
    );
    compiled.close();
  });

  it('store latency p50 and p99 over the last ticks, within the histogram buckets that hold them', async () => {
    const { metrics, maker, compiled } = setUp();
    const channel = metrics.channel('login');
    const observe = (ms: number) =>
      channel.emit({
        rule: 'login',
        outcome: 'admitted',
        store: 'memory',
        cost: 1,
        remaining: 1,
        retryAfterMs: 0,
        storeLatencyMs: ms,
        keyHash: undefined,
      });
    assert.equal((await maker.make(0)).snapshot.latency.p50Ms, null);
    for (let i = 0; i < 90; i++) observe(0.3);
    for (let i = 0; i < 10; i++) observe(30);
    const { latency } = (await maker.make(1000)).snapshot;
    assert.equal(latency.samples, 100);
    assert.ok(latency.p50Ms! > 0.25 && latency.p50Ms! <= 0.5, `p50 ${latency.p50Ms}`);
    assert.ok(latency.p99Ms! > 25 && latency.p99Ms! <= 50, `p99 ${latency.p99Ms}`);
    compiled.close();
  });
});
