/**
 * The pictures in docs/algorithms.md are drawn from the real rules by scripts/algorithm-pictures.ts.
 * Drawing them again must give the committed files byte for byte: a change to a rule that changes
 * what it admits changes its picture, and this test fails until the pictures are redrawn
 * (`node --import tsx scripts/algorithm-pictures.ts`). The facts the guide states about them are
 * checked here too.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

import { anchoredWindow, fixedWindow, slidingWindow, tokenBucket } from '../../src/index.js';
import { admit, algorithmPictures, traffic, trailing } from '../../scripts/algorithm-pictures.js';

describe('algorithm pictures', () => {
  it('the committed pictures are the ones the rules draw today', () => {
    for (const [name, svg] of algorithmPictures()) {
      const committed = readFileSync(new URL(`../../docs/images/${name}`, import.meta.url), 'utf8');
      assert.equal(
        svg,
        committed,
        `docs/images/${name} is stale: run node --import tsx scripts/algorithm-pictures.ts`,
      );
    }
  });

  it('shows what the guide says: a fixed window admits twice its limit around a boundary, a sliding window does not', () => {
    const peak = (counts: number[]) => Math.max(...counts);
    const times = traffic();
    assert.equal(peak(trailing(admit(fixedWindow({ limit: 10, window: '1m' }), times))), 20);
    assert.ok(peak(trailing(admit(slidingWindow({ limit: 10, window: '1m' }), times))) < 20);
    // A token bucket lets its burst through, then its rate: more than the limit in a minute too.
    assert.ok(peak(trailing(admit(tokenBucket({ limit: 10, period: '1m' }), times))) > 10);
    // An anchored window's boundary is the client's: the burst meets the window its steady
    // requests started, spent until 1:05.
    const anchored = admit(anchoredWindow({ limit: 10, window: '1m' }), times);
    assert.ok(anchored.filter((o) => o.at >= 575 && o.at < 625).every((o) => !o.allowed));
    assert.ok(peak(trailing(anchored)) < 20);
  });
});
