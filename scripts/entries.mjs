// The public entries, kept here once: the build (tsup.config.ts) makes one bundle per entry, the
// API reference (typedoc.config.mjs) documents every library entry, and the exports check
// (scripts/check-exports.mjs) holds package.json "exports" to this list in both directions.
// A key is the built file's name (dist/<key>.js) and the package subpath (`sluice/<key>`; the
// main entry `index` is `sluice` itself).

/** Library entries: importable subpaths of the package. */
export const libraryEntries = {
  index: 'src/index.ts',
  redis: 'src/stores/redis/index.ts',
  postgres: 'src/stores/postgres/index.ts',
  http: 'src/http/index.ts',
  testing: 'src/testing/index.ts',
  express: 'src/adapters/express/index.ts',
  fastify: 'src/adapters/fastify/index.ts',
  hono: 'src/adapters/hono/index.ts',
  node: 'src/adapters/node/index.ts',
  koa: 'src/adapters/koa/index.ts',
  fetch: 'src/adapters/fetch/index.ts',
  nestjs: 'src/adapters/nestjs/index.ts',
  client: 'src/client/index.ts',
  otel: 'src/otel/index.ts',
};

/** Every bundle the build makes: the library entries and the `sluice` executable (package.json "bin"). */
export const entries = { ...libraryEntries, sluice: 'src/server/bin.ts' };
