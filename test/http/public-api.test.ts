/**
 * `sluice/http` is a public entry: each name docs/http.md promises is importable from it, and the
 * guard takes exactly the header styles headers.ts names. The import goes through the same
 * mapping a user's `import … from 'sluice/http'` does: package.json "exports" to the built file,
 * scripts/entries.mjs from the built file to its source (the exports check then compares the build
 * with that source, name for name).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { MemoryStore, createLimiter, isSluiceError, manualClock, tokenBucket } from '../../src/index.js';
import type * as Http from '../../src/http/index.js';
import { exportedSources } from '../docs/doc-snippets.js';

const source = exportedSources().get('sluice/http');
const http = (source === undefined ? {} : await import(pathToFileURL(source).href)) as typeof Http;

/** The values of the entry; its types are compiled into the snippets of docs/http.md. */
const promised = [
  'EXPOSE_HEADER',
  'HEADER_STYLES',
  'admittedHeaders',
  'createGuard',
  'errorResponse',
  'isPreflight',
  'limitedResponse',
  'mergeExposed',
  'needsFinishing',
  'needsSettling',
  'pathOf',
  'problemCodes',
  'rateLimitHeaders',
];

// Every type an adapter's signature uses, named here so that the type check fails if one goes.
export type PublicTypes = [
  Http.RateLimitOptions<unknown>,
  Http.KeySpec,
  Http.KeyResult,
  Http.ErrorReportDetails,
  Http.RequestFacts,
  Http.GuardOutcome,
  Http.Guard<unknown>,
  Http.HttpResponse,
  Http.LimitedResponseOptions,
  Http.ProblemOptions,
  Http.HeaderStyle,
  Http.HeaderValues,
];

/** A limiter of `limit` per minute on its own store and a clock that never moves. */
const limiterOf = (name: string, limit: number) =>
  createLimiter({
    name,
    rule: tokenBucket({ limit, period: '1m' }),
    store: new MemoryStore(),
    clock: manualClock(0),
  });

describe('sluice/http', () => {
  it('is an exported subpath whose entry exports exactly the promised values', () => {
    assert.ok(source?.endsWith('src/http/index.ts'), `sluice/http maps to ${source}`);
    assert.deepEqual(Object.keys(http).sort(), [...promised].sort());
  });

  it('the guard accepts every header style of headers.ts and names them all when refusing another', async () => {
    const limits = limiterOf('styles', 5);
    assert.ok(http.HEADER_STYLES.length > 0);
    for (const headers of http.HEADER_STYLES) {
      const guard = http.createGuard<object>({ limits, key: () => 'k', headers });
      const outcome = await guard.check({}, { method: 'POST', path: '/' });
      assert.equal(outcome.action, 'continue', headers);
    }
    assert.throws(
      () => http.createGuard<object>({ limits, key: () => 'k', headers: 'ietf' as Http.HeaderStyle }),
      (error: unknown) =>
        isSluiceError(error, 'SLUICE_CONFIG') &&
        http.HEADER_STYLES.every((style) => (error as Error).message.includes(`"${style}"`)),
    );
  });

  it('limitedResponse and admittedHeaders take every style of headers.ts', async () => {
    const limits = limiterOf('one', 1);
    const admitted = await limits.take('k');
    const refused = await limits.take('k');
    for (const style of http.HEADER_STYLES) {
      assert.equal(http.limitedResponse(refused, { headers: style }).status, 429, style);
      assert.equal(typeof http.admittedHeaders(admitted, style), 'object', style);
    }
  });
});
