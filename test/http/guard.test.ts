import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createGuard } from '../../src/http/guard.js';
import { MemoryStore, createLimiter, isSluiceError, manualClock, tokenBucket } from '../../src/index.js';

const facts = { method: 'POST', path: '/api/x' };

describe('guard options', () => {
  it('D1: cacheControl applies to the 429 and must keep no-store', async () => {
    const limits = createLimiter({
      name: 'g',
      rule: tokenBucket({ limit: 1, period: '1h' }),
      store: new MemoryStore(),
      clock: manualClock(0),
    });
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
