/**
 * The rule registry says of each kind what its factory does: the options it accepts, the ones it
 * needs, its defaults; and its example makes a rule of that kind.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ruleEntries, ruleKinds, ruleRegistry } from '../../src/core/rules/index.js';

/** The options a factory accepts, as its error for an unknown one lists them. */
function acceptedKeys(create: (options: object) => unknown): string[] {
  try {
    create({ unknownOption: 1 });
  } catch (error) {
    const known = /known options: (.*)$/.exec((error as Error).message);
    if (known !== null) return known[1]!.split(', ');
  }
  assert.fail('the factory accepted an unknown option');
}

describe('the rule registry', () => {
  it('lists each kind once, under its own kind', () => {
    assert.deepEqual(ruleKinds, [
      'token-bucket',
      'fixed-window',
      'sliding-window',
      'calendar-quota',
      'anchored-window',
    ]);
    for (const [kind, entry] of Object.entries(ruleRegistry)) assert.equal(entry.kind, kind);
    assert.equal(new Set(ruleEntries.map((e) => e.name)).size, ruleEntries.length);
  });

  it("its example makes a rule of its kind, named by the factory's errors", () => {
    for (const entry of ruleEntries) {
      assert.equal(entry.create(entry.example).kind, entry.kind);
      assert.throws(
        () => entry.create({ ...entry.example, limit: -1 }),
        new RegExp(`: ${entry.name} limit `),
      );
    }
  });

  it('names exactly the options the factory accepts, and only those as required', () => {
    for (const entry of ruleEntries) {
      assert.deepEqual([...entry.optionKeys].sort(), acceptedKeys((o) => entry.create(o)).sort(), entry.kind);
      for (const key of entry.required) {
        assert.ok(entry.optionKeys.includes(key), `${entry.kind} ${key}`);
        const without: Record<string, unknown> = { ...entry.example };
        delete without[key];
        assert.throws(() => entry.create(without), new RegExp(`${entry.name} ${key}`));
      }
    }
  });

  it('writes out the defaults: a burst of the limit, a day per quota, nothing for the windows', () => {
    assert.deepEqual(ruleRegistry['token-bucket'].withDefaults({ limit: 5, period: '1h' }), {
      limit: 5,
      period: '1h',
      burst: 5,
    });
    assert.deepEqual(
      ruleRegistry['token-bucket'].withDefaults({ limit: 5, period: '1h', burst: 2 }).burst,
      2,
    );
    assert.deepEqual(ruleRegistry['calendar-quota'].withDefaults({ limit: 5 }), { limit: 5, per: 'day' });
    const window = { limit: 5, window: '1m' } as const;
    assert.deepEqual(ruleRegistry['fixed-window'].withDefaults(window), window);
    assert.deepEqual(ruleRegistry['sliding-window'].withDefaults(window), window);
    assert.deepEqual(ruleRegistry['anchored-window'].withDefaults(window), window);
  });
});
