/**
 * The memory store's leases stay bounded like its buckets (two generations of N keys), and a key
 * pushed out of the maps while holding leases comes back holding them until they expire: a flood
 * of new keys cannot free one's own slots.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, concurrencyLimit, manualClock } from '../../src/index.js';

describe('MemoryStore leases', () => {
  it('a flood of keys keeps at most 2N keys and frees no slot of a key pushed out', () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = new MemoryStore({ maxKeysPerGeneration: 16 });
    const group = store.bindLeases('exports', 2, 60_000);
    assert.equal(group.acquireSync('victim', 'a', clock()).acquired, true);
    clock.advance('10s');
    assert.equal(group.acquireSync('victim', 'b', clock()).acquired, true);
    for (let i = 0; i < 200; i++) group.acquireSync(`flood-${i}`, `f${i}`, clock());
    assert.ok(group.size <= 32);
    assert.equal(group.heldCount('victim', clock()), 0, 'the victim left the maps');
    const refused = group.acquireSync('victim', 'c', clock());
    assert.equal(refused.acquired, false, 'both leases still count');
    assert.equal(refused.retryAfterMs, 60_000, 'until the later of the two, conservatively');
    assert.equal(group.releaseSync('victim', 'a', clock()), false, 'their ids are gone');
    clock.advance('60s');
    assert.equal(group.acquireSync('victim', 'd', clock()).acquired, true, 'they expire');
  });

  it('keys that left the maps without leases come back empty', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = new MemoryStore({ maxKeysPerGeneration: 8 });
    const limit = concurrencyLimit({ name: 'exports', max: 1, leaseTtl: '1m', store, clock });
    const { lease } = await limit.acquire('a');
    await limit.release(lease!);
    for (let i = 0; i < 100; i++) {
      const answer = await limit.acquire(`k${i}`);
      await limit.release(answer.lease!);
    }
    assert.equal((await limit.acquire('a')).decision.allowed, true);
  });

  it('holds at most 2N keys per group', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = new MemoryStore({ maxKeysPerGeneration: 32 });
    const group = store.bindLeases('g', 1, 60_000);
    for (let i = 0; i < 1000; i++) group.acquireSync(`k${i}`, `id${i}`, clock());
    assert.ok(group.size <= 64);
    assert.equal(group.heldCount('k999', clock()), 1);
  });

  it('a flood whose leases are over leaves nothing behind: a later key holding one lease does not bring the flood back', () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const store = new MemoryStore({ maxKeysPerGeneration: 100 });
    const group = store.bindLeases('exports', 2, 1_000);
    // A flood holding two leases a key, folded into the summary as it leaves the maps.
    for (let i = 0; i < 5_000; i++) {
      group.acquireSync(`flood-${i}`, `a${i}`, clock());
      group.acquireSync(`flood-${i}`, `b${i}`, clock());
    }
    clock.advance('2s');
    // Every one of those leases is over. Later keys hold one lease each and leave the maps too,
    // folding into the same cells with a later expiry.
    for (let i = 0; i < 5_000; i++) group.acquireSync(`later-${i}`, `c${i}`, clock());
    clock.advance('500ms');
    // Fewer new keys than a generation holds, so none of them is folded while they are counted:
    // what they meet in the summary is the later keys' one lease, and a lease of their own fits.
    let refused = 0;
    for (let i = 0; i < 50; i++) if (!group.acquireSync(`new-${i}`, `d${i}`, clock()).acquired) refused++;
    assert.equal(refused, 0);
  });
});
