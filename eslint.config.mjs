// Lint rules for every project. Module boundaries are enforced with no-restricted-imports:
// apps import libs (never other apps), libs never import apps, scale-core is pure (no I/O).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const appNames = ['claim-controller', 'warmpool-driver', 'inventory-publisher', 'sandbox-apiserver', 'sandboxd-sim'];
const noAppImports = appNames.flatMap((a) => [`@sandbox-scale/${a}`, `@sandbox-scale/${a}/*`]);

const restrict = (patterns, message) => ({
  'no-restricted-imports': ['error', { patterns: [{ group: patterns, message }] }],
});

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.nx/**', 'coverage/**', '**/*.cjs', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'max-params': ['warn', 5],
      'max-depth': ['warn', 4],
    },
  },
  {
    files: ['libs/**/*.ts'],
    rules: restrict([...noAppImports, '**/apps/**'], 'libs never import apps'),
  },
  {
    files: ['libs/scale-core/**/*.ts'],
    ignores: ['libs/scale-core/**/*.test.ts', 'libs/scale-core/test/**', 'libs/scale-core/scripts/**'],
    rules: restrict(
      ['@sandbox-scale/*', 'node:http', 'node:https', 'node:net', 'node:fs', 'node:child_process', 'undici', '@kubernetes/client-node', 'http', 'https', 'fs'],
      'scale-core is pure logic: it imports nothing of ours and does no I/O',
    ),
  },
  {
    files: ['apps/**/*.ts'],
    ignores: ['apps/*/test/**'],
    rules: restrict([...noAppImports, '**/apps/**', '../../*/src/**', '**/libs/*/src/**'], 'apps import libs through their public index, never other apps'),
  },
  {
    // integration tests may drive other apps as real parts (the simulated node, a publisher)
    files: ['apps/*/test/**/*.ts'],
    rules: restrict(['**/apps/**', '../../*/src/**', '**/libs/*/src/**'], 'tests import other projects through their public index'),
  },
);
