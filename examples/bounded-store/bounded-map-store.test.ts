/**
 * The example store passes the store conformance suite of `sluice/testing`, the suite the
 * memory, Redis and PostgreSQL stores pass; then its bound, exactly.
 */
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createLimiter,
  fixedWindow,
  isSluiceError,
  manualClock,
  tokenBucket,
  type Rule,
} from '../../src/index.js';
import { storeConformance } from '../../src/testing/index.js';
import { shownInDocs } from '../shared/shown-in-docs.js';
import { BoundedMapStore } from './bounded-map-store.js';

storeConformance({ name: 'bounded map', create: async () => new BoundedMapStore({ maxKeys: 10_000 }) });

describe('BoundedMapStore: at most maxKeys buckets per rule, none forgotten while in use', () => {
  const overloaded = (error: unknown) => isSluiceError(error, 'SLUICE_STORE_OVERLOADED');

  function setup(rule: Rule, maxKeys = 2) {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const limiter = createLimiter({ name: 'api', rule, store: new BoundedMapStore({ maxKeys }), clock });
    return { clock, limiter };
  }

  it('a new key beyond the bound is SLUICE_STORE_OVERLOADED while the others are in use, and charges nothing', async () => {
    const { limiter } = setup(tokenBucket({ limit: 2, period: '1m' }));
    assert.equal((await limiter.take('a')).remaining, 1);
    assert.equal((await limiter.take('b')).remaining, 1);
    await assert.rejects(limiter.take('c'), overloaded);
    assert.equal((await limiter.take('a')).remaining, 0, 'the buckets held keep their counts');
    assert.equal((await limiter.take('b')).remaining, 0);
    assert.equal((await limiter.peek('c')).remaining, 2, 'a peek needs no room and reports a full bucket');
  });

  it('a bucket that is full again is forgotten to make room, exactly when its horizon passes', async () => {
    const { clock, limiter } = setup(tokenBucket({ limit: 2, period: '1m' }));
    await limiter.take('a');
    clock.advance(10_000);
    await limiter.take('b');
    clock.advance(19_999);
    await assert.rejects(limiter.take('c'), overloaded, "a's token comes back 30 s after it was taken");
    clock.advance(1);
    assert.equal((await limiter.take('c')).remaining, 1);
    assert.equal((await limiter.take('b')).remaining, 0, 'b was still in use and kept its count');
    assert.equal((await limiter.peek('a')).remaining, 2, 'a was full, so forgetting it changed nothing');
  });

  it('a refusal without penalty takes no room, and reset frees a bucket', async () => {
    const { limiter } = setup(fixedWindow({ limit: 1, window: '1h' }), 1);
    await limiter.take('a');
    assert.equal((await limiter.take('a', { cost: 1 })).allowed, false);
    await assert.rejects(limiter.take('b'), overloaded);
    await limiter.reset('a');
    assert.equal((await limiter.take('b')).allowed, true);
  });

  it('an all-or-nothing take that needs more room than there is charges nothing', async () => {
    const now = Date.UTC(2026, 0, 1);
    const store = new BoundedMapStore({ maxKeys: 1 });
    const rule = tokenBucket({ limit: 5, period: '1m' });
    const buckets = store.bind('api', rule);
    await assert.rejects(
      store.takeAll(
        [
          { buckets, key: 'a', cost: 1, limit: undefined },
          { buckets, key: 'b', cost: 1, limit: undefined },
        ],
        now,
      ),
      overloaded,
    );
    assert.equal((await buckets.take('a', 0, now, undefined)).remaining, 5, 'a was not charged');
  });

  it('maxKeys is checked at construction, and the message does not repeat the value', () => {
    for (const maxKeys of [0, 1.5, -1, '10', undefined]) {
      assert.throws(
        () => new BoundedMapStore({ maxKeys: maxKeys as number }),
        (error: unknown) =>
          isSluiceError(error, 'SLUICE_CONFIG') &&
          /maxKeys/.test((error as Error).message) &&
          !(error as Error).message.includes(String(maxKeys)),
      );
    }
  });
});

it('docs/stores.md shows bounded-map-store.ts as it is', () => {
  const guide = readFileSync(new URL('../../docs/stores.md', import.meta.url), 'utf8');
  assert.ok(
    guide.includes(shownInDocs(new URL('./bounded-map-store.ts', import.meta.url))),
    'copy the file into the guide again',
  );
});
