/**
 * The `sluice` command in a clone of the repository: `npm ci` links it (the package depends on
 * itself, `"sluice": "file:."`, so npm puts its bin in node_modules/.bin), and it runs the
 * TypeScript sources, so `npx sluice …` works before any build.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { root } from './cli-support.js';

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const dir = mkdtempSync(join(tmpdir(), 'sluice-bin-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the sluice command in a clone', () => {
  it('is the bin file, shipped in the package, and linked by npm ci through the self-dependency', () => {
    assert.equal(pkg.bin.sluice, './bin/sluice.js');
    assert.ok(pkg.files.includes('bin'));
    assert.equal(pkg.devDependencies.sluice, 'file:.');
    assert.deepEqual(lock.packages['node_modules/sluice'], { resolved: '', link: true });
    assert.equal(lock.packages[''].bin.sluice, 'bin/sluice.js');
  });

  it('runs from the sources, without a build', async () => {
    const { stdout } = await run(
      process.execPath,
      [join(root, 'bin/sluice.js'), 'check', 'sluice.example.yaml'],
      {
        cwd: root,
        timeout: 30_000,
      },
    );
    assert.equal(JSON.parse(stdout).version, 1);
  });

  it('npm links a self-dependency bin into node_modules/.bin, and it runs from there', async () => {
    // The package's name, bin and self-dependency, with its bin folder: what npm ci reads.
    const { name, bin, devDependencies } = pkg;
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name, version: '0.0.0', bin, devDependencies: { sluice: devDependencies.sluice } }),
    );
    symlinkSync(join(root, 'bin'), join(dir, 'bin'));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: dir,
      stdio: 'ignore',
      timeout: 60_000,
    });
    const { stdout } = await run(join(dir, 'node_modules/.bin/sluice'), ['--help'], {
      cwd: root,
      timeout: 30_000,
    });
    assert.match(stdout, /^Usage: sluice /);
  });
});
