/** Helpers shared by the limiter and core tests: coded-error assertions and a recording logger. */
import assert from 'node:assert/strict';
import { isSluiceError, type SluiceErrorCode } from '../../src/index.js';

/** Asserts that `fn` throws a SluiceError with `code`, whose message matches `mentions` if given. */
export function throwsCode(fn: () => unknown, code: SluiceErrorCode, mentions?: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isSluiceError(e, code), `expected ${code}, got ${String(e)}`);
    if (mentions !== undefined) assert.match((e as Error).message, mentions);
    return true;
  });
}

/** A logger that keeps every line it is given. */
export function recordingLogger() {
  const lines: { details: Record<string, unknown>; message: string }[] = [];
  return {
    lines,
    warn: (details: Record<string, unknown>, message: string) => lines.push({ details, message }),
  };
}
