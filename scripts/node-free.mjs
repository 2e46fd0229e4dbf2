// The `node:` modules a built ESM file loads, itself or through the chunks it imports, found by
// reading the files: the entries Bun, Deno and Workers applications import must load none, so
// that they run where only Web-standard APIs are (a Worker without nodejs_compat).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const staticImport = /(?:^|[;\n])\s*(?:import|export)\s*(?:[^'"]*?\s*from\s*)?["']([^"']+)["']/g;

/** `node:` specifiers reachable from `file` through relative static imports, as `chunk -> node:x`. */
export function nodeImportsOf(file, seen = new Set()) {
  if (seen.has(file)) return [];
  seen.add(file);
  const found = [];
  for (const [, specifier] of readFileSync(file, 'utf8').matchAll(staticImport)) {
    if (specifier.startsWith('node:')) found.push(`${file} -> ${specifier}`);
    else if (specifier.startsWith('.')) found.push(...nodeImportsOf(join(dirname(file), specifier), seen));
  }
  return found;
}
