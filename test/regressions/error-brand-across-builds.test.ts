/**
 * Issue 18: one application can load sluice twice, once as CommonJS (`require`) and once as ESM
 * (`import`), e.g. through two dependencies. Each build defines its own SluiceError class, so a
 * plain `instanceof` would fail across them; the registered brand makes `isSluiceError` and
 * `instanceof` agree both ways. The library is built here (tsup, both formats) into a temporary
 * directory, and checked in a child process that loads both builds.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { bundle } from '../support/bundle.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

// Runs as CommonJS: `require` loads the CJS build, `import()` the ESM one.
const check = `
const cjs = require('./index.cjs');
import('./index.js').then((esm) => {
  const fromCjs = new cjs.SluiceError('SLUICE_CONFIG', 'cjs');
  const fromEsm = new esm.SluiceError('SLUICE_ARGUMENT', 'esm');
  let refused;
  try { cjs.tokenBucket({ limit: 0, period: '1s' }); } catch (e) { refused = e; }
  process.stdout.write(JSON.stringify({
    distinctClasses: cjs.SluiceError !== esm.SluiceError,
    esmIsCjs: fromEsm instanceof cjs.SluiceError && cjs.isSluiceError(fromEsm, 'SLUICE_ARGUMENT'),
    cjsIsEsm: fromCjs instanceof esm.SluiceError && esm.isSluiceError(fromCjs, 'SLUICE_CONFIG'),
    thrownByCjs: refused instanceof esm.SluiceError && esm.isSluiceError(refused, 'SLUICE_CONFIG'),
    plainErrorIsNot: !(new Error('x') instanceof cjs.SluiceError) && !esm.isSluiceError(new Error('x')),
  }));
});
`;

describe('issue 18: SluiceError across the CommonJS and ESM builds', () => {
  it('isSluiceError and instanceof recognise errors from the other build, both ways', async () => {
    const outDir = await mkdtemp(join(tmpdir(), 'sluice-brand-'));
    try {
      await bundle({ index: join(root, 'src/index.ts') }, outDir, { format: ['esm', 'cjs'] });
      // The temporary directory has no package.json: .cjs and .js (ESM) need their own markers.
      await writeFile(join(outDir, 'package.json'), '{"type":"module"}');
      await writeFile(join(outDir, 'check.cjs'), check);
      const { stdout } = await promisify(execFile)(process.execPath, [join(outDir, 'check.cjs')], {
        cwd: outDir,
        timeout: 30_000,
      });
      assert.deepEqual(JSON.parse(stdout), {
        distinctClasses: true,
        esmIsCjs: true,
        cjsIsEsm: true,
        thrownByCjs: true,
        plainErrorIsNot: true,
      });
    } finally {
      await rm(outDir, { recursive: true, force: true });
    }
  });
});
