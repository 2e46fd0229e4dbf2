import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { throwsCode } from '../limiter/assertions.js';
import {
  MemoryStore,
  calendarQuota,
  createCascade,
  createLimiter,
  isSluiceError,
  manualClock,
  parseDuration,
  parseTimerDuration,
  tokenBucket,
} from '../../src/index.js';

describe('durations', () => {
  it('reads whole numbers of ms and the units ms, s, m, h, d', () => {
    assert.equal(parseDuration('500ms', 'p'), 500);
    assert.equal(parseDuration('10s', 'p'), 10_000);
    assert.equal(parseDuration('10m', 'p'), 600_000);
    assert.equal(parseDuration('1h', 'p'), 3_600_000);
    assert.equal(parseDuration('1d', 'p'), 86_400_000);
    assert.equal(parseDuration(' 2 h ', 'p'), 7_200_000);
  });

  it('rejects a bare number, suggesting the unit to add without repeating the number', () => {
    throwsCode(
      () => parseDuration(60, 'tokenBucket period'),
      'SLUICE_DURATION',
      /^(?!.*60).*"s" for seconds.*"ms"/,
    );
    throwsCode(() => tokenBucket({ limit: 1, period: 60 as never }), 'SLUICE_DURATION', /period/);
  });

  it('rejects a timer duration of 2^31 ms or more (a timer would fire after 1 ms)', () => {
    assert.equal(parseTimerDuration('2147483647ms', 't'), 2 ** 31 - 1);
    throwsCode(() => parseTimerDuration('25d', 'timeout'), 'SLUICE_DURATION', /timeout.*at most/);
    throwsCode(
      () =>
        createLimiter({
          name: 'x',
          rule: tokenBucket({ limit: 1, period: '1s' }),
          store: new MemoryStore(),
          timeout: '25d',
        }),
      'SLUICE_DURATION',
      /timeout/,
    );
  });

  it('rejects unknown units, fractions, zero, negatives, NaN and non-strings, naming the option', () => {
    for (const bad of [
      '10x',
      '1.5h',
      '',
      'h',
      '-1s',
      '1 hour',
      '0s',
      0,
      -5,
      1.5,
      1234,
      Number.NaN,
      Infinity,
      null,
      {},
      [],
      '9007199254740993ms',
    ]) {
      throwsCode(() => parseDuration(bad, 'window'), 'SLUICE_DURATION', /window/);
    }
  });
});

describe('rules are validated at construction; there is no disabled mode', () => {
  it('rejects NaN, negative, zero and fractional limits', () => {
    for (const limit of [Number.NaN, -1, 0, 1.5, Infinity, '10' as never]) {
      throwsCode(() => tokenBucket({ limit, period: '1m' }), 'SLUICE_CONFIG', /limit/);
      throwsCode(() => calendarQuota({ limit }), 'SLUICE_CONFIG', /limit/);
    }
  });

  it('rejects a burst below 1, an unknown unit, an unknown option and an unknown time zone', () => {
    throwsCode(() => tokenBucket({ limit: 5, period: '1h', burst: 0 }), 'SLUICE_CONFIG', /burst/);
    throwsCode(() => tokenBucket({ limit: 5, period: '1h', burst: 0.5 }), 'SLUICE_CONFIG', /burst/);
    throwsCode(() => tokenBucket({ limit: 5, period: '1y' as never }), 'SLUICE_DURATION', /period/);
    throwsCode(() => tokenBucket({ limit: 5, period: '1h', burts: 3 } as never), 'SLUICE_CONFIG', /burts/);
    throwsCode(() => calendarQuota({ limit: 5, timeZone: 'Mars/Olympus' }), 'SLUICE_CONFIG', /timeZone/);
    throwsCode(() => calendarQuota({ limit: 5, timeZone: '' }), 'SLUICE_CONFIG', /timeZone/);
    throwsCode(() => tokenBucket(undefined as never), 'SLUICE_CONFIG');
  });

  it('a limiter without a rule or a store is a configuration error, not a silent pass', () => {
    const store = new MemoryStore();
    const rule = tokenBucket({ limit: 1, period: '1s' });
    throwsCode(
      () => createLimiter({ name: 'x', rule: undefined as never, store }),
      'SLUICE_CONFIG',
      /no rule/,
    );
    throwsCode(
      () => createLimiter({ name: 'x', rule, store: undefined as never }),
      'SLUICE_CONFIG',
      /no store/,
    );
    throwsCode(
      () => createLimiter({ name: 'x', rule: { limit: 5 } as never, store }),
      'SLUICE_CONFIG',
      /rule/,
    );
    throwsCode(() => createLimiter({ name: 'x', rule, store: {} as never }), 'SLUICE_CONFIG', /store/);
    throwsCode(() => createLimiter({ name: '', rule, store }), 'SLUICE_CONFIG', /name/);
    throwsCode(() => createLimiter({ name: 'user alice@example.com', rule, store }), 'SLUICE_CONFIG', /name/);
    throwsCode(() => createLimiter({ name: 'x', rule, store, clock: 5 as never }), 'SLUICE_CONFIG', /clock/);
    throwsCode(
      () => createLimiter({ name: 'x', rule, store, enabled: false } as never),
      'SLUICE_CONFIG',
      /enabled/,
    );
  });
});

