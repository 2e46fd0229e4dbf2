import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EXPOSE_HEADER, mergeExposed } from '../../src/http/merge-exposed.js';

const ours = 'Retry-After, RateLimit, RateLimit-Policy';

describe('mergeExposed', () => {
  it('is ours when nothing was exposed before', () => {
    for (const nothing of [undefined, null, '']) assert.equal(mergeExposed(nothing, ours), ours);
  });

  it("adds ours after a CORS layer's list, keeping its spelling", () => {
    assert.equal(mergeExposed('X-Request-Id', ours), `X-Request-Id, ${ours}`);
    assert.equal(mergeExposed(['X-A', 'X-B'], 'Retry-After'), 'X-A, X-B, Retry-After');
  });

  it('repeats no name already listed, whatever its case (a second pass of the same limit)', () => {
    assert.equal(mergeExposed(ours, ours), ours);
    assert.equal(
      mergeExposed('retry-after,x-request-id', ours),
      'retry-after,x-request-id, RateLimit, RateLimit-Policy',
    );
  });

  it('names the header it is for', () => {
    assert.equal(EXPOSE_HEADER, 'Access-Control-Expose-Headers');
  });
});
