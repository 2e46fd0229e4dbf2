import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Layer boundaries (ARCHITECTURE.md): imports point down. Each entry forbids a layer from
// importing the layers above it; `browser` and `pure` layers may not import node: modules either.
const layers = [
  {
    name: 'core',
    files: ['src/core/**'],
    above: ['store', 'stores', 'limiter', 'keys', 'http', 'adapters', 'client', 'server'],
    pure: true,
  },
  {
    name: 'stores',
    files: ['src/store.ts', 'src/stores/**'],
    above: ['limiter', 'keys', 'http', 'adapters', 'client', 'server'],
  },
  { name: 'limiter', files: ['src/limiter/**'], above: ['keys', 'http', 'adapters', 'client', 'server'] },
  {
    name: 'keys',
    files: ['src/keys/**'],
    above: ['stores', 'limiter', 'http', 'adapters', 'client', 'server'],
  },
  { name: 'http', files: ['src/http/**'], above: ['adapters', 'client', 'server'] },
  { name: 'adapters', files: ['src/adapters/**'], above: ['server', 'client'] },
  {
    name: 'client',
    files: ['src/client/**'],
    above: ['store', 'stores', 'limiter', 'keys', 'http', 'adapters', 'server'],
    browser: true,
  },
];

/** Import patterns naming a layer: its folder, or for `store` the contract file. */
const layerPatterns = (layer) => (layer === 'store' ? ['**/store', '**/store.js'] : [`**/${layer}/**`]);

const layerRules = layers.map(({ name, files, above, pure, browser }) => ({
  files,
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
        ],
      },
    ],
  },
}));

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
  ...layerRules,
);
