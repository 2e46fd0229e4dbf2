import { normalizePath } from '../../http/path.js';

/**
 * A `paths` pattern of a policy compiled once, tested against paths already in the one spelling
 * of `normalizePath`: `*` stands for any run of characters inside one segment (never a `/`), and
 * a final `/**` for the path itself and everything below it.
 *
 * Matching never backtracks: a `*` cannot cross a `/`, so the pattern's segments and the path's
 * pair up one to one, and inside a segment the literal parts between stars are placed leftmost,
 * which is the classic exact method for star-only globs. The work is linear in the path's length
 * (times the pattern's own, fixed length); a regular expression such as `[^/]*-[^/]*-[^/]*` took
 * cubic time on a long segment of `-`, and the whole server waited for it.
 */
export interface PathPattern {
  /** True when the (normalized) path matches. */
  test(path: string): boolean;
}

/**
 * Character comparisons made by every pattern so far: the tests read it to show that the work
 * grows linearly with a path's length (counted, never timed).
 */
export const matchSteps = { count: 0 };

/**
 * Compiles a pattern as written in a policy (`/exports/*.csv`, `/api/**`).
 *
 * @example
 * pathPattern('/rooms/*\/messages').test('/rooms/42/messages') // true
 */
export function pathPattern(pattern: string): PathPattern {
  const below = pattern.endsWith('/**');
  const base = normalizePath(below ? pattern.slice(0, -3) || '/' : pattern);
  // Every path is below the root.
  if (below && base === '/') return { test: (path) => path.charCodeAt(0) === 0x2f };
  // Without a star, a pattern is one text: the path is it (or, with `/**`, starts with it and a `/`).
  if (!base.includes('*')) return below ? literalBelow(base) : literal(base);
  // The segments after the leading `/`, each as its literal parts around the stars.
  const segments = base
    .slice(1)
    .split('/')
    .map((segment) => segment.split('*'));
  return { test: (path) => matches(segments, below, path) };
}

function literal(text: string): PathPattern {
  return {
    test(path) {
      matchSteps.count += Math.min(path.length, text.length) + 1;
      return path === text;
    },
  };
}

function literalBelow(text: string): PathPattern {
  const withSlash = `${text}/`;
  return {
    test(path) {
      matchSteps.count += Math.min(path.length, withSlash.length) + 1;
      return path === text || path.startsWith(withSlash);
    },
  };
}

/** The path against the pattern's segments, one path segment for each, left to right. */
function matches(segments: readonly (readonly string[])[], below: boolean, path: string): boolean {
  if (path.charCodeAt(0) !== 0x2f) return false;
  let start = 1;
  let steps = 0;
  let result = true;
  for (let i = 0; i < segments.length; i++) {
    let end = path.indexOf('/', start);
    if (end === -1) end = path.length;
    // Finding the slash looked at every character of the segment once.
    steps += end - start + 1;
    const last = i === segments.length - 1;
    // The path has fewer segments than the pattern, or (without `/**`) more.
    if ((end === path.length && !last) || (last && !below && end !== path.length)) {
      result = false;
      break;
    }
    const segment = segmentMatches(segments[i]!, path, start, end);
    steps += segment.steps;
    if (!segment.matched) {
      result = false;
      break;
    }
    start = end + 1;
  }
  matchSteps.count += steps;
  return result;
}

/** Reused for every segment: the answer and the comparisons it took, without an allocation. */
const outcome = { matched: false, steps: 0 };

/**
 * One segment (`path` from `start` to `end`, no `/` inside) against its parts: the first part
 * at the start, the last at the end, the ones between at their leftmost places in order. The
 * native comparisons are counted at their most: a literal's length for each place tried.
 */
function segmentMatches(parts: readonly string[], path: string, start: number, end: number) {
  outcome.matched = false;
  const first = parts[0]!;
  outcome.steps = first.length;
  if (parts.length === 1) {
    outcome.matched = end - start === first.length && path.startsWith(first, start);
    return outcome;
  }
  const lastPart = parts[parts.length - 1]!;
  outcome.steps += lastPart.length;
  // The first and last parts must both fit, without overlapping.
  if (end - start < first.length + lastPart.length) return outcome;
  if (!path.startsWith(first, start) || !path.startsWith(lastPart, end - lastPart.length)) return outcome;
  let at = start + first.length;
  const limit = end - lastPart.length;
  for (let p = 1; p < parts.length - 1; p++) {
    const part = parts[p]!;
    const found = path.indexOf(part, at);
    // Every place from `at` to where it was found (or to the end of the path) was tried.
    outcome.steps += ((found === -1 ? path.length : found) - at + 1) * Math.max(part.length, 1);
    if (found === -1 || found + part.length > limit) return outcome;
    at = found + part.length;
  }
  outcome.matched = true;
  return outcome;
}
