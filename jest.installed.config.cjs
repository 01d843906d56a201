// The chart as installed: one control plane with a real node (root; one per machine), the images
// built and the chart installed once by helm in globalSetup, then the e2e suites against it
// (SANDBOX_SCALE_E2E_TARGET=installed). One worker: the suites share the node and kill its pods.
// `npm run e2e:installed`.
const preset = require('./jest.preset.cjs');

module.exports = {
  ...preset,
  rootDir: __dirname,
  testMatch: ['<rootDir>/e2e/test/*.installed.test.ts', '<rootDir>/e2e/test/*.e2e.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  globalSetup: '<rootDir>/e2e/src/installed/global-setup.ts',
  globalTeardown: '<rootDir>/e2e/src/installed/global-teardown.ts',
  maxWorkers: 1,
  testTimeout: 900000,
};
