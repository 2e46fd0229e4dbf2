/**
 * docs/architecture.md's "Where a change goes" names, for a new rule, a new store and a new
 * adapter, every file such a change touches ("The files: …", with `<kind>`, `<store>` and
 * `<framework>` standing for the new name). This test holds those lists to the tree: each file a
 * list names exists for every rule kind in the registry, every store folder and every adapter
 * folder there is; and no file of src/ outside a rule's own places names a rule kind, so a list
 * that leaves a file out fails here rather than in the next contributor's hands.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ruleKinds } from '../../src/core/rules/index.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const guide = readFileSync(join(root, 'docs/architecture.md'), 'utf8');

/** The backquoted paths of the "The files:" paragraph under `heading`. */
function filesOf(heading: string): string[] {
  const start = guide.indexOf(`### ${heading}\n`);
  assert.ok(start >= 0, `docs/architecture.md has a section "${heading}"`);
  const next = guide.indexOf('\n### ', start + 1);
  const section = guide.slice(start, next < 0 ? undefined : next);
  const paragraph = /\nThe files: ([^]*?)\n\n/.exec(`${section}\n\n`);
  assert.ok(paragraph, `"${heading}" lists its files in a paragraph starting "The files:"`);
  return [...paragraph[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

/** The folders directly inside `folder`, but `except`. */
function foldersIn(folder: string, except: readonly string[]): string[] {
  return readdirSync(join(root, folder)).filter(
    (name) => !except.includes(name) && statSync(join(root, folder, name)).isDirectory(),
  );
}

function filesUnder(folder: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, folder))) {
    const path = join(folder, name);
    if (statSync(join(root, path)).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

const text = (path: string): string => readFileSync(join(root, path), 'utf8');

describe('docs/architecture.md: where a change goes, checked against the tree', () => {
  it('every file a new rule touches exists for every rule kind in the registry', () => {
    const files = filesOf('A new rule');
    assert.ok(files.some((f) => f.includes('<kind>')));
    const missing = ruleKinds.flatMap((kind) =>
      files.map((f) => f.replaceAll('<kind>', kind)).filter((f) => !existsSync(join(root, f))),
    );
    assert.deepEqual(missing, []);
  });

  it('the registry lists exactly the kinds that have a core file, a Redis module and a PostgreSQL module', () => {
    const kindFiles = (folder: string): string[] =>
      readdirSync(join(root, folder))
        .filter((name) => name.endsWith('.ts'))
        .map((name) => name.slice(0, -3))
        .filter((name) => (ruleKinds as string[]).includes(name));
    for (const folder of ['src/core/rules', 'src/stores/redis/algorithms', 'src/stores/postgres/algorithms'])
      assert.deepEqual(kindFiles(folder).sort(), [...ruleKinds].sort(), folder);
  });

  it('no file of src/ names a rule kind but the rule, its store modules and the conformance cases', () => {
    // Envoy's own `sluice.algorithm` setting names the two algorithms an Envoy descriptor may
    // use: a vocabulary of its own, narrower than the registry, read by the Envoy config.
    const envoySetting = ['src/server/envoy/config.ts', 'src/server/policy/file-types.ts'];
    const allowed = (path: string): boolean =>
      path.startsWith('src/core/rules/') ||
      /^src\/stores\/[^/]+\/algorithms\//.test(path) ||
      path.startsWith('src/testing/store-conformance/') ||
      envoySetting.includes(path);
    const naming = filesUnder('src')
      .filter((path) => path.endsWith('.ts') && !allowed(path))
      .filter((path) =>
        ruleKinds.some((kind) => text(path).includes(`'${kind}'`) || text(path).includes(`"${kind}"`)),
      )
      .map((path) => relative('.', path));
    assert.deepEqual(naming, []);
  });

  it('every file a new store touches exists for every store folder, and each runs the store conformance suite', () => {
    const files = filesOf('A new store');
    const stores = foldersIn('src/stores', ['contract', 'shared']);
    assert.deepEqual(stores.sort(), ['memory', 'postgres', 'redis']);
    const missing = stores.flatMap((store) =>
      files
        .filter((f) => f.startsWith('src/'))
        .map((f) => f.replaceAll('<store>', store))
        .filter((f) => !existsSync(join(root, f))),
    );
    assert.deepEqual(missing, []);
    assert.ok(files.includes('test/stores/'), 'the list names the folder of the conformance run');
    const runs = [...filesUnder('test/stores'), ...filesUnder('test/support')].filter((path) =>
      text(path).includes('storeConformance('),
    );
    for (const store of stores)
      assert.ok(
        runs.some((path) => path.includes(store)),
        `a test of ${store} runs storeConformance (${runs.join(', ')})`,
      );
  });

  it('every file a new adapter touches exists for every adapter folder, names it, and runs the HTTP conformance suite', () => {
    const files = filesOf('A new adapter');
    const entries = text('scripts/entries.mjs');
    const exportsOf = Object.keys(JSON.parse(text('package.json')).exports as object);
    for (const framework of foldersIn('src/adapters', ['shared'])) {
      for (const file of files) {
        const path = file.replaceAll('<framework>', framework);
        assert.ok(existsSync(join(root, path)), `${path} exists`);
      }
      assert.ok(
        entries.includes(`'src/adapters/${framework}/index.ts'`),
        `scripts/entries.mjs lists ${framework}`,
      );
      assert.ok(exportsOf.includes(`./${framework}`), `package.json exports ./${framework}`);
      assert.match(text(`test/adapters/${framework}.test.ts`), /httpConformance\(/);
    }
  });
});