describe('per-call input', () => {
  const setup = () => {
    const clock = manualClock(0);
    const limiter = createLimiter({
      name: 'c',
      rule: tokenBucket({ limit: 3, period: '1m' }),
      store: new MemoryStore(),
      clock,
    });
    return { clock, limiter };
  };

  it('a missing key is a developer error (500), a non-string key a 400, and nothing is consumed', async () => {
    const { limiter } = setup();
    for (const key of [undefined, null, ''])
      throwsCode(() => limiter.takeSync(key as never), 'SLUICE_KEY_MISSING');
    for (const key of [{}, [], 42, true])
      throwsCode(() => limiter.takeSync(key as never), 'SLUICE_KEY_INVALID');
    await assert.rejects(limiter.take(undefined as never), (e: unknown) =>
      isSluiceError(e, 'SLUICE_KEY_MISSING'),
    );
    await assert.rejects(limiter.take({ toString: () => 'k' } as never), (e: unknown) =>
      isSluiceError(e, 'SLUICE_KEY_INVALID'),
    );
    assert.equal(limiter.peekSync('k').remaining, 3);
  });

  it('rejects a negative, fractional or non-finite cost without consuming', () => {
    const { limiter } = setup();
    for (const cost of [-1, 0.5, Number.NaN, Infinity, '2' as never])
      throwsCode(() => limiter.takeSync('k', { cost }), 'SLUICE_ARGUMENT', /cost/);
    assert.equal(limiter.peekSync('k').remaining, 3);
  });

  it('per-call parameters: a count for rules counted per window, a rate, period and burst for token buckets; bad ones are named, never repeated', () => {
    const { limiter } = setup();
    const quota = createLimiter({ name: 'q', rule: calendarQuota({ limit: 3 }), store: new MemoryStore() });
    for (const limit of [0, -1, 2.5, Number.NaN])
      throwsCode(() => quota.takeSync('k', { limit }), 'SLUICE_ARGUMENT', /limit/);
    throwsCode(
      () => quota.takeSync('k', { period: '1m' }),
      'SLUICE_ARGUMENT',
      /per-call period applies to token buckets/,
    );
    throwsCode(
      () => quota.takeSync('k', { limit: 2, burst: 2 }),
      'SLUICE_ARGUMENT',
      /per-call burst applies to token buckets/,
    );
    for (const limit of [0, 2.5, 1_000_001])
      throwsCode(
        () => limiter.takeSync('k', { limit }),
        'SLUICE_ARGUMENT',
        /per-call limit must be a whole number from 1 to 1000000/,
      );
    for (const burst of [0, -3, 1e13])
      throwsCode(() => limiter.takeSync('k', { burst }), 'SLUICE_ARGUMENT', /burst must be a whole number/);
    for (const period of [1000, '5 parsecs', 'alice@example.com'])
      try {
        limiter.takeSync('k', { period: period as never });
        assert.fail('expected an error');
      } catch (e) {
        assert.ok(isSluiceError(e, 'SLUICE_ARGUMENT'));
        assert.match((e as Error).message, /per-call period must be a duration/);
        assert.doesNotMatch((e as Error).message, /alice|parsecs|1000/);
      }
    throwsCode(() => limiter.takeSync('k', { burst: 1e12, period: '1d' }), 'SLUICE_ARGUMENT', /too large/);
    assert.equal(limiter.peekSync('k').remaining, 3, 'nothing was charged');
    assert.equal(limiter.takeSync('k', { limit: 10, period: '1m' }).limit, 10);
  });

  it('a clock that returns NaN or a non-number fails the call with SLUICE_CLOCK, never a silent pass or deny', () => {
    for (const reading of [Number.NaN, Infinity, undefined, '5']) {
      const limiter = createLimiter({
        name: 'n',
        rule: tokenBucket({ limit: 1, period: '1s' }),
        store: new MemoryStore(),
        clock: () => reading as never,
      });
      throwsCode(() => limiter.takeSync('k'), 'SLUICE_CLOCK');
    }
  });

  it('error messages never repeat the key', () => {
    const { limiter } = setup();
    try {
      limiter.takeSync({ email: 'alice@example.com' } as never);
      assert.fail('expected an error');
    } catch (e) {
      assert.doesNotMatch((e as Error).message, /alice/);
    }
  });
});

describe('cascade configuration', () => {
  it('rejects empty cascades, duplicate limits, mixed stores in all-or-nothing, and wrong key counts', async () => {
    const store = new MemoryStore();
    const a = createLimiter({ name: 'a', rule: tokenBucket({ limit: 1, period: '1s' }), store });
    const b = createLimiter({
      name: 'b',
      rule: tokenBucket({ limit: 1, period: '1s' }),
      store: new MemoryStore(),
    });
    throwsCode(() => createCascade([]), 'SLUICE_CONFIG');
    throwsCode(() => createCascade([a, a]), 'SLUICE_CONFIG', /twice/);
    throwsCode(() => createCascade([a, b], { mode: 'all-or-nothing' }), 'SLUICE_CONFIG', /one store/);
    throwsCode(() => createCascade([a, b], { mode: 'some' as never }), 'SLUICE_CONFIG', /mode/);
    const cascade = createCascade([a, b]);
    throwsCode(() => cascade.takeSync(['only-one']), 'SLUICE_ARGUMENT', /keys/);
    await assert.rejects(cascade.take(['x', 'y', 'z']), (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'));
    assert.equal(a.peekSync('only-one').remaining, 1);
  });
});
