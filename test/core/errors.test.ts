import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { errorCodes, SluiceError, isSluiceError, type SluiceErrorCode } from '../../src/index.js';

// ARCHITECTURE convention 4: one registry, documented; this test keeps docs and code in step.
const docs = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const documented = new Map(
  [...docs.matchAll(/^\| `(SLUICE_[A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1] as string, Number(m[2])]),
);

describe('error registry', () => {
  it('documents every code with its status', () => {
    for (const [code, { status }] of Object.entries(errorCodes)) {
      assert.equal(documented.get(code), status, `${code} must be in docs/errors.md with status ${status}`);
    }
  });

  it('documents no code that does not exist', () => {
    for (const code of documented.keys())
      assert.ok(code in errorCodes, `docs/errors.md lists unknown ${code}`);
  });

  it('gives each error its code and status', () => {
    for (const code of Object.keys(errorCodes) as SluiceErrorCode[]) {
      const error = new SluiceError(code, 'x');
      assert.equal(error.code, code);
      assert.equal(error.status, errorCodes[code].status);
      assert.ok(isSluiceError(error, code));
      assert.ok(error instanceof Error);
    }
    assert.equal(isSluiceError(new Error('x')), false);
  });
});
