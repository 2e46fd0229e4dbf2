import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createGuard } from '../../src/http/guard.js';
import { MemoryStore, createLimiter, isSluiceError, manualClock, tokenBucket } from '../../src/index.js';

const facts = { method: 'POST', path: '/api/x' };

/** A limit of `limit` takes an hour on a fresh memory store, on a clock that stands still. */
const hourly = (name: string, limit: number) =>
  createLimiter({
    name,
    rule: tokenBucket({ limit, period: '1h' }),
    store: new MemoryStore(),
    clock: manualClock(0),
  });

describe('guard options', () => {
  it('cacheControl applies to the 429 and must keep no-store', async () => {
    const limits = hourly('g', 1);
    const guard = createGuard<unknown>({ limits, key: () => 'k', cacheControl: 'private, no-store' });
    assert.equal((await guard.check({}, facts)).action, 'continue');
    const refused = await guard.check({}, facts);
    assert.equal(refused.action, 'respond');
    if (refused.action === 'respond')
      assert.equal(refused.response.headers['Cache-Control'], 'private, no-store');
    for (const bad of ['private', 'max-age=60', 5]) {
      assert.throws(
        () => createGuard<unknown>({ limits, key: () => 'k', cacheControl: bad as string }),
        (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && /cacheControl/.test((e as Error).message),
      );
    }
  });
});

describe('guard options are checked at setup with SLUICE_CONFIG naming the option', () => {
  const limits = hourly('opts', 1);
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['methods given as a string', { methods: 'POST' }, /rateLimit methods/],
    ['an empty methods list', { methods: [] }, /rateLimit methods/],
    ['a method that is not a name', { methods: ['PO ST'] }, /rateLimit methods/],
    ['exclude given as a string', { exclude: 'POST /x' }, /rateLimit exclude/],
    ['a wildcard inside an exclude path', { exclude: ['GET /he*lth'] }, /rateLimit exclude/],
    ['a wildcard that is not a whole last segment', { exclude: ['GET /health*'] }, /rateLimit exclude/],
    ['a non-ASCII exclude path', { exclude: ['GET /café'] }, /rateLimit exclude/],
    ['chargePreflight that is not a boolean', { chargePreflight: 'yes' }, /rateLimit chargePreflight must/],
    ['a problem that is not an object', { problem: 'slow down' }, /rateLimit problem/],
    ['an unknown problem option', { problem: { titel: 'x' } }, /titel/],
    ['a problem title that is not text', { problem: { title: 5 } }, /rateLimit problem\.title/],
    ['a problem detail with a line break', { problem: { detail: 'a\nb' } }, /rateLimit problem\.detail/],
    ['a problem type with a space', { problem: { type: 'not a uri' } }, /rateLimit problem\.type/],
    ['a cacheControl with CR LF', { cacheControl: 'no-store\r\nX-Injected: 1' }, /rateLimit cacheControl/],
    ['a cascade without limiters', { limits: { mode: 'first-refusal', limiters: [] } }, /rateLimit limits/],
  ];
  for (const [what, extra, message] of cases) {
    it(`rejects ${what}`, () => {
      assert.throws(
        () => createGuard<unknown>({ limits, key: () => 'k', ...extra } as never),
        (e: unknown) => isSluiceError(e, 'SLUICE_CONFIG') && message.test((e as Error).message),
      );
    });
  }

  it('accepts prefix routes, problem wording and chargePreflight', () => {
    createGuard<unknown>({
      limits,
      key: () => 'k',
      exclude: ['GET /health/*', 'GET /*', 'POST /api/messages'],
      chargePreflight: true,
      problem: {
        type: 'https://catalog.example/problems/write-rate-limit',
        title: 'Slow down',
        detail: 'Wait.',
      },
    });
  });
});

describe('guard: check never rejects', () => {
  it('a key function that throws, facts that are not strings and a throwing onError still give a 500', async () => {
    const limits = hourly('never', 1);
    const guard = createGuard<unknown>({
      limits,
      key: () => {
        throw new Error('bug in the key step');
      },
      exclude: ['GET /health'],
      onError: () => {
        throw new Error('logger down');
      },
    });
    const outcome = await guard.check({}, { method: 42, path: undefined } as never);
    assert.equal(outcome.action, 'respond');
    if (outcome.action === 'respond') assert.equal(outcome.response.status, 500);
    assert.doesNotThrow(() => guard.report(new Error('after the fact')));
  });
});

describe('guard: the expose list follows the Origin header', () => {
  it('an admitted request lists what it exposes unless the adapter tells it had no Origin; a refusal always does', async () => {
    const limits = hourly('cors', 3);
    const guard = createGuard<unknown>({ limits, key: () => 'k' });
    const exposed = (outcome: Awaited<ReturnType<typeof guard.check>>) =>
      (outcome.action === 'continue' ? outcome.headers : outcome.response.headers)[
        'Access-Control-Expose-Headers'
      ];
    const list = 'Retry-After, RateLimit, RateLimit-Policy';
    assert.equal(exposed(await guard.check({}, facts)), list, 'an adapter that does not tell');
    assert.equal(exposed(await guard.check({}, { ...facts, hasOrigin: true })), list);
    const direct = await guard.check({}, { ...facts, hasOrigin: false });
    assert.equal(direct.action, 'continue');
    assert.equal(exposed(direct), undefined);
    const refused = await guard.check({}, { ...facts, hasOrigin: false });
    assert.equal(refused.action, 'respond');
    assert.equal(exposed(refused), list);
  });
});
