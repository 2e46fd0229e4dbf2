#!/usr/bin/env node
// Runs every *.test.ts under test/ and examples/ with node's own test runner (TypeScript via tsx).
// Node 20's runner does not expand globs, so the files are collected here.
// Usage: npm test [-- <path filter> ...]   e.g. npm test -- conformance
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const roots = ['test', 'examples'];

function collect(dir, out) {
  let names;
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

const filters = process.argv.slice(2);
const files = roots
  .flatMap((r) => collect(join(root, r), []))
  .filter((f) => filters.length === 0 || filters.some((needle) => f.includes(needle)))
  .sort();

if (files.length === 0) {
  console.error(`no test files matched ${filters.join(' ') || '(all)'}`);
  process.exit(1);
}

const args = [
  '--import',
  'tsx',
  '--test',
  `--test-concurrency=${process.env.SLUICE_TEST_CONCURRENCY ?? 2}`,
  // A bound on a file that hangs, not a speed target: the docs' snippet file runs every snippet of
  // the guides in its own process and takes about two minutes on a busy 2-core machine.
  '--test-timeout=300000',
  ...files,
];
const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
