/**
 * The concurrency limit's own behaviour, whatever the store: its options, how it fails when its
 * store fails (a store that fails on command: the subject is the limit, not a store), and what a
 * failed release leaves. The store behaviour itself is in the conformance suite's lease section.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { throwsCode, recordingLogger } from './assertions.js';
import { FailingStore } from '../../src/testing/failing-store.js';
import {
  MemoryStore,
  concurrencyLimit,
  createLimiter,
  isSluiceError,
  manualClock,
  tokenBucket,
  type LeaseStore,
} from '../../src/index.js';

describe('concurrencyLimit', () => {
  it('rejects bad options with SLUICE_CONFIG naming the option, never the value', () => {
    const store = new MemoryStore();
    const base = { name: 'c', max: 2, leaseTtl: '1m', store } as const;
    throwsCode(() => concurrencyLimit({ ...base, max: 0 }), 'SLUICE_CONFIG', /max/);
    throwsCode(() => concurrencyLimit({ ...base, max: 1.5 }), 'SLUICE_CONFIG', /max/);
    throwsCode(() => concurrencyLimit({ ...base, max: 100_001 }), 'SLUICE_CONFIG', /max/);
    throwsCode(
      () => concurrencyLimit({ ...base, leaseTtl: undefined as never }),
      'SLUICE_CONFIG',
      /leaseTtl/,
    );
    throwsCode(() => concurrencyLimit({ ...base, leaseTtl: '-1s' }), 'SLUICE_DURATION');
    throwsCode(() => concurrencyLimit({ ...base, name: 'a b' }), 'SLUICE_CONFIG', /name/);
    throwsCode(() => concurrencyLimit({ ...base, store: {} as LeaseStore }), 'SLUICE_CONFIG', /store/);
    throwsCode(() => concurrencyLimit({ ...base, clock: 5 as never }), 'SLUICE_CONFIG', /clock/);
    throwsCode(() => concurrencyLimit({ ...base, maxLeases: 1 } as never), 'SLUICE_CONFIG', /maxLeases/);
  });

  it('a key that is missing or not a string is refused before the store is asked', async () => {
    const store = new FailingStore();
    const limit = concurrencyLimit({ name: 'c', max: 1, leaseTtl: '1m', store });
    await assert.rejects(limit.acquire(''), (e: unknown) => isSluiceError(e, 'SLUICE_KEY_MISSING'));
    await assert.rejects(limit.acquire({} as never), (e: unknown) => isSluiceError(e, 'SLUICE_KEY_INVALID'));
    assert.equal(store.calls, 0);
  });

  it('a failing store is a coded 503, logged once a minute; a failed release may be tried again', async () => {
    const store = new FailingStore();
    const logger = recordingLogger();
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const limit = concurrencyLimit({ name: 'c', max: 1, leaseTtl: '1m', store, logger, clock });
    const { lease } = await limit.acquire('k');
    assert.ok(lease);
    store.mode = 'reject';
    await assert.rejects(
      limit.acquire('k'),
      (e: unknown) => isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE') && e.status === 503,
    );
    await assert.rejects(limit.release(lease), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_UNAVAILABLE'));
    assert.equal(logger.lines.length, 1, 'once a minute');
    store.mode = 'ok';
    assert.equal(await limit.release(lease), true, 'the failed release was tried again');
    assert.equal((await limit.acquire('k')).decision.allowed, true);
  });

  it('a hung store is answered within the timeout', async () => {
    const store = new FailingStore();
    const limit = concurrencyLimit({
      name: 'c',
      max: 1,
      leaseTtl: '1m',
      store,
      timeout: '20ms',
      logger: recordingLogger(),
    });
    store.mode = 'hang';
    await assert.rejects(limit.acquire('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT'));
  });

  it('lease ids are unique per limit and never hold the key', async () => {
    const store = new MemoryStore();
    const limit = concurrencyLimit({ name: 'c', max: 1000, leaseTtl: '1m', store });
    const other = concurrencyLimit({ name: 'd', max: 1000, leaseTtl: '1m', store });
    const ids = new Set<string>();
    for (let i = 0; i < 200; i++) {
      ids.add((await limit.acquire('user:17')).lease!.id);
      ids.add((await other.acquire('user:17')).lease!.id);
    }
    assert.equal(ids.size, 400);
    for (const id of ids) assert.doesNotMatch(id, /user|17:/);
  });

  it('the rule names of a store are shared with concurrency limits', () => {
    const store = new MemoryStore();
    createLimiter({ name: 'x', rule: tokenBucket({ limit: 1, period: '1m' }), store });
    throwsCode(() => concurrencyLimit({ name: 'x', max: 1, leaseTtl: '1m', store }), 'SLUICE_CONFIG');
  });
});
