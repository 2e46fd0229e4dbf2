/**
 * A request passing the same limit twice is charged once: what each limit decided for each key
 * is remembered with the request object, whatever kind of object it is.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { earlierCharge, rememberCharge } from '../../src/http/charged-once.js';
import { makeDecision, type Decision } from '../../src/core/decision.js';

const decision = (remaining: number): Decision =>
  makeDecision({
    allowed: true,
    name: 'api',
    limit: 10,
    capacity: 10,
    remaining,
    cost: 1,
    retryAfterMs: 0,
    resetMs: 1000,
    windowMs: 0,
  });

describe('charged once per request', () => {
  it('remembers per limit and per key, and the latest decision of each', () => {
    const request = {};
    const [one, two] = [{}, {}];
    assert.equal(earlierCharge(request, one, 'k'), undefined);
    rememberCharge(request, one, 'k', decision(9));
    rememberCharge(request, two, 'k', decision(8));
    rememberCharge(request, one, 'other', decision(7));
    assert.equal((earlierCharge(request, one, 'k') as Decision).remaining, 9);
    assert.equal((earlierCharge(request, two, 'k') as Decision).remaining, 8);
    assert.equal((earlierCharge(request, one, 'other') as Decision).remaining, 7);
    rememberCharge(request, one, 'k', decision(5));
    assert.equal((earlierCharge(request, one, 'k') as Decision).remaining, 5);
    assert.equal(earlierCharge({}, one, 'k'), undefined, 'another request knows nothing');
  });

  it('leaves nothing a program would see on the request', () => {
    const request = { id: 1 };
    rememberCharge(request, {}, 'k', decision(9));
    assert.deepEqual(Object.keys(request), ['id']);
    assert.equal(JSON.stringify(request), '{"id":1}');
    assert.deepEqual(Object.getOwnPropertyNames(request), ['id']);
  });

  const seals: [string, (o: object) => void][] = [
    ['frozen', (o) => Object.freeze(o)],
    ['sealed', (o) => Object.seal(o)],
    ['non-extensible', (o) => Object.preventExtensions(o)],
  ];
  for (const [name, seal] of seals) {
    it(`remembers a ${name} request too, also one charged before it was ${name}`, () => {
      const limit = {};
      const fresh = {};
      seal(fresh);
      assert.doesNotThrow(() => rememberCharge(fresh, limit, 'k', decision(9)));
      assert.equal((earlierCharge(fresh, limit, 'k') as Decision).remaining, 9);

      const before = {};
      rememberCharge(before, limit, 'k', decision(8));
      seal(before);
      rememberCharge(before, limit, 'other', decision(7));
      rememberCharge(before, limit, 'k', decision(6));
      assert.equal((earlierCharge(before, limit, 'other') as Decision).remaining, 7);
      assert.equal((earlierCharge(before, limit, 'k') as Decision).remaining, 6);
    });
  }

  it('remembers a proxy that refuses new properties beside it', () => {
    const request = new Proxy({}, { set: () => false, defineProperty: () => false });
    const limit = {};
    assert.doesNotThrow(() => rememberCharge(request, limit, 'k', decision(9)));
    assert.equal((earlierCharge(request, limit, 'k') as Decision).remaining, 9);
  });

  it('remembers nothing for values that are not objects', () => {
    rememberCharge('request', {}, 'k', decision(9));
    assert.equal(earlierCharge('request', {}, 'k'), undefined);
    assert.equal(earlierCharge(undefined, {}, 'k'), undefined);
  });
});
