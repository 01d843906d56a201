// Lint rules for every project. Module boundaries are enforced with no-restricted-imports:
// apps import libs (never other apps), libs never import apps, scale-core is pure (no I/O), other
// projects come in through their index (never a deep path), and a lib's `/testing` entry point
// (test helpers) only into tests. A file gets one no-restricted-imports setting, so each block
// below lists every group that applies to its files.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const appNames = ['claim-controller', 'warmpool-driver', 'inventory-publisher', 'sandbox-apiserver', 'sandboxd-sim'];
const noAppImports = appNames.flatMap((a) => [`@sandbox-scale/${a}`, `@sandbox-scale/${a}/*`]);

const testFiles = ['**/*.test.ts', '**/test/**/*.ts'];
const libNames = ['scale-core', 'kube-runtime', 'sandboxd-client', 'sdk'];
const deepImports = {
  group: libNames.flatMap((l) => [`@sandbox-scale/${l}/*`, `!@sandbox-scale/${l}/testing`]),
  message: 'a lib is imported through its index (test helpers through its /testing entry point)',
};
const testingOutsideTests = {
  group: ['@sandbox-scale/*/testing'],
  message: 'a /testing entry point holds test helpers: import it from tests only',
};

const restrict = (patterns, message, extra = []) => ({
  'no-restricted-imports': ['error', { patterns: [{ group: patterns, message }, ...extra] }],
});

export default tseslint.config(
  // generated from .proto files (e2b-protocol:generate), checked by a test that generates them again
  { ignores: ['**/node_modules/**', '**/dist/**', '.nx/**', 'coverage/**', '**/*.cjs', '**/*.mjs', 'libs/*/src/gen/**'] },
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
    ignores: testFiles,
    rules: restrict([...noAppImports, '**/apps/**'], 'libs never import apps', [deepImports, testingOutsideTests]),
  },
  {
    files: testFiles.map((f) => `libs/${f}`),
    rules: restrict([...noAppImports, '**/apps/**'], 'libs never import apps', [deepImports]),
  },
  {
    files: ['libs/scale-core/**/*.ts'],
    ignores: ['libs/scale-core/**/*.test.ts', 'libs/scale-core/test/**', 'libs/scale-core/scripts/**'],
    rules: restrict(
      [
        '@sandbox-scale/*',
        '@sandbox-scale/*/*',
        'node:http',
        'node:https',
        'node:net',
        'node:fs',
        'node:child_process',
        'undici',
        '@kubernetes/client-node',
        'http',
        'https',
        'fs',
      ],
      'scale-core is pure logic: it imports nothing of ours and does no I/O',
    ),
  },
  {
    files: ['apps/**/*.ts'],
    ignores: testFiles,
    rules: restrict(
      [...noAppImports, '**/apps/**', '../../*/src/**', '**/libs/*/src/**'],
      'apps import libs through their public index, never other apps',
      [deepImports, testingOutsideTests],
    ),
  },
  {
    files: ['apps/*/src/**/*.test.ts'],
    rules: restrict(
      [...noAppImports, '**/apps/**', '../../*/src/**', '**/libs/*/src/**'],
      'apps import libs through their public index, never other apps',
      [deepImports],
    ),
  },
  {
    // integration tests may drive other apps as real parts (the simulated node, a publisher)
    files: ['apps/*/test/**/*.ts'],
    rules: restrict(['**/apps/**', '../../*/src/**', '**/libs/*/src/**'], 'tests import other projects through their public index', [
      deepImports,
    ]),
  },
);
