/** Rate-limit header values and the expose list, exactly. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decisiveOf, exposedHeaders, rateLimitHeaders, secondsUp } from '../../src/http/headers.js';
import { decision, failOpen } from './decisions.js';
import type { Decision } from '../../src/core/decision.js';

const admitted = decision('burst', { allowed: true, limit: 10, remaining: 7, resetMs: 18_000 });
const daily = decision('daily', {
  allowed: true,
  limit: 1000,
  remaining: 3,
  resetMs: 3_600_500,
  windowMs: 86_400_000,
});
const refused = decision('daily', {
  allowed: false,
  limit: 1000,
  remaining: 0,
  retryAfterMs: 3_600_000,
  resetMs: 3_600_000,
  windowMs: 86_400_000,
});

describe('rateLimitHeaders', () => {
  it('"none" writes no rate-limit header', () => {
    assert.deepEqual(rateLimitHeaders([admitted, refused], 'none'), {});
  });

  it('"legacy" describes the decisive limit; Reset is seconds until full, rounded up', () => {
    assert.deepEqual(rateLimitHeaders(admitted, 'legacy'), {
      'X-RateLimit-Limit': '10',
      'X-RateLimit-Remaining': '7',
      'X-RateLimit-Reset': '18',
    });
    // Of two admitting limits, the one with the fewest units left speaks.
    assert.deepEqual(rateLimitHeaders([admitted, daily], 'legacy'), {
      'X-RateLimit-Limit': '1000',
      'X-RateLimit-Remaining': '3',
      'X-RateLimit-Reset': '3601',
    });
    assert.equal(rateLimitHeaders([admitted, refused], 'legacy')['X-RateLimit-Remaining'], '0');
  });

  it('"draft" writes one RateLimit-Policy and RateLimit member per limit, with w only when the window is known', () => {
    assert.deepEqual(rateLimitHeaders([admitted, daily], 'draft'), {
      'RateLimit-Policy': '"burst";q=10;w=60, "daily";q=1000;w=86400',
      RateLimit: '"burst";r=7;t=18, "daily";r=3;t=3601',
    });
    const noWindow = decision('x', { allowed: true, limit: 5, remaining: 4, resetMs: 1, windowMs: 0 });
    assert.deepEqual(rateLimitHeaders(noWindow, 'draft'), {
      'RateLimit-Policy': '"x";q=5',
      RateLimit: '"x";r=4;t=1',
    });
  });

  it('fail-open decisions (no bucket decided) give no headers in any style, and never speak for others', () => {
    for (const style of ['none', 'legacy', 'draft'] as const) {
      assert.deepEqual(rateLimitHeaders(failOpen('comfort'), style), {}, style);
    }
    assert.deepEqual(rateLimitHeaders([failOpen('comfort'), admitted], 'draft'), {
      'RateLimit-Policy': '"burst";q=10;w=60',
      RateLimit: '"burst";r=7;t=18',
    });
    assert.equal(decisiveOf([failOpen('comfort'), admitted]), admitted);
    assert.equal(decisiveOf([failOpen('comfort')]), undefined);
  });

  it('the first refusal is decisive, whatever comes after', () => {
    const later = decision('z', { allowed: false, limit: 1, remaining: 0, retryAfterMs: 5, resetMs: 5 });
    assert.equal(decisiveOf([admitted, refused, later]), refused);
  });
});

describe('exposedHeaders', () => {
  it('lists Retry-After and the headers of the style, then extra names', () => {
    assert.equal(exposedHeaders('none'), 'Retry-After');
    assert.equal(
      exposedHeaders('legacy'),
      'Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset',
    );
    assert.equal(exposedHeaders('draft'), 'Retry-After, RateLimit, RateLimit-Policy');
    assert.equal(exposedHeaders('draft', []), 'Retry-After, RateLimit, RateLimit-Policy');
    assert.equal(exposedHeaders('none', ['X-Auth-Mode']), 'Retry-After, X-Auth-Mode');
  });
});

describe('secondsUp', () => {
  it('rounds up to whole seconds; nothing left is 0', () => {
    assert.deepEqual([-5, 0, 1, 999, 1000, 1001, 59_999.5].map(secondsUp), [0, 0, 1, 1, 1, 2, 60]);
  });
});

describe('rateLimitHeaders never throws', () => {
  const beyond = {
    ...decision('huge', { allowed: true, limit: 10, remaining: 0, resetMs: 0 }),
    limit: 1e16,
    remaining: 1e16 - 1,
    resetMs: Infinity,
    windowMs: 1e30,
  };

  it('numbers beyond 15 digits (or infinite) are written as the largest header integer', () => {
    assert.deepEqual(rateLimitHeaders(beyond, 'draft'), {
      'RateLimit-Policy': '"huge";q=999999999999999;w=999999999999999',
      RateLimit: '"huge";r=999999999999999;t=999999999999999',
    });
    assert.deepEqual(rateLimitHeaders(beyond, 'legacy'), {
      'X-RateLimit-Limit': '999999999999999',
      'X-RateLimit-Remaining': '999999999999999',
      'X-RateLimit-Reset': '999999999999999',
    });
  });

  it('negative, fractional and NaN numbers become whole numbers from 0', () => {
    const odd = { ...beyond, limit: 2.5, remaining: NaN, resetMs: -5, windowMs: 60_000 };
    assert.deepEqual(rateLimitHeaders(odd, 'draft'), {
      'RateLimit-Policy': '"huge";q=2;w=60',
      RateLimit: '"huge";r=0;t=0',
    });
  });

  it('a name a structured-field string cannot hold drops its member, not the response', () => {
    const named = { ...admitted, name: 'caf\u00e9' };
    assert.deepEqual(rateLimitHeaders(named, 'draft'), {});
    assert.deepEqual(Object.keys(rateLimitHeaders([named, daily], 'draft')), [
      'RateLimit-Policy',
      'RateLimit',
    ]);
  });
});

describe('rateLimitHeaders reuses the strings of the last limit it wrote', () => {
  // The writer keeps the last name and policy member it built; whatever the order of decisions,
  // every response must read as if written from scratch.
  const names = ['api', 'login', 'a"b', 'caf\u00e9', ''];
  const fromScratch = (list: readonly Decision[]) => {
    const written = list.filter((d) => d.name !== 'caf\u00e9');
    if (written.length === 0) return {};
    const field = (name: string) => `"${name.replaceAll('"', '\\"')}"`;
    return {
      'RateLimit-Policy': written
        .map(
          (d) => `${field(d.name)};q=${d.limit}${d.windowMs > 0 ? `;w=${Math.ceil(d.windowMs / 1000)}` : ''}`,
        )
        .join(', '),
      RateLimit: written
        .map((d) => `${field(d.name)};r=${d.remaining};t=${Math.ceil(d.resetMs / 1000)}`)
        .join(', '),
    };
  };
  const decisionArb = fc
    .record({
      name: fc.constantFrom(...names),
      limit: fc.constantFrom(1, 10, 1000),
      remaining: fc.nat(10),
      resetMs: fc.integer({ min: 1, max: 90_000 }),
      windowMs: fc.constantFrom(0, 1000, 60_000),
    })
    .map(({ name, ...fields }) => decision(name, { allowed: true, ...fields }));

  it('gives the same headers as a writer without memory, over any sequence of responses', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(decisionArb, { minLength: 1, maxLength: 3 }), { maxLength: 30 }),
        (responses) => {
          for (const list of responses) assert.deepEqual(rateLimitHeaders(list, 'draft'), fromScratch(list));
        },
      ),
    );
  });
});
