import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SpaceSaving } from '../../../src/server/shared/space-saving.js';

describe('Space-Saving summary', () => {
  it('bounds every estimate by the true count, holds every id above total/capacity, keeps capacity entries', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 400 }),
        (capacity, stream) => {
          const summary = new SpaceSaving(capacity);
          const truth = new Map<string, number>();
          for (const n of stream) {
            const id = `id${n}`;
            summary.offer(id);
            truth.set(id, (truth.get(id) ?? 0) + 1);
          }
          const top = summary.top();
          assert.ok(top.length <= capacity);
          assert.equal(summary.total, stream.length);
          assert.equal(
            top.reduce((sum, h) => sum + h.count, 0),
            stream.length,
          );
          for (const h of top) {
            const real = truth.get(h.id) ?? 0;
            assert.ok(h.count >= real, `${h.id}: ${h.count} < ${real}`);
            assert.ok(h.count - h.error <= real, `${h.id}: ${h.count} - ${h.error} > ${real}`);
          }
          const held = new Set(top.map((h) => h.id));
          for (const [id, count] of truth)
            if (count > stream.length / capacity) assert.ok(held.has(id), `${id} (${count}) missing`);
          for (let i = 1; i < top.length; i++) assert.ok(top[i - 1]!.count >= top[i]!.count);
        },
      ),
    );
  });

  it('weighted, as Envoy counts hits: every id above total/capacity held, no estimate below the truth', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 5 })), {
          maxLength: 400,
        }),
        (stream) => {
          const summary = new SpaceSaving(8);
          const truth = new Map<string, number>();
          for (const [n, weight] of stream) {
            summary.offer(String(n), weight);
            truth.set(String(n), (truth.get(String(n)) ?? 0) + weight);
          }
          const top = summary.top();
          assert.ok(top.length <= 8);
          for (const h of top) assert.ok(h.count >= truth.get(h.id)!);
          const held = new Set(top.map((h) => h.id));
          for (const [id, count] of truth) if (count > summary.total / 8) assert.ok(held.has(id), id);
        },
      ),
    );
  });

  it('counts exactly while the ids fit, heaviest first', () => {
    const summary = new SpaceSaving(4);
    for (const id of ['a', 'b', 'a', 'c', 'a', 'b']) summary.offer(id);
    assert.deepEqual(summary.top(2), [
      { id: 'a', count: 3, error: 0 },
      { id: 'b', count: 2, error: 0 },
    ]);
  });

  it('refuses a capacity that is not a whole number of at least 1', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) assert.throws(() => new SpaceSaving(bad), RangeError);
  });
});
