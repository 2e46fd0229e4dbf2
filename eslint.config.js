import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Layer boundaries (docs/architecture.md): imports point down. Each entry forbids a layer from
// importing the layers above it; `browser`, `portable` and `pure` layers may not import node:
// modules either (`portable`: the library a Bun, Deno or Workers application loads).
// `testing` (sluice/testing) sits above the library it tests, and only it may import node:test
// and node:assert: a user's production import of sluice must never load a test runner. Only
// `otel` (sluice/otel) may import @opentelemetry/*.
// Folders, not files: a new store or adapter folder falls in its layer without being named here.
// The store contract, the memory store and what stores share run everywhere the main entry does;
// every other store folder talks to a server over node: modules. The fetch adapter and what
// adapters share run on Bun, Deno and Workers.
const portableStores = ['src/stores/contract/**', 'src/stores/memory/**', 'src/stores/shared/**'];
const portableAdapters = ['src/adapters/fetch/**', 'src/adapters/shared/**'];
const layers = [
  {
    name: 'core',
    files: ['src/core/**'],
    above: ['stores', 'limiter', 'keys', 'http', 'adapters', 'client', 'server', 'testing', 'otel'],
    pure: true,
  },
  {
    name: 'stores',
    files: portableStores,
    above: ['limiter', 'keys', 'http', 'adapters', 'client', 'server', 'testing', 'otel'],
    portable: true,
  },
  {
    name: 'stores',
    files: ['src/stores/**'],
    ignores: portableStores,
    above: ['limiter', 'keys', 'http', 'adapters', 'client', 'server', 'testing', 'otel'],
  },
  {
    name: 'limiter',
    files: ['src/limiter/**'],
    above: ['keys', 'http', 'adapters', 'client', 'server', 'testing', 'otel'],
    portable: true,
  },
  {
    name: 'keys',
    files: ['src/keys/**'],
    above: ['stores', 'limiter', 'http', 'adapters', 'client', 'server', 'testing', 'otel'],
    portable: true,
  },
  {
    name: 'http',
    files: ['src/http/**'],
    above: ['adapters', 'client', 'server', 'testing', 'otel'],
    portable: true,
  },
  // sluice/fetch runs on Bun, Deno and Workers: nothing of node: either.
  {
    name: 'adapters',
    files: portableAdapters,
    above: ['server', 'client', 'testing', 'otel'],
    portable: true,
  },
  {
    name: 'adapters',
    files: ['src/adapters/**'],
    ignores: portableAdapters,
    above: ['server', 'client', 'testing', 'otel'],
  },
  {
    name: 'testing',
    files: ['src/testing/**'],
    above: ['adapters', 'client', 'server', 'otel'],
    tests: true,
  },
  {
    name: 'main entry',
    files: ['src/index.ts'],
    above: ['http', 'adapters', 'client', 'server', 'testing', 'otel'],
    portable: true,
  },
  {
    name: 'client',
    files: ['src/client/**'],
    above: ['stores', 'limiter', 'keys', 'http', 'adapters', 'server', 'testing', 'otel'],
    browser: true,
  },
  // The `sluice` command: above the library, which it only reads; never the test suites.
  { name: 'server', files: ['src/server/**'], above: ['testing'] },
  // sluice/otel: decision events as metrics, beside the limiter it listens to; only it may import
  // @opentelemetry/api (an optional peer), so that no other entry needs the package installed.
  {
    name: 'otel',
    files: ['src/otel/**'],
    above: ['http', 'adapters', 'client', 'server', 'testing'],
    otel: true,
  },
];

/** Import patterns naming a layer: its folder. */
const layerPatterns = (layer) => [`**/${layer}/**`];

const layerRules = layers.map(({ name, files, ignores, above, pure, browser, portable, tests, otel }) => ({
  files,
  ...(ignores ? { ignores } : {}),
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: above.flatMap(layerPatterns),
            message: `imports point down: ${name}/ imports none of ${above.join(', ')}`,
          },
          ...(pure
            ? [
                {
                  group: ['node:*', 'fs', 'net', 'http', 'crypto'],
                  message: 'core/ is pure: no I/O, no node: modules',
                },
              ]
            : []),
          ...(browser
            ? [{ group: ['node:*'], message: 'client/ runs in browsers too: no node: modules' }]
            : []),
          ...(portable
            ? [
                {
                  group: ['node:*'],
                  message: `${name}/ runs on Bun, Deno and Workers too: Web-standard APIs, no node: modules (see src/core/hash.ts)`,
                },
              ]
            : []),
          ...(otel
            ? []
            : [
                {
                  group: ['@opentelemetry/*'],
                  message: '@opentelemetry/* is an optional peer: only src/otel/ (sluice/otel) imports it',
                },
              ]),
          ...(tests
            ? []
            : [
                {
                  group: ['node:test', 'node:assert', 'node:assert/*'],
                  message: 'node:test and node:assert are imported by src/testing/ (sluice/testing) only',
                },
              ]),
        ],
      },
    ],
  },
}));

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'api-reference/**',
      'node_modules/**',
      'bench/node_modules/**',
      'bench/results/**',
      '.tmp/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setImmediate: 'readonly',
        queueMicrotask: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        Request: 'readonly',
        Response: 'readonly',
        Headers: 'readonly',
        fetch: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  ...layerRules,
  // Sizes that keep a module readable in one sitting: no source file over 500 lines, no function
  // over 120 (blank lines and comments not counted). Tests are exempt: a suite's cases read as a
  // list. The dashboard's page is bundled separately but held to the same sizes.
  {
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 500 }],
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true }],
    },
  },
);
