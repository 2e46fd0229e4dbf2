import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Layer boundaries (ARCHITECTURE.md): imports point down. Each entry forbids a layer
// from importing the layers above it.
const layers = [
  { files: ['src/core/**'], above: ['store', 'stores', 'keys', 'http', 'adapters', 'client', 'server'] },
  { files: ['src/store.ts', 'src/stores/**'], above: ['keys', 'http', 'adapters', 'client', 'server'] },
  { files: ['src/keys/**'], above: ['stores', 'http', 'adapters', 'client', 'server'] },
  { files: ['src/http/**'], above: ['adapters', 'client', 'server'] },
  { files: ['src/adapters/**'], above: ['server', 'client'] },
  { files: ['src/client/**'], above: ['store', 'stores', 'keys', 'http', 'adapters', 'server'] },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/node_modules/**', 'bench/results/**', '.tmp/**'] },
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
  ...layers.map(({ files, above }) => ({
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: above.flatMap((layer) => [
            {
              group: [`**/${layer}`, `**/${layer}.js`, `**/${layer}/**`],
              message: `imports point down: '${layer}' is a layer above`,
            },
          ]),
        },
      ],
    },
  })),
  {
    files: ['src/client/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/store',
                '**/store.js',
                '**/stores/**',
                '**/keys/**',
                '**/http/**',
                '**/adapters/**',
                '**/server/**',
              ],
              message: 'client/ imports only from core/',
            },
            { group: ['node:*'], message: 'client/ runs in browsers too: no node: modules' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/core/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '**/store',
                '**/store.js',
                '**/stores/**',
                '**/keys/**',
                '**/http/**',
                '**/adapters/**',
                '**/client/**',
                '**/server/**',
              ],
              message: 'core/ imports nothing from the layers above',
            },
            {
              group: ['node:*', 'fs', 'net', 'http', 'crypto'],
              message: 'core/ is pure: no I/O, no node: modules',
            },
          ],
        },
      ],
    },
  },
);
