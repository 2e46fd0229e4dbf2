import { cpSync } from 'node:fs';
import { defineConfig } from 'tsup';

import { entries } from './scripts/entries.mjs';

export { entries };

export default defineConfig({
  entry: entries,
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // Keep `node:` in imports: `node:test` (sluice/testing) exists under no other name, and
  // tsup's default of stripping the prefix turns it into a package called `test`.
  removeNodeProtocol: false,
  splitting: true,
  treeshake: true,
  // The dashboard's page is bundled by esbuild at build time (scripts/build-dashboard.ts); a
  // built server never loads esbuild, which is a development dependency.
  external: ['esbuild'],
  // The server finds the .proto files of Envoy's rate limit service beside its bundle
  // (import.meta.url; shimmed in the CommonJS build).
  shims: true,
  onSuccess: async () => {
    cpSync('src/server/envoy/protos', 'dist/protos', { recursive: true });
  },
});
