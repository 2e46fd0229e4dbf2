import { cpSync } from 'node:fs';
import { defineConfig } from 'tsup';

// One entry per public subpath; keep in step with package.json "exports" (scripts/check-exports.mjs checks).
export const entries = {
  index: 'src/index.ts',
  redis: 'src/stores/redis/index.ts',
  postgres: 'src/stores/postgres/index.ts',
  http: 'src/http/index.ts',
  testing: 'src/testing/index.ts',
  express: 'src/adapters/express.ts',
  fastify: 'src/adapters/fastify.ts',
  hono: 'src/adapters/hono.ts',
  node: 'src/adapters/node.ts',
  koa: 'src/adapters/koa.ts',
  fetch: 'src/adapters/fetch.ts',
  nestjs: 'src/adapters/nestjs.ts',
  client: 'src/client/index.ts',
  otel: 'src/otel/index.ts',
  // The `sluice` executable (package.json "bin"), not an import path.
  sluice: 'src/server/bin.ts',
};

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
