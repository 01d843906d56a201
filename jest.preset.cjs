// Shared jest settings: CommonJS via swc, with the ESM-only dependencies transpiled too.
const path = require('node:path');
const esmDeps = [
  'p-queue',
  'p-timeout',
  'eventemitter3',
  '@kubernetes/client-node',
  'openid-client',
  'oauth4webapi',
  'jose',
  'selfsigned',
  '@peculiar',
  'pkijs',
  'asn1js',
  'pvtsutils',
  'pvutils',
  'bytestreamjs',
];

// Test-only entry points of the libs (also in tsconfig.base.json paths and the lint rules).
const testingEntries = {
  '^@sandbox-scale/kube-runtime/testing$': path.join(__dirname, 'libs/kube-runtime/src/testing/index.ts'),
  '^@sandbox-scale/sdk/testing$': path.join(__dirname, 'libs/sandbox-sdk/src/testing/index.ts'),
};

module.exports = {
  testEnvironment: 'node',
  moduleNameMapper: testingEntries,
  transform: {
    '^.+\\.(t|j|mj|cj)s$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmDeps.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  // built packages (dist/sandbox-sdk, the suites' own builds) carry the names of the workspace's
  // packages: the sources are the modules, the builds only files the suites run
  modulePathIgnorePatterns: ['<rootDir>/dist/'],
};
