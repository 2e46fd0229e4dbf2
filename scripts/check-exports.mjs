#!/usr/bin/env node
// After `npm run build`: every subpath in package.json "exports" resolves, for import and for
// require, to built files with types; both forms export the same names, and those are the names
// of the source entry tsup.config.ts builds the subpath from (so a name a test imports from the
// source is there for users too); then publint. Run under tsx, which reads the sources.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { basename, join } from 'node:path';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { entries } from './entries.mjs';
import { nodeImportsOf } from './node-free.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const require = createRequire(join(root, 'package.json'));
let failures = 0;
const fail = (message) => {
  failures++;
  console.error(`x ${message}`);
};

for (const [subpath, target] of Object.entries(pkg.exports)) {
  if (subpath === './package.json') continue;
  const specifier = subpath === '.' ? pkg.name : `${pkg.name}${subpath.slice(1)}`;
  for (const condition of ['import', 'require']) {
    for (const field of ['types', 'default']) {
      const file = target[condition]?.[field];
      if (file === undefined) fail(`${specifier}: no ${condition}.${field}`);
      else if (!existsSync(join(root, file)))
        fail(`${specifier}: ${condition}.${field} ${file} is not built`);
    }
  }
  try {
    const esm = Object.keys(await import(specifier))
      .filter((k) => k !== 'default')
      .sort();
    const cjs = Object.keys(require(specifier))
      .filter((k) => k !== 'default' && k !== '__esModule')
      .sort();
    if (esm.length === 0) fail(`${specifier}: exports nothing`);
    const entry = entries[basename(target.import?.default ?? '', '.js')];
    const source =
      entry === undefined
        ? undefined
        : Object.keys(await import(pathToFileURL(join(root, entry)).href))
            .filter((k) => k !== 'default')
            .sort();
    if (esm.join() !== cjs.join()) fail(`${specifier}: ESM exports [${esm}] differ from CommonJS [${cjs}]`);
    else if (source === undefined) fail(`${specifier}: no tsup entry builds ${target.import?.default}`);
    else if (source.join() !== esm.join())
      fail(`${specifier}: built exports [${esm}] differ from its source ${entry} [${source}]`);
    else console.log(`ok ${specifier}: ${esm.length} exports (ESM and CommonJS, as in ${entry})`);
  } catch (error) {
    fail(`${specifier}: ${error.message}`);
  }
}

// The other direction: every entry the build makes (but the executable) is a subpath users can import.
for (const key of Object.keys(entries)) {
  if (key === 'sluice') continue;
  const subpath = key === 'index' ? '.' : `./${key}`;
  if (pkg.exports[subpath] === undefined)
    fail(`entry ${key} (${entries[key]}) has no package.json export ${subpath}`);
}

// The server loads the .proto files of Envoy's rate limit service from beside its bundle.
for (const proto of [
  'envoy/service/ratelimit/v3/rls.proto',
  'envoy/extensions/common/ratelimit/v3/ratelimit.proto',
  'envoy/type/v3/ratelimit_unit.proto',
  'envoy/config/core/v3/base.proto',
  'grpc/health/v1/health.proto',
])
  if (!existsSync(join(root, 'dist', 'protos', proto))) fail(`dist/protos/${proto} is not built`);
if (!pkg.files.includes('dist')) fail('package.json "files" leaves dist (and its protos) out');

// The dashboard's page, bundled beside the server by npm run build (the built server never bundles).
for (const asset of ['index.html', 'app.js', 'app.css'])
  if (!existsSync(join(root, 'dist', 'dashboard-page', asset)))
    fail(`dist/dashboard-page/${asset} is not built`);

// Entries for Bun, Deno and Workers: their ESM loads no node: module, and the runtime conditions
// (which pick that ESM build for require too, so a program holds one copy of sluice) name built files.
for (const subpath of ['.', './fetch', './http', './client']) {
  const target = pkg.exports[subpath];
  for (const condition of ['bun', 'deno', 'workerd', 'worker']) {
    const file = target[condition]?.default;
    if (file !== undefined && !existsSync(join(root, file)))
      fail(`${subpath}: ${condition} ${file} is not built`);
  }
  const loaded = nodeImportsOf(join(root, target.import.default));
  if (loaded.length > 0) fail(`${subpath} loads node: modules:\n  ${loaded.join('\n  ')}`);
  else console.log(`ok ${subpath}: its ESM loads no node: module`);
}

const { messages } = await publint({ pkgDir: root, strict: true });
for (const message of messages) {
  const text = formatMessage(message, pkg);
  if (message.type === 'error' || message.type === 'warning') fail(`publint: ${text}`);
  else console.log(`publint note: ${text}`);
}
if (failures > 0) {
  console.error(`${failures} export problem(s)`);
  process.exit(1);
}
console.log('exports check passed');
