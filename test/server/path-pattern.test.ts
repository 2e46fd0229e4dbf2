/**
 * Path patterns of a policy: the same answers as the regular expressions they replaced, on random
 * small patterns and paths, and work that grows linearly with a path's length, counted in
 * character comparisons (never timed).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { normalizePath } from '../../src/http/path.js';
import { matchSteps, pathPattern } from '../../src/server/policy/path-pattern.js';

/** The former matcher, kept here as the reference for what a pattern means. */
function regexPattern(pattern: string): RegExp {
  const below = pattern.endsWith('/**');
  const base = normalizePath(below ? pattern.slice(0, -3) || '/' : pattern);
  const body = base
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*');
  if (!below) return new RegExp(`^${body}$`);
  return base === '/' ? /^\// : new RegExp(`^${body}(?:/.*)?$`);
}

/** Steps taken by one test of `path` against `pattern`. */
function stepsOf(pattern: string, path: string): number {
  const compiled = pathPattern(pattern);
  const before = matchSteps.count;
  compiled.test(path);
  return matchSteps.count - before;
}

describe('policy path patterns', () => {
  it('answer as the regular expressions they replaced, on random patterns and paths', () => {
    // A small alphabet makes near misses common: stars, slashes, dots and dashes everywhere.
    const pattern = fc
      .tuple(fc.array(fc.constantFrom('a', 'b', '-', '.', '*', '/', '**'), { maxLength: 8 }), fc.boolean())
      .map(([parts, below]) => `/${parts.join('')}${below ? '/**' : ''}`);
    const path = fc.array(fc.constantFrom('a', 'b', '-', '.', '/', '//'), { maxLength: 12 });
    fc.assert(
      fc.property(pattern, path, fc.boolean(), (p, parts, normal) => {
        const written = `/${parts.join('')}`;
        // Both normalized paths (what the rules see) and raw ones (any string at all).
        const target = normal ? normalizePath(written) : written;
        assert.equal(pathPattern(p).test(target), regexPattern(p).test(target), `${p} on ${target}`);
      }),
      { numRuns: 5000 },
    );
  });

  it('work linearly in the path, where the regular expression backtracked', () => {
    const pattern = '/exports/*-*-*.csv';
    // The worst case for the old expression: a long segment of `-` that never ends in `.csv`.
    const at = (length: number) => stepsOf(pattern, `/exports/${'-'.repeat(length)}`);
    const small = at(1024);
    const large = at(8192);
    // The pattern's own length bounds the comparisons per character of the path.
    assert.ok(large <= pattern.length * 8192, `${large} steps for 8192 characters`);
    // Eight times the path, at most eight times the work (plus the pattern's constant).
    assert.ok(large <= 8 * small + pattern.length, `${small} then ${large}`);
    assert.ok(small > 0);
    for (const path of [`/exports/${'-'.repeat(8192)}.csv`, `/exports/a${'-'.repeat(8192)}b.csv`]) {
      const steps = stepsOf(pattern, path);
      assert.ok(steps <= pattern.length * path.length, `${steps} steps`);
      assert.equal(pathPattern(pattern).test(path), true);
    }
  });

  it('work linearly in the path for many stars and many segments too', () => {
    const pattern = '/*/*ab*ab*ab*/**';
    const path = (n: number) => `/x/${'a'.repeat(n)}${'/b'.repeat(n)}`;
    const steps = [512, 1024, 2048, 4096, 8192].map((n) => stepsOf(pattern, path(n)));
    for (let i = 0; i < steps.length; i++)
      assert.ok(steps[i]! <= pattern.length * path(512 * 2 ** i).length, `${steps[i]} steps`);
    // This path makes the matcher look far (no `ab` anywhere): doubling it at most doubles that.
    assert.ok(steps[0]! >= 512, `${steps[0]} steps`);
    for (let i = 1; i < steps.length; i++)
      assert.ok(steps[i]! <= 2 * steps[i - 1]! + pattern.length, `${steps}`);
    assert.equal(pathPattern(pattern).test(path(8)), false);
    assert.equal(pathPattern(pattern).test('/x/ab-ab-ab/c/d'), true);
  });
});
