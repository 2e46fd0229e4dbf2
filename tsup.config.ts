import { defineConfig } from 'tsup';

// One entry per public subpath; keep in step with package.json "exports" (scripts/check-exports.mjs checks).
export const entries = {
  index: 'src/index.ts',
  client: 'src/client/index.ts',
  node: 'src/adapters/node.ts',
};

export default defineConfig({
  entry: entries,
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  splitting: true,
  treeshake: true,
});
