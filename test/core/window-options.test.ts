/**
 * Options of the new rules: every mistake is a SLUICE_CONFIG that names the option and what it
 * expects, and never repeats the value it was given (options are often built from data).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ENVOY_UNIT_WINDOWS,
  MAX_COUNT,
  calendarQuota,
  fixedWindow,
  isSluiceError,
  slidingWindow,
} from '../../src/index.js';

/** Asserts SLUICE_CONFIG naming `option`, without the text of `secret` in the message. */
function rejects(make: () => unknown, option: string, secret?: string): void {
  assert.throws(make, (e: unknown) => {
    assert.ok(isSluiceError(e, 'SLUICE_CONFIG'), `SLUICE_CONFIG, got ${String(e)}`);
    assert.ok(e.message.includes(option), `"${e.message}" names ${option}`);
    if (secret !== undefined) assert.ok(!e.message.includes(secret), `"${e.message}" repeats the value`);
    return true;
  });
}

describe('fixedWindow and slidingWindow options', () => {
  for (const [owner, make] of [
    ['fixedWindow', fixedWindow],
    ['slidingWindow', slidingWindow],
  ] as const) {
    it(`${owner}: limit, window and penalty are checked, unknown keys rejected`, () => {
      const ok = make({ limit: 5, window: '1m' });
      assert.equal(ok.windowMs, 60_000);
      assert.equal(ok.penalty, false);
      assert.equal(make({ limit: MAX_COUNT, window: '366d' }).windowMs, 366 * 86_400_000);
      assert.equal(make({ limit: 1, window: '1ms' }).windowMs, 1);
      for (const limit of [0, -1, 1.5, MAX_COUNT + 1, Number.NaN, '5' as never])
        rejects(() => make({ limit, window: '1m' }), `${owner} limit`);
      rejects(() => make({ limit: 5, window: '367d' }), `${owner} window`, '367d');
      rejects(() => make({ limit: 5, window: '0ms' }), `${owner} window`, '0ms');
      rejects(() => make({ limit: 5, window: '93417secretms' as never }), `${owner} window`, '93417secret');
      rejects(() => make({ limit: 5, window: 60 as never }), `${owner} window`, '60');
      rejects(() => make({ limit: 5, window: undefined as never }), `${owner} window`);
      rejects(() => make({ limit: 5, window: '1m', penalty: 'yes' as never }), `${owner} penalty`, 'yes');
      rejects(() => make({ limit: 5, window: '1m', burst: 3 } as never), 'burst');
      rejects(() => make(null as never), owner);
    });
  }

  it('ENVOY_UNIT_WINDOWS are valid windows of envoyproxy/ratelimit units', () => {
    const lengths = Object.values(ENVOY_UNIT_WINDOWS).map(
      (window) => fixedWindow({ limit: 1, window }).windowMs,
    );
    assert.deepEqual(
      lengths,
      [1, 60, 3600, 86_400, 604_800, 2_592_000, 31_536_000].map((s) => s * 1000),
    );
  });

  it('the rules say what stores look them up by', () => {
    assert.deepEqual(
      [fixedWindow({ limit: 1, window: '1s' }), slidingWindow({ limit: 1, window: '1s' })].map((r) => [
        r.kind,
        r.shape,
        r.acceptsCallLimit,
        r.capacityFor(7),
        r.limitFor(undefined),
      ]),
      [
        ['fixed-window', 'window-count', true, 7, 1],
        ['sliding-window', 'sliding-count', true, 7, 1],
      ],
    );
  });
});

describe('calendarQuota options', () => {
  it('per and weekStart', () => {
    assert.equal(calendarQuota({ limit: 1 }).per, 'day');
    assert.equal(calendarQuota({ limit: 1, per: 'week' }).weekStart, 1);
    assert.equal(calendarQuota({ limit: 1, per: 'week', weekStart: 7 }).weekStart, 7);
    rejects(() => calendarQuota({ limit: 1, per: 'fortnight' as never }), 'calendarQuota per', 'fortnight');
    rejects(() => calendarQuota({ limit: 1, per: 'week', weekStart: 0 as never }), 'calendarQuota weekStart');
    rejects(() => calendarQuota({ limit: 1, per: 'week', weekStart: 8 as never }), 'calendarQuota weekStart');
    rejects(
      () => calendarQuota({ limit: 1, per: 'week', weekStart: 1.5 as never }),
      'calendarQuota weekStart',
    );
    rejects(() => calendarQuota({ limit: 1, weekStart: 1 }), 'calendarQuota weekStart');
    rejects(() => calendarQuota({ limit: 1, per: 'month', weekStart: 7 }), 'calendarQuota weekStart');
    rejects(() => calendarQuota({ limit: 1, timeZone: 'Secret/Zone' }), 'calendarQuota timeZone', 'Secret');
    rejects(() => calendarQuota({ limit: 1, perr: 'week' } as never), 'perr');
  });
});
