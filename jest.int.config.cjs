// Integration and end-to-end tests: one real control plane (etcd + kube-apiserver +
// kube-controller-manager) started once for the whole run and shared through env.
const preset = require('./jest.preset.cjs');

module.exports = {
  ...preset,
  rootDir: __dirname,
  testMatch: ['<rootDir>/{apps,libs,e2e,bench}/**/*.int.test.ts', '<rootDir>/e2e/**/*.e2e.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  globalSetup: '<rootDir>/e2e/src/control-plane/global-setup.ts',
  globalTeardown: '<rootDir>/e2e/src/control-plane/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 120000,
};
